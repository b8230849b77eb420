package apf

import (
	"sync"
	"time"
)

// MaxRetryAfter is the largest Retry-After, in seconds, a rejection carries.
const MaxRetryAfter = 32

// RetryAfter computes the Retry-After header of rejected requests per
// priority level, as upstream's dropped-requests tracker does: it starts
// at 1 second; when the first rejection of a new second arrives, the
// rejections of the previous Retry-After seconds are counted, and if there
// were at least 3 × Retry-After of them and Retry-After has not been raised
// within the last Retry-After seconds it doubles (up to 32), else if there
// were fewer than Retry-After it goes down by one (not below 1).
//
// Times are whole Unix seconds of the now passed in, so the type is
// deterministic. The zero value is not usable; call NewRetryAfter. Safe
// for concurrent use.
type RetryAfter struct {
	mu     sync.Mutex
	levels map[string]*droppedStats
}

type droppedStats struct {
	history     []secondCount // completed seconds, oldest first
	currentUnix int64
	current     int64
	retryAfter  int64
	raisedUnix  int64
}

type secondCount struct{ unix, n int64 }

// NewRetryAfter returns an empty tracker.
func NewRetryAfter() *RetryAfter {
	return &RetryAfter{levels: map[string]*droppedStats{}}
}

// Record notes a rejection in priority level pl at now and returns the
// Retry-After, in seconds, to send with it.
func (t *RetryAfter) Record(now time.Time, pl string) int64 {
	unix := now.Unix()
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.levels[pl]
	if s == nil {
		s = &droppedStats{retryAfter: 1}
		t.levels[pl] = s
	}
	if s.currentUnix == unix {
		s.current++
		return s.retryAfter
	}
	s.pushHistory(s.currentUnix, s.current)
	s.currentUnix, s.current = unix, 1
	s.update(unix)
	return s.retryAfter
}

// Get returns the current Retry-After of priority level pl (1 if it never
// rejected anything).
func (t *RetryAfter) Get(pl string) int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := t.levels[pl]; s != nil {
		return s.retryAfter
	}
	return 1
}

// Forget drops the state of priority level pl (upstream keeps it forever).
func (t *RetryAfter) Forget(pl string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.levels, pl)
}

func (s *droppedStats) pushHistory(unix, n int64) {
	s.history = append(s.history, secondCount{unix, n})
	keep := min(2*s.retryAfter, MaxRetryAfter)
	i := 0
	for i < len(s.history) && unix-s.history[i].unix > keep {
		i++
	}
	if i > 0 {
		// Copy down so the backing array does not grow without bound.
		s.history = append(s.history[:0], s.history[i:]...)
	}
}

func (s *droppedStats) update(unix int64) {
	var dropped int64
	for i := len(s.history) - 1; i >= 0; i-- {
		if unix-s.history[i].unix > s.retryAfter {
			break
		}
		if s.history[i].unix < unix {
			dropped += s.history[i].n
		}
	}
	if unix-s.raisedUnix >= s.retryAfter && dropped >= 3*s.retryAfter {
		s.retryAfter = min(2*s.retryAfter, MaxRetryAfter)
		s.raisedUnix = unix
		return
	}
	if dropped < s.retryAfter && s.retryAfter > 1 {
		s.retryAfter--
	}
}
