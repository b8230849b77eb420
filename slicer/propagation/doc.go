// Package propagation measures what EndpointSlices save: the bytes the API
// server writes to etcd and sends to watchers when a Service's pods change,
// for one Endpoints object per Service versus slices of 100 and of 1.
//
// # Model
//
// Simulate publishes a Service's endpoints, changes one of them, and then
// replaces every pod once (a rolling update), counting writes and sizing
// every object written. Every write is one watch event to every node (each
// node's kube-proxy watches all endpoints), so bytes sent are bytes
// written times the number of nodes. With slices, a replacement rewrites
// the one slice that held the old pod, as package slicer (and upstream's
// reconciler) plans it; the tests replay the rolling update through
// slicer.Reconciler to check this.
//
// Sizes come from a model of the two encodings rather than from
// k8s.io/api (so that the core module needs no k8s.io imports):
// EndpointSliceSize and EndpointsSize follow the generated protobuf code of
// k8s.io/api v0.37.2 plus the API server's "k8s\x00" runtime.Unknown
// envelope, and encoding/json with the API types' field tags. The
// kube/verify/compare/slicer tests check both byte for byte against the real
// marshalling on random objects, including strings that need JSON escaping.
//
// SweepSizes answers the question the comparison leaves open: which
// max-endpoints-per-slice? It plays a churn (a rolling update of Surge
// pods per sync, or random pods failing at a rate, synced once per batch
// period) with every size from 1 to 1000 and counts the writes, the bytes
// written and sent, the slice objects each watcher holds and the bytes of
// a full list. Smaller slices send less per change; larger ones mean fewer
// objects and smaller lists, and fewer writes when many pods change per
// sync.
//
// # Upstream mapping
//
// KEP-0752 (sig-network, EndpointSlices) estimated, for 20,000 endpoints
// watched by 5,000 nodes: an Endpoints object of about 2 MB, slices of 100
// of about 10 KB, a rolling update costing about 200 TB sent with one
// Endpoints object and about 1 TB with slices of 100. Simulate reproduces
// those magnitudes from objects shaped like a Deployment's (measured: 2.2
// MB, 12.8 KB, 220 TB and 1.28 TB in protobuf), and finds the pod count at
// which one Endpoints object exceeds etcd's default 1.5 MiB request limit.
//
// # Where it differs
//
// It models the Endpoints object without the 1,000-address cap the
// Endpoints controller applies since Kubernetes 1.22 (as the KEP did), the
// watch-event framing (a few dozen bytes per event) and managed fields.
package propagation
