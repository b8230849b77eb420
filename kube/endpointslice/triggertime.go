package endpointslice

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// triggerTimes computes the endpoints.kubernetes.io/last-change-trigger-time
// of each sync as upstream's TriggerTimeTracker does: the earliest among
// the pods' Ready-condition transition times that moved forward since the
// previous sync of the Service (and the Service's creation time if that
// did), or the Service's creation time on its first sync; zero when
// nothing moved. Safe for concurrent use.
type triggerTimes struct {
	mu    sync.Mutex
	state map[types.NamespacedName]triggerState
}

type triggerState struct {
	service time.Time
	pods    map[string]time.Time
}

func newTriggerTimes() *triggerTimes {
	return &triggerTimes{state: map[types.NamespacedName]triggerState{}}
}

// compute returns the trigger time of this sync and remembers the pods'
// times for the next one.
func (t *triggerTimes) compute(svc *corev1.Service, pods []*corev1.Pod) time.Time {
	nn := types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}
	t.mu.Lock()
	prev, known := t.state[nn]
	t.mu.Unlock()

	var earliest time.Time
	earlier := func(x time.Time) {
		if earliest.IsZero() || x.Before(earliest) {
			earliest = x
		}
	}
	next := triggerState{service: svc.CreationTimestamp.Time, pods: make(map[string]time.Time, len(pods))}
	for _, p := range pods {
		ts := readyTransition(p)
		if ts.IsZero() {
			continue
		}
		next.pods[p.Name] = ts
		if ts.After(prev.pods[p.Name]) {
			earlier(ts)
		}
	}
	if next.service.After(prev.service) {
		earlier(next.service)
	}
	t.mu.Lock()
	t.state[nn] = next
	t.mu.Unlock()
	if !known {
		return svc.CreationTimestamp.Time
	}
	return earliest
}

func (t *triggerTimes) deleteService(nn types.NamespacedName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.state, nn)
}

// readyTransition is the last transition time of the pod's Ready condition.
func readyTransition(p *corev1.Pod) time.Time {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}
