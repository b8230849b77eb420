package slicercompare

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/fairslice/fairslice/kube/endpointslice"
	"github.com/fairslice/fairslice/slicer"
	"github.com/fairslice/fairslice/slicer/propagation"
)

// The size model in slicer/propagation must give the sizes of the real
// k8s.io/api marshalling: protobuf through the API server's serializer
// (magic and runtime.Unknown envelope) and encoding/json.

var pbSerializer = protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)

func realSizes(t *testing.T, obj runtime.Object) propagation.Size {
	t.Helper()
	var b bytes.Buffer
	if err := pbSerializer.Encode(obj, &b); err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return propagation.Size{Protobuf: b.Len(), JSON: len(js)}
}

var oddStrings = []string{"", "a", "zone-a", "<&>", "é", "\u2028", "x\ny", "\"q\"", "\xff", "日本", "a\\b", "\x01"}

func randString(rng *rand.Rand) string {
	if rng.IntN(3) == 0 {
		return oddStrings[rng.IntN(len(oddStrings))]
	}
	b := make([]byte, rng.IntN(200))
	for i := range b {
		b[i] = byte('a' + rng.IntN(26))
	}
	return string(b)
}

func randStored(rng *rand.Rand) propagation.Stored {
	st := propagation.Stored{UID: randString(rng), ResourceVersion: fmt.Sprint(rng.Uint64() >> rng.IntN(64))}
	if rng.IntN(4) > 0 {
		st.Generation = rng.Int64N(1 << rng.IntN(62))
	}
	if rng.IntN(4) > 0 {
		st.Created = time.Unix(rng.Int64N(4e9), rng.Int64N(1e9)).UTC()
	}
	return st
}

func applyStored(m *metav1.ObjectMeta, st propagation.Stored) {
	m.UID = types.UID(st.UID)
	m.ResourceVersion = st.ResourceVersion
	m.Generation = st.Generation
	if !st.Created.IsZero() {
		m.CreationTimestamp = metav1.NewTime(st.Created)
	}
}

func randMap(rng *rand.Rand) map[string]string {
	if rng.IntN(3) == 0 {
		return nil
	}
	m := map[string]string{}
	for range rng.IntN(5) {
		m[randString(rng)] = randString(rng)
	}
	return m
}

func randTristate(rng *rand.Rand) slicer.Tristate { return slicer.Tristate(rng.IntN(3)) }

func randSlice(rng *rand.Rand) slicer.Slice {
	s := slicer.Slice{
		Name: randString(rng), GenerateName: randString(rng), Namespace: randString(rng),
		AddressType: slicer.AddressType(randString(rng)), Labels: randMap(rng), Annotations: randMap(rng),
	}
	for range rng.IntN(3) {
		s.Owners = append(s.Owners, slicer.OwnerRef{APIVersion: randString(rng), Kind: randString(rng), Name: randString(rng),
			UID: randString(rng), Controller: rng.IntN(2) == 0, BlockOwnerDeletion: rng.IntN(2) == 0})
	}
	for range rng.IntN(4) {
		s.Ports = append(s.Ports, slicer.Port{Name: randString(rng), Port: rng.Int32N(70000), Protocol: randString(rng), AppProtocol: randString(rng)})
	}
	for range rng.IntN(30) {
		e := slicer.Endpoint{Hostname: randString(rng), NodeName: randString(rng), Zone: randString(rng),
			Conditions: slicer.Conditions{Ready: randTristate(rng), Serving: randTristate(rng), Terminating: randTristate(rng)}}
		for range rng.IntN(4) {
			e.Addresses = append(e.Addresses, randString(rng))
		}
		if rng.IntN(4) > 0 {
			e.TargetRef = slicer.ObjectRef{Kind: randString(rng), Namespace: randString(rng), Name: randString(rng), UID: randString(rng),
				APIVersion: randString(rng), ResourceVersion: randString(rng), FieldPath: randString(rng)}
		}
		if rng.IntN(3) == 0 {
			e.Hints = &slicer.Hints{}
			for range rng.IntN(3) {
				e.Hints.ForZones = append(e.Hints.ForZones, randString(rng))
			}
			for range rng.IntN(3) {
				e.Hints.ForNodes = append(e.Hints.ForNodes, randString(rng))
			}
		}
		s.Endpoints = append(s.Endpoints, e)
	}
	if rng.IntN(5) == 0 {
		s.Endpoints = nil
	}
	return s
}

func TestSizeModelEndpointSlice(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for i := range 2000 {
		s := randSlice(rng)
		st := randStored(rng)
		obj := endpointslice.ToEndpointSlice(s)
		applyStored(&obj.ObjectMeta, st)
		obj.TypeMeta = metav1.TypeMeta{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice"}
		want := realSizes(t, obj)
		if got := propagation.EndpointSliceSize(s, st); got != want {
			t.Fatalf("case %d: EndpointSliceSize = %+v, want %+v (the real marshalling)\nobject: %+v", i, got, want, obj)
		}
	}
}

func TestSizeModelEndpoints(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	addr := func() (propagation.Address, corev1.EndpointAddress) {
		a := propagation.Address{IP: randString(rng), Hostname: randString(rng), NodeName: randString(rng)}
		k := corev1.EndpointAddress{IP: a.IP, Hostname: a.Hostname}
		if a.NodeName != "" {
			k.NodeName = &a.NodeName
		}
		if rng.IntN(3) > 0 {
			a.TargetRef = slicer.ObjectRef{Kind: "Pod", Namespace: randString(rng), Name: randString(rng), UID: randString(rng)}
			k.TargetRef = &corev1.ObjectReference{Kind: "Pod", Namespace: a.TargetRef.Namespace, Name: a.TargetRef.Name, UID: types.UID(a.TargetRef.UID)}
		}
		return a, k
	}
	for i := range 1000 {
		e := propagation.EndpointsObject{Name: randString(rng), Namespace: randString(rng), Labels: randMap(rng), Annotations: randMap(rng)}
		st := randStored(rng)
		//lint:ignore SA1019 the deprecated Endpoints object is what EndpointSlices are measured against.
		obj := &corev1.Endpoints{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Endpoints"},
			ObjectMeta: metav1.ObjectMeta{Name: e.Name, Namespace: e.Namespace, Labels: e.Labels, Annotations: e.Annotations}}
		applyStored(&obj.ObjectMeta, st)
		for range rng.IntN(3) {
			var s propagation.Subset
			//lint:ignore SA1019 the deprecated Endpoints object is what EndpointSlices are measured against.
			var ks corev1.EndpointSubset
			for range rng.IntN(20) {
				a, k := addr()
				s.Addresses, ks.Addresses = append(s.Addresses, a), append(ks.Addresses, k)
			}
			for range rng.IntN(5) {
				a, k := addr()
				s.NotReadyAddresses, ks.NotReadyAddresses = append(s.NotReadyAddresses, a), append(ks.NotReadyAddresses, k)
			}
			for range rng.IntN(3) {
				p := slicer.Port{Name: randString(rng), Port: rng.Int32N(70000), Protocol: randString(rng)}
				kp := corev1.EndpointPort{Name: p.Name, Port: p.Port, Protocol: corev1.Protocol(p.Protocol)}
				if rng.IntN(2) == 0 {
					p.AppProtocol = randString(rng)
				}
				if p.AppProtocol != "" { // "" is unset in the model
					kp.AppProtocol = &p.AppProtocol
				}
				s.Ports, ks.Ports = append(s.Ports, p), append(ks.Ports, kp)
			}
			e.Subsets, obj.Subsets = append(e.Subsets, s), append(obj.Subsets, ks)
		}
		want := realSizes(t, obj)
		if got := propagation.EndpointsSize(e, st); got != want {
			t.Fatalf("case %d: EndpointsSize = %+v, want %+v (the real marshalling)\nobject: %+v", i, got, want, obj)
		}
	}
}
