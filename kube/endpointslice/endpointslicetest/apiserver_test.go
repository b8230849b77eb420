package endpointslicetest_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	discovery "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/fairslice/fairslice/kube/endpointslice/endpointslicetest"
)

func newSlice(generateName string) *discovery.EndpointSlice {
	return &discovery.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "ns", GenerateName: generateName, Labels: map[string]string{"a": "1"}},
		AddressType: discovery.AddressTypeIPv4,
		Endpoints:   []discovery.Endpoint{{Addresses: []string{"10.0.0.1"}}},
	}
}

func TestActAsAPIServerNamesFromGenerateNameWithUIDAndGeneration(t *testing.T) {
	client := fake.NewClientset()
	endpointslicetest.ActAsAPIServer(client)
	api := client.DiscoveryV1().EndpointSlices("ns")
	ctx := context.Background()
	seen := map[string]bool{}
	for range 3 {
		in := newSlice("svc-")
		got, err := api.Create(ctx, in, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("Create: %v", err)
		}
		if got.Name == "" || got.UID == "" || got.Generation != 1 || got.ResourceVersion == "" || got.CreationTimestamp.IsZero() {
			t.Errorf("Create = name %q uid %q generation %d rv %q created %v, want all set, generation 1",
				got.Name, got.UID, got.Generation, got.ResourceVersion, got.CreationTimestamp)
		}
		if seen[got.Name] || seen[string(got.UID)] {
			t.Errorf("Create: name %q or UID %q given twice", got.Name, got.UID)
		}
		seen[got.Name], seen[string(got.UID)] = true, true
		if in.Name != "" || in.UID != "" {
			t.Errorf("Create changed the caller's object: name %q uid %q", in.Name, in.UID)
		}
		stored, err := api.Get(ctx, got.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("Get(%s): %v", got.Name, err)
		}
		if diff := cmp.Diff(got, stored); diff != "" {
			t.Errorf("stored object differs from the one returned (-returned +stored):\n%s", diff)
		}
	}
}

func TestActAsAPIServerBumpsGenerationOnlyWhenContentOrLabelsChange(t *testing.T) {
	client := fake.NewClientset()
	endpointslicetest.ActAsAPIServer(client)
	api := client.DiscoveryV1().EndpointSlices("ns")
	ctx := context.Background()
	cur, err := api.Create(ctx, newSlice("svc-"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	uid := cur.UID
	steps := []struct {
		name   string
		change func(*discovery.EndpointSlice)
		want   int64
	}{
		{"annotation only", func(s *discovery.EndpointSlice) { s.Annotations = map[string]string{"x": "y"} }, 1},
		{"endpoints", func(s *discovery.EndpointSlice) { s.Endpoints[0].Addresses = []string{"10.0.0.2"} }, 2},
		{"labels", func(s *discovery.EndpointSlice) { s.Labels["a"] = "2" }, 3},
		{"nothing", func(*discovery.EndpointSlice) {}, 3},
		{"generation and UID sent by the client are ignored", func(s *discovery.EndpointSlice) { s.Generation, s.UID = 99, "other" }, 3},
	}
	for _, st := range steps {
		next := cur.DeepCopy()
		st.change(next)
		got, err := api.Update(ctx, next, metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("%s: Update: %v", st.name, err)
		}
		if got.Generation != st.want || got.UID != uid || got.ResourceVersion == cur.ResourceVersion {
			t.Errorf("%s: Update = generation %d uid %q rv %q (was %q), want generation %d uid %q and a new rv",
				st.name, got.Generation, got.UID, got.ResourceVersion, cur.ResourceVersion, st.want, uid)
		}
		cur = got
	}
}

func TestActAsAPIServerRefusesUpdateFromOldCopy(t *testing.T) {
	client := fake.NewClientset()
	endpointslicetest.ActAsAPIServer(client)
	api := client.DiscoveryV1().EndpointSlices("ns")
	ctx := context.Background()
	first, err := api.Create(ctx, newSlice("svc-"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	second := first.DeepCopy()
	second.Endpoints[0].Addresses = []string{"10.0.0.2"}
	if _, err := api.Update(ctx, second, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	stale := first.DeepCopy()
	stale.Endpoints[0].Addresses = []string{"10.0.0.3"}
	if _, err := api.Update(ctx, stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("Update from an old copy = %v, want a Conflict", err)
	}
	noRV := first.DeepCopy()
	noRV.ResourceVersion = ""
	if _, err := api.Update(ctx, noRV, metav1.UpdateOptions{}); err != nil {
		t.Errorf("Update without a resource version = %v, want it accepted", err)
	}
}

func TestActAsAPIServerRefusesCreateWithoutName(t *testing.T) {
	client := fake.NewClientset()
	endpointslicetest.ActAsAPIServer(client)
	_, err := client.DiscoveryV1().EndpointSlices("ns").Create(context.Background(), newSlice(""), metav1.CreateOptions{})
	if !apierrors.IsBadRequest(err) {
		t.Errorf("Create without name or generateName = %v, want BadRequest", err)
	}
}
