package apf

import (
	"net/url"
	"sync"
)

// WatchTracker counts open watches by API group, resource, namespace and
// name, and answers how many of them a mutating request may have to notify,
// as upstream's watch tracker does: the watches of the request's resource
// with no namespace, plus those of its namespace, plus those of its object.
// Watches of pods restricted to one node (fieldSelector spec.nodeName=…)
// are not counted, as upstream indexes them.
//
// The middleware registers watches with it while they run when it is the
// Config's WatchTracker. Safe for concurrent use.
type WatchTracker struct {
	mu     sync.Mutex
	counts map[watchKey]int
}

type watchKey struct{ group, resource, namespace, name string }

// NewWatchTracker returns an empty tracker.
func NewWatchTracker() *WatchTracker {
	return &WatchTracker{counts: map[watchKey]int{}}
}

// Register counts a watch described by ri and its query until the returned
// function is called (once). It returns nil for a request that is not a
// watch.
func (t *WatchTracker) Register(ri *RequestInfo, query url.Values) func() {
	if ri.Verb != "watch" {
		return nil
	}
	if ri.Resource == "pods" {
		if v, ok := exactFieldMatch(query.Get("fieldSelector"), "spec.nodeName"); ok && v != "" {
			return func() {}
		}
	}
	k := watchKey{ri.APIGroup, ri.Resource, ri.Namespace, ri.Name}
	t.mu.Lock()
	t.counts[k]++
	t.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			t.mu.Lock()
			if t.counts[k]--; t.counts[k] <= 0 {
				delete(t.counts, k)
			}
			t.mu.Unlock()
		})
	}
}

// InterestedWatchCount implements WatchCounter. Read-only verbs (get,
// list, watch, proxy) are interesting to no watch.
func (t *WatchTracker) InterestedWatchCount(ri *RequestInfo) int {
	switch ri.Verb {
	case "get", "list", "watch", "proxy":
		return 0
	}
	k := watchKey{group: ri.APIGroup, resource: ri.Resource}
	t.mu.Lock()
	defer t.mu.Unlock()
	n := t.counts[k]
	if ri.Namespace != "" {
		k.namespace = ri.Namespace
		n += t.counts[k]
	}
	if ri.Name != "" {
		k.name = ri.Name
		n += t.counts[k]
	}
	return n
}
