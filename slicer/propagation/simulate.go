package propagation

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/fairslice/fairslice/slicer"
)

// EtcdDefaultMaxRequestBytes is etcd's default --max-request-bytes,
// 1.5 MiB: a write of a larger object fails.
const EtcdDefaultMaxRequestBytes = 1572864

// Config describes a Service whose pods are replaced one by one (a rolling
// update) while every node watches its endpoints.
type Config struct {
	// Pods is the number of endpoints P, 1..1,000,000.
	Pods int
	// Nodes is the number of watchers N (one kube-proxy per node),
	// 1..1,000,000.
	Nodes int
}

// Design is the outcome of one way of publishing the endpoints.
type Design struct {
	// Name is "Endpoints", "100 per slice" or "1 per slice".
	Name string
	// PerObject is the number of endpoints per object (0: all).
	PerObject int
	// ObjectSize is the size of the largest object after creation.
	ObjectSize Size
	// CreateWrites and CreateBytes are the writes and bytes written when
	// the Service's endpoints are first published.
	CreateWrites int
	CreateBytes  Size
	// UpdateBytes is the bytes written for a single endpoint change (a pod
	// turning not ready).
	UpdateBytes Size
	// RollingWrites and RollingBytes are the writes and bytes written
	// while every pod is replaced once.
	RollingWrites int
	RollingBytes  Size
}

// Report is the result of Simulate. Bytes sent to watchers are the bytes
// written times Nodes: every write is one watch event to every node.
type Report struct {
	Config  Config
	Designs []Design
	// EtcdLimitPods is the smallest number of pods for which the
	// Endpoints object exceeds EtcdDefaultMaxRequestBytes, per encoding
	// (etcd stores the protobuf form; JSON is for reference).
	EtcdLimitPods Size
}

// Sent returns bytes written times the number of watchers.
func (r Report) Sent(s Size) (protobuf, json float64) {
	n := float64(r.Config.Nodes)
	return float64(s.Protobuf) * n, float64(s.JSON) * n
}

func (c Config) validate() error {
	var errs []error
	if c.Pods < 1 || c.Pods > 1000000 {
		errs = append(errs, fmt.Errorf("propagation: Config.Pods: %d is out of range 1..1000000", c.Pods))
	}
	if c.Nodes < 1 || c.Nodes > 1000000 {
		errs = append(errs, fmt.Errorf("propagation: Config.Nodes: %d is out of range 1..1000000", c.Nodes))
	}
	return errors.Join(errs...)
}

// The objects of the simulation look like those of a Deployment "web" in
// namespace "default": generated pod names, 36-character UIDs, IPv4 pod
// IPs, node names like "node-00042" in three zones, one port.
const (
	svcName   = "web"
	namespace = "default"
)

var (
	created = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	stored  = Stored{UID: "6b1f0a3e-9c2d-4e5f-8a7b-1c2d3e4f5a6b", ResourceVersion: "12345678", Generation: 1, Created: created}
	ports   = []slicer.Port{{Name: "http", Port: 8080, Protocol: "TCP"}}
	service = slicer.Service{Namespace: namespace, Name: svcName, UID: stored.UID, Labels: map[string]string{"app": svcName}}
)

// pod returns the endpoint of the i-th pod of generation gen.
func pod(gen, i, nodes int) slicer.Endpoint {
	node := i % min(nodes, 5000)
	return slicer.Endpoint{
		Addresses:  []string{fmt.Sprintf("10.%d.%d.%d", gen*16+i>>16&15, i>>8&255, i&255)},
		NodeName:   fmt.Sprintf("node-%05d", node),
		Zone:       fmt.Sprintf("zone-%c", 'a'+node%3),
		Conditions: slicer.PodConditions(true, false, false),
		TargetRef: slicer.ObjectRef{Kind: "Pod", Namespace: namespace, Name: fmt.Sprintf("web-%d7c9f8b6d-%05x", gen, i),
			UID: fmt.Sprintf("%08x-0000-4000-8000-%012x", gen, i)},
	}
}

func address(e slicer.Endpoint) Address {
	return Address{IP: e.Addresses[0], NodeName: e.NodeName, TargetRef: e.TargetRef}
}

// slice returns the slice the controller writes holding eps.
func slice(eps []slicer.Endpoint) slicer.Slice {
	return slicer.Slice{
		Name: slicer.GenerateName(svcName) + "x7k2p", Namespace: namespace, AddressType: slicer.IPv4, Ports: ports,
		Endpoints:   eps,
		Labels:      slicer.SliceLabels(&service, slicer.DefaultControllerName),
		Annotations: map[string]string{slicer.AnnotationTriggerTime: created.Format(time.RFC3339Nano)},
		Owners:      []slicer.OwnerRef{{APIVersion: "v1", Kind: "Service", Name: svcName, UID: stored.UID, Controller: true, BlockOwnerDeletion: true}},
	}
}

func endpointsObject() EndpointsObject {
	return EndpointsObject{Name: svcName, Namespace: namespace, Labels: service.Labels,
		Annotations: map[string]string{slicer.AnnotationTriggerTime: created.Format(time.RFC3339Nano)}}
}

// Simulate publishes the endpoints of c.Pods pods, changes one, and then
// replaces every pod once, one per sync (each replacement removes the old
// endpoint and adds the new one), in three designs: one Endpoints object,
// slices of at most 100, and slices of 1. It counts the writes and sizes
// every object written with the encoding model (EndpointSliceSize,
// EndpointsSize). With slices, a replacement rewrites only the slice
// that held the old pod, filled with the new one (upstream's reconciler
// does exactly that, which the tests check against package slicer); with
// slices of 1, the delete and the create are recycled into one update.
func Simulate(c Config) (Report, error) {
	if err := c.validate(); err != nil {
		return Report{}, err
	}
	r := Report{Config: c}
	r.Designs = append(r.Designs, simulateEndpoints(c), simulateSlices(c, 100, "100 per slice"), simulateSlices(c, 1, "1 per slice"))
	r.EtcdLimitPods = etcdLimit(c.Nodes)
	return r, nil
}

// simulateEndpoints rewrites the whole object for every change; its size is
// kept as a running sum of its addresses.
func simulateEndpoints(c Config) Design {
	d := Design{Name: "Endpoints"}
	obj := endpointsObject()
	var ready elems
	cur := make([]Size, c.Pods)
	for i := range c.Pods {
		cur[i] = addressSize(address(pod(0, i, c.Nodes)))
		ready.add(cur[i])
	}
	size := func(ready, notReady elems) Size {
		var subsets elems
		subsets.add(subsetFrom(ready, notReady, ports))
		return endpointsFrom(obj, stored, subsets)
	}
	d.ObjectSize = size(ready, elems{})
	d.CreateWrites, d.CreateBytes = 1, d.ObjectSize
	// One pod not ready: it moves to notReadyAddresses.
	moved, notReady := ready, elems{}
	moved.remove(cur[0])
	notReady.add(cur[0])
	d.UpdateBytes = size(moved, notReady)
	for i := range c.Pods {
		ready.remove(cur[i])
		cur[i] = addressSize(address(pod(1, i, c.Nodes)))
		ready.add(cur[i])
		s := size(ready, elems{})
		d.RollingWrites++
		d.RollingBytes = d.RollingBytes.Add(s)
		if s.Protobuf > d.ObjectSize.Protobuf {
			d.ObjectSize = s
		}
	}
	return d
}

// simulateSlices packs the pods into slices of at most per endpoints, in
// order, as a create from nothing does, and rewrites one slice per change.
func simulateSlices(c Config, per int, name string) Design {
	d := Design{Name: name, PerObject: per}
	n := (c.Pods + per - 1) / per
	sums := make([]elems, n)
	cur := make([]Size, c.Pods)
	for i := range c.Pods {
		cur[i] = endpointSize(ptr(pod(0, i, c.Nodes)))
		sums[i/per].add(cur[i])
	}
	proto := slice(nil)
	size := func(e elems) Size { return endpointSliceFrom(proto, stored, e) }
	for _, e := range sums {
		s := size(e)
		d.CreateWrites++
		d.CreateBytes = d.CreateBytes.Add(s)
		if s.Protobuf > d.ObjectSize.Protobuf {
			d.ObjectSize = s
		}
	}
	e0 := pod(0, 0, c.Nodes)
	e0.Conditions = slicer.PodConditions(false, false, false)
	changed := sums[0]
	changed.remove(cur[0])
	changed.add(endpointSize(&e0))
	d.UpdateBytes = size(changed)
	for i := range c.Pods {
		k := i / per
		sums[k].remove(cur[i])
		cur[i] = endpointSize(ptr(pod(1, i, c.Nodes)))
		sums[k].add(cur[i])
		d.RollingWrites++
		d.RollingBytes = d.RollingBytes.Add(size(sums[k]))
	}
	return d
}

func ptr[T any](v T) *T { return &v }

// etcdLimit finds the smallest pod count whose Endpoints object exceeds
// etcd's default request limit, per encoding.
func etcdLimit(nodes int) Size {
	obj := endpointsObject()
	var ready elems
	var out Size
	for i := 0; out.Protobuf == 0 || out.JSON == 0; i++ {
		ready.add(addressSize(address(pod(0, i, nodes))))
		var subsets elems
		subsets.add(subsetFrom(ready, elems{}, ports))
		s := endpointsFrom(obj, stored, subsets)
		if out.Protobuf == 0 && s.Protobuf > EtcdDefaultMaxRequestBytes {
			out.Protobuf = i + 1
		}
		if out.JSON == 0 && s.JSON > EtcdDefaultMaxRequestBytes {
			out.JSON = i + 1
		}
	}
	return out
}

// WriteTable writes the report as a table in the style of KEP-0752's
// estimates: protobuf first, JSON in parentheses; bytes in decimal units.
func (r Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := func(label string, cell func(d Design) string) {
		fmt.Fprintf(tw, "%s\t", label)
		for _, d := range r.Designs {
			fmt.Fprintf(tw, "%s\t", cell(d))
		}
		fmt.Fprintln(tw)
	}
	both := func(s Size) string { return fmt.Sprintf("%s (%s)", human(float64(s.Protobuf)), human(float64(s.JSON))) }
	sent := func(s Size) string { p, j := r.Sent(s); return fmt.Sprintf("%s (%s)", human(p), human(j)) }
	fmt.Fprintf(w, "Rolling update of %d pods watched by %d nodes (protobuf, JSON in parentheses):\n\n", r.Config.Pods, r.Config.Nodes)
	row("", func(d Design) string { return d.Name })
	row("largest object", func(d Design) string { return both(d.ObjectSize) })
	row("create: writes", func(d Design) string { return fmt.Sprint(d.CreateWrites) })
	row("create: watch events", func(d Design) string { return count(float64(d.CreateWrites) * float64(r.Config.Nodes)) })
	row("create: bytes sent", func(d Design) string { return sent(d.CreateBytes) })
	row("one endpoint changes: bytes sent", func(d Design) string { return sent(d.UpdateBytes) })
	row("rolling update: writes", func(d Design) string { return fmt.Sprint(d.RollingWrites) })
	row("rolling update: bytes written", func(d Design) string { return both(d.RollingBytes) })
	row("rolling update: bytes sent", func(d Design) string { return sent(d.RollingBytes) })
	if err := tw.Flush(); err != nil {
		return err
	}
	ep, s100 := r.Designs[0], r.Designs[1]
	p1, _ := r.Sent(ep.RollingBytes)
	p2, _ := r.Sent(s100.RollingBytes)
	fmt.Fprintf(w, "\nRolling update, bytes sent: Endpoints / 100 per slice = %.3gx.\n", p1/p2)
	fmt.Fprintf(w, "One Endpoints object passes etcd's default 1.5 MiB request limit at %d pods (%d in JSON).\n",
		r.EtcdLimitPods.Protobuf, r.EtcdLimitPods.JSON)
	return nil
}

// human formats a byte count in decimal units, as the KEP does.
func human(b float64) string {
	units := []string{"B", "KB", "MB", "GB", "TB", "PB", "EB"}
	i := 0
	for b >= 1000 && i < len(units)-1 {
		b /= 1000
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%.0f B", b)
	}
	s := fmt.Sprintf("%.3g", b)
	if strings.Contains(s, "e") {
		s = fmt.Sprintf("%.0f", b)
	}
	return s + " " + units[i]
}

// count formats a large count with a metric suffix.
func count(n float64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.3gG", n/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.3gM", n/1e6)
	case n >= 1e4:
		return fmt.Sprintf("%.3gk", n/1e3)
	}
	return fmt.Sprint(n)
}
