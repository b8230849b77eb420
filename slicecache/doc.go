// Package slicecache is the consumer side of EndpointSlices: it merges the
// slices of each Service, as they arrive from an informer, into one
// deduplicated list of endpoints per service port, and tells what changed
// since the last look. It is kube-proxy's EndpointSliceCache and
// EndpointsChangeTracker (k8s.io/kubernetes v1.37.2, pkg/proxy) as a
// library, for ingress controllers, service meshes, DNS servers and load
// balancers that would otherwise rewrite them.
//
// # Model
//
// A Cache holds the slices of one address type (kube-proxy runs one
// tracker per IP family; a dual-stack consumer keeps two caches). A slice
// belongs to the Service named by its kubernetes.io/service-name label in
// its namespace, and is known by its name within that Service. Update and
// Delete record a slice as it arrives and report whether it differs from
// the last version given for that name (resourceVersion included, as
// kube-proxy compares whole objects); they do not change what the cache
// shows. Checkout applies everything recorded since the previous
// Checkout and returns, per Service that had such a change, what changed
// in each of its ports: endpoints added, updated and removed. Endpoints
// then shows the merged endpoints of a service port as of that Checkout.
//
// Merging follows kube-proxy:
//
//   - A service port is (Service, port name, protocol). A slice's ports
//     are matched by name and protocol, not by number: two slices may give
//     the same port name different numbers, and then the endpoints carry
//     each slice's number. Ports with number 0 are ignored.
//   - An endpoint is its first address, as an IP normalised the way
//     kube-proxy parses it (Go's parser before 1.17: leading zeros allowed
//     in IPv4 octets, read as decimal, and in IPv6 groups; printed in
//     canonical form, IPv4-mapped IPv6 as IPv4), and the port number.
//     Endpoints without addresses are ignored.
//   - Conditions read an unset Ready or Serving as true and an unset
//     Terminating as false. An endpoint is Local when its node name is the
//     cache's NodeName (never, with an empty NodeName).
//   - When the same endpoint appears more than once (an endpoint moving
//     between slices shows up in both for a moment; a reused pod IP), a
//     non-terminating copy wins over a terminating one. Within one slice,
//     the last non-terminating copy wins, or else the first terminating
//     one, as in kube-proxy.
//
// # Cost
//
// Update and Delete cost O(endpoints × ports of the slice). Checkout costs
// O(endpoints × ports of the slices that changed), whatever the size of
// the Service, and allocates only for what it returns; kube-proxy rebuilds
// the whole Service twice per checkout. A consumer that also wants a
// port's full list pays O(n) more per change of that port: Endpoints
// sorts the list once, and every later Checkout merges its changes into
// a new copy.
//
// A Cache is not safe for concurrent use; wrap it in a mutex, as the
// kube/slicecache adapter does.
//
// # Where it differs from kube-proxy
//
//   - Between copies of one endpoint in different slices, kube-proxy's
//     choice depends on Go map order when both are non-terminating (or
//     both terminating). Here the copy from the slice given most recently
//     wins, which is what kube-proxy's own comment says it would prefer.
//   - An address that does not parse as an IP is ignored (kube-proxy
//     files it under the address "<nil>"). A Cache of address type FQDN
//     keys endpoints by their address as written, lower-cased.
//   - Endpoints carry the node name, zone, hostname and target reference
//     of the winning copy as well as kube-proxy's fields.
//   - Ports with a nil name (impossible after API defaulting, which sets
//     "") are for the adapter to drop; kube-proxy ignores them.
package slicecache
