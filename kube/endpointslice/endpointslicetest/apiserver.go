// Package endpointslicetest helps test code that writes EndpointSlices
// through a client-go fake clientset (k8s.io/client-go/kubernetes/fake).
//
// The fake's object tracker stores what it is given: it does not turn
// metadata.generateName into a name, gives objects no UID, no generation
// and no resource version, and never refuses an update made from an old
// copy. Code that relies on what the API server sets (the
// stale-informer guard of package endpointslice tells its own writes
// apart by UID and generation) then misbehaves against the fake in ways
// it never would against a cluster. ActAsAPIServer fills the gap for
// EndpointSlices.
package endpointslicetest

import (
	"fmt"
	"strconv"
	"sync"

	discovery "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

var resource = discovery.SchemeGroupVersion.WithResource("endpointslices")

// ActAsAPIServer makes client treat EndpointSlice creates and updates as
// the API server does:
//
//   - a create with metadata.generateName and no name gets a name made
//     of the prefix and a five-digit suffix unique on client;
//   - every created slice gets a UID unique on client, generation 1, a
//     creation timestamp and a resource version;
//   - an update keeps the stored UID and creation timestamp, bumps the
//     generation only when something other than the metadata changed (or
//     the labels did), as the API server's EndpointSlice strategy does,
//     and gets a new resource version;
//   - an update carrying a resource version other than the stored one
//     fails with a Conflict, as the API server's optimistic concurrency
//     does (one carrying none is accepted).
//
// The caller's object is never modified: the stored copy is. Deletes,
// gets, lists and watches are the fake's own. Reactors added with
// PrependReactor after this call run before it (to inject failures, say).
// Call it once per clientset, before the first write.
func ActAsAPIServer(client *fake.Clientset) {
	s := &server{client: client}
	client.PrependReactor("create", "endpointslices", s.create)
	client.PrependReactor("update", "endpointslices", s.update)
}

// server is the state of one clientset's ActAsAPIServer.
type server struct {
	client *fake.Clientset
	mu     sync.Mutex
	serial int64 // names, UIDs and resource versions
}

func (s *server) next() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.serial++
	return s.serial
}

func (s *server) create(a k8stesting.Action) (bool, runtime.Object, error) {
	in, ok := a.(k8stesting.CreateAction).GetObject().(*discovery.EndpointSlice)
	if !ok {
		return false, nil, nil
	}
	obj := in.DeepCopy()
	if obj.Namespace == "" {
		obj.Namespace = a.GetNamespace()
	}
	n := s.next()
	if obj.Name == "" && obj.GenerateName != "" {
		obj.Name = fmt.Sprintf("%s%05d", obj.GenerateName, n)
	}
	if obj.Name == "" {
		return true, nil, apierrors.NewBadRequest("endpointslicetest: metadata.name or metadata.generateName is required")
	}
	obj.UID = types.UID(fmt.Sprintf("endpointslicetest-uid-%d", n))
	obj.Generation = 1
	obj.ResourceVersion = strconv.FormatInt(n, 10)
	obj.CreationTimestamp = metav1.Now()
	if err := s.client.Tracker().Create(resource, obj, obj.Namespace); err != nil {
		return true, nil, err
	}
	return true, obj.DeepCopy(), nil
}

func (s *server) update(a k8stesting.Action) (bool, runtime.Object, error) {
	in, ok := a.(k8stesting.UpdateAction).GetObject().(*discovery.EndpointSlice)
	if !ok {
		return false, nil, nil
	}
	obj := in.DeepCopy()
	if obj.Namespace == "" {
		obj.Namespace = a.GetNamespace()
	}
	stored, err := s.client.Tracker().Get(resource, obj.Namespace, obj.Name)
	if err != nil {
		return true, nil, err
	}
	old := stored.(*discovery.EndpointSlice)
	if obj.ResourceVersion != "" && old.ResourceVersion != "" && obj.ResourceVersion != old.ResourceVersion {
		return true, nil, apierrors.NewConflict(resource.GroupResource(), obj.Name,
			fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again (resourceVersion %s, stored %s)",
				obj.ResourceVersion, old.ResourceVersion))
	}
	obj.UID, obj.CreationTimestamp, obj.Generation = old.UID, old.CreationTimestamp, old.Generation
	if contentChanged(old, obj) {
		obj.Generation++
	}
	obj.ResourceVersion = strconv.FormatInt(s.next(), 10)
	if err := s.client.Tracker().Update(resource, obj, obj.Namespace); err != nil {
		return true, nil, err
	}
	return true, obj.DeepCopy(), nil
}

// contentChanged reports whether an update changes more than metadata,
// or changes the labels: what bumps an EndpointSlice's generation.
func contentChanged(old, updated *discovery.EndpointSlice) bool {
	a, b := *old, *updated
	a.ObjectMeta, b.ObjectMeta = metav1.ObjectMeta{}, metav1.ObjectMeta{}
	return !equality.Semantic.DeepEqual(a, b) || !equality.Semantic.DeepEqual(old.Labels, updated.Labels)
}
