package slicecachecompare

import (
	"fmt"
	"testing"

	kslicecache "github.com/fairslice/fairslice/kube/slicecache"
	"github.com/fairslice/fairslice/slicecache"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	kproxy "k8s.io/kubernetes/pkg/proxy"
	"k8s.io/utils/ptr"
)

// benchService returns the slices of a Service "web" with n endpoints in
// slices of per, shaped as the EndpointSlice controller writes them, and
// two alternative versions of slice 0 that a benchmark applies in turn:
// with change "readiness" the second makes one endpoint not ready, with
// "churn" it replaces one endpoint by a new pod.
func benchService(n, per int, change string) (all []*discovery.EndpointSlice, alt [2]*discovery.EndpointSlice) {
	rv := 0
	mk := func(k int, eps []discovery.Endpoint) *discovery.EndpointSlice {
		rv++
		return &discovery.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%05d", k), Namespace: "default", ResourceVersion: fmt.Sprint(rv),
				Labels: map[string]string{discovery.LabelServiceName: "web", discovery.LabelManagedBy: "endpointslice-controller.k8s.io"}},
			AddressType: discovery.AddressTypeIPv4,
			Ports:       []discovery.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}},
			Endpoints:   eps,
		}
	}
	ep := func(i int, ready bool) discovery.Endpoint {
		return discovery.Endpoint{
			Addresses:  []string{fmt.Sprintf("10.%d.%d.%d", 1+i>>16, i>>8&255, i&255)},
			Conditions: discovery.EndpointConditions{Ready: ptr.To(ready), Serving: ptr.To(ready), Terminating: ptr.To(false)},
			NodeName:   ptr.To(fmt.Sprintf("node-%d", i%500)),
			Zone:       ptr.To(fmt.Sprintf("zone-%c", 'a'+i%3)),
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: fmt.Sprintf("web-%d", i)},
		}
	}
	for k := 0; k*per < n; k++ {
		var eps []discovery.Endpoint
		for i := k * per; i < min(n, (k+1)*per); i++ {
			eps = append(eps, ep(i, true))
		}
		all = append(all, mk(k, eps))
	}
	a := all[0].DeepCopy()
	a.ResourceVersion = fmt.Sprint(rv + 1)
	b := all[0].DeepCopy()
	b.ResourceVersion = fmt.Sprint(rv + 2)
	switch change {
	case "readiness":
		b.Endpoints[0] = ep(0, false)
	case "churn":
		b.Endpoints[0] = ep(n+1, true)
	}
	return all, [2]*discovery.EndpointSlice{a, b}
}

// BenchmarkOneChangedSlice applies one changed slice of a Service and
// checks out the change: kube-proxy's EndpointsChangeTracker and
// EndpointsMap.Update against the adapter's Consumer (conversion from the
// API object included). With read=list, each side also reads the changed
// port's full sorted endpoint list (kube-proxy's EndpointsMap holds it
// already; slicecache rebuilds it).
func BenchmarkOneChangedSlice(b *testing.B) {
	silenceKlog.Do(func() { klog.SetLogger(logr.Discard()) })
	spn := kproxy.ServicePortName{NamespacedName: types.NamespacedName{Namespace: "default", Name: "web"}, Port: "http", Protocol: corev1.ProtocolTCP}
	for _, sz := range []struct{ n, per int }{{1000, 100}, {10000, 100}, {10000, 1000}} {
		for _, change := range []string{"readiness", "churn"} {
			for _, read := range []string{"changes", "list"} {
				all, alt := benchService(sz.n, sz.per, change)
				name := fmt.Sprintf("endpoints=%d/slices=%d/change=%s/read=%s", sz.n, len(all), change, read)
				b.Run(name+"/impl=upstream", func(b *testing.B) {
					ect := kproxy.NewEndpointsChangeTracker(corev1.IPv4Protocol, "node-1", nil, nil)
					em := kproxy.EndpointsMap{}
					for _, s := range all {
						ect.EndpointSliceUpdate(s, false)
					}
					em.Update(ect)
					b.ReportAllocs()
					n := 0
					for i := 0; b.Loop(); i++ {
						if !ect.EndpointSliceUpdate(alt[i%2], false) {
							b.Fatal("no change recorded")
						}
						res := em.Update(ect)
						n += res.UpdatedServices.Len()
						if read == "list" {
							n += len(em[spn])
						}
					}
					if n == 0 {
						b.Fatal("no change checked out")
					}
				})
				b.Run(name+"/impl=fairslice", func(b *testing.B) {
					c, err := kslicecache.NewConsumer(kslicecache.Options{NodeName: "node-1"})
					if err != nil {
						b.Fatal(err)
					}
					for _, s := range all {
						c.Update(s)
					}
					c.Checkout()
					svc, port := slicecache.ServiceName{Namespace: "default", Name: "web"}, slicecache.PortName{Name: "http", Protocol: "TCP"}
					b.ReportAllocs()
					n := 0
					for i := 0; b.Loop(); i++ {
						if !c.Update(alt[i%2]) {
							b.Fatal("no change recorded")
						}
						ch := c.Checkout()
						n += len(ch[0].Ports)
						if read == "list" {
							n += len(c.Endpoints(svc, port))
						}
					}
					if n == 0 {
						b.Fatal("no change checked out")
					}
				})
			}
		}
	}
}
