package endpointslice

import (
	"errors"
	"sync"

	discovery "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
)

// expectDeleted marks a slice the controller deleted and whose deletion
// the informer has not shown yet.
const expectDeleted int64 = -1

// sliceTracker remembers, per Service, the generation of every
// EndpointSlice the controller last wrote (or expectDeleted), so that a
// sync can tell that the informer has not yet caught up with the
// controller's own writes: planning from such a view would create
// duplicates or undo a write. It is upstream's EndpointSliceTracker
// (k8s.io/endpointslice/util) with the same rules. Safe for concurrent use.
type sliceTracker struct {
	mu   sync.Mutex
	byNN map[types.NamespacedName]map[types.UID]int64
}

func newSliceTracker() *sliceTracker {
	return &sliceTracker{byNN: map[types.NamespacedName]map[types.UID]int64{}}
}

// serviceOf is the Service a slice belongs to, by its service-name label.
func serviceOf(s *discovery.EndpointSlice) types.NamespacedName {
	return types.NamespacedName{Namespace: s.Namespace, Name: s.Labels[discovery.LabelServiceName]}
}

// has reports whether s is tracked.
func (t *sliceTracker) has(s *discovery.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.byNN[serviceOf(s)][s.UID]
	return ok
}

// shouldSync reports whether an informer event about s is news: a slice
// not tracked, or of a newer generation than the controller wrote.
func (t *sliceTracker) shouldSync(s *discovery.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	g, ok := t.byNN[serviceOf(s)][s.UID]
	return !ok || s.Generation > g
}

// stale reports whether the informer's slices of the Service lag behind
// the controller's writes: one it deleted is still listed, one is older
// than the generation it wrote, or one it wrote is missing.
func (t *sliceTracker) stale(nn types.NamespacedName, listed []*discovery.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	gens, ok := t.byNN[nn]
	if !ok {
		return false
	}
	seen := make(map[types.UID]struct{}, len(listed))
	for _, s := range listed {
		seen[s.UID] = struct{}{}
		if g, ok := gens[s.UID]; ok && (g == expectDeleted || g > s.Generation) {
			return true
		}
	}
	for uid, g := range gens {
		if _, ok := seen[uid]; !ok && g != expectDeleted {
			return true
		}
	}
	return false
}

// update records a slice as the API server returned it after a write.
func (t *sliceTracker) update(s *discovery.EndpointSlice) { t.set(s, s.Generation) }

// expectDeletion records a slice the controller deleted.
func (t *sliceTracker) expectDeletion(s *discovery.EndpointSlice) { t.set(s, expectDeleted) }

func (t *sliceTracker) set(s *discovery.EndpointSlice, g int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	nn := serviceOf(s)
	gens := t.byNN[nn]
	if gens == nil {
		gens = map[types.UID]int64{}
		t.byNN[nn] = gens
	}
	gens[s.UID] = g
}

// handleDeletion forgets a deleted slice and reports whether the
// controller expected the deletion (false: someone else deleted it, and
// the Service needs a sync).
func (t *sliceTracker) handleDeletion(s *discovery.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	gens, ok := t.byNN[serviceOf(s)]
	if !ok {
		return true
	}
	g, ok := gens[s.UID]
	delete(gens, s.UID)
	return !ok || g == expectDeleted
}

// deleteService forgets a Service.
func (t *sliceTracker) deleteService(nn types.NamespacedName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.byNN, nn)
}

// ErrStaleInformer is returned (wrapped) by a sync that found the
// EndpointSlice informer behind the controller's own writes; the Service
// is requeued with backoff, as upstream does, and the sync is counted
// with result "stale".
var ErrStaleInformer = errors.New("endpointslice: EndpointSlice informer cache is out of date")
