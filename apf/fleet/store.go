package fleet

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
)

// Store is where the replicas of a fleet exchange their summaries: each
// writes its own and reads all. Implementations: MemoryStore here, the
// Lease store in kube/. Both methods may block on the network; the
// Exchange calls them off the request path.
type Store interface {
	// Publish replaces the caller's summary (s.Replica's).
	Publish(ctx context.Context, s Summary) error
	// Read returns every replica's latest summary, the caller's included,
	// in any order.
	Read(ctx context.Context) ([]Summary, error)
}

// ErrUnavailable is what MemoryStore returns while set unavailable.
var ErrUnavailable = errors.New("fleet: store unavailable")

// MemoryStore is a Store in memory, for tests and simulation. It can be
// made unavailable to test a fleet's fallback. Safe for concurrent use.
type MemoryStore struct {
	mu        sync.Mutex
	summaries map[string]Summary
	down      bool
}

// NewMemoryStore returns an empty, available store.
func NewMemoryStore() *MemoryStore { return &MemoryStore{summaries: map[string]Summary{}} }

// SetUnavailable makes every call fail with ErrUnavailable (true) or
// succeed again (false).
func (m *MemoryStore) SetUnavailable(down bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.down = down
}

// Publish implements Store. It keeps a copy of s.
func (m *MemoryStore) Publish(_ context.Context, s Summary) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return ErrUnavailable
	}
	s.Levels, s.Flows = slices.Clone(s.Levels), slices.Clone(s.Flows)
	m.summaries[s.Replica] = s
	return nil
}

// Read implements Store: the summaries in replica name order, copied.
func (m *MemoryStore) Read(context.Context) ([]Summary, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return nil, ErrUnavailable
	}
	out := make([]Summary, 0, len(m.summaries))
	for _, s := range m.summaries {
		s.Levels, s.Flows = slices.Clone(s.Levels), slices.Clone(s.Flows)
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b Summary) int { return strings.Compare(a.Replica, b.Replica) })
	return out, nil
}
