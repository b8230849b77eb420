package fleet

import (
	"context"
	"testing"
)

// TestExchangeTakesARestartedPeersSummary: a peer that restarts numbers
// its periods from 1 again; its first summary after the restart is news
// at once (its Period changed), not ignored until the new count passes
// the old one.
func TestExchangeTakesARestartedPeersSummary(t *testing.T) {
	ctx := context.Background()
	st := NewMemoryStore()
	a, b := newExchange(t, "a", st), newExchange(t, "b", st)
	for range 5 {
		if _, err := b.Round(ctx, Summary{ServerConcurrencyLimit: 10}); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Round(ctx, Summary{}); err != nil {
			t.Fatal(err)
		}
	}
	restarted := newExchange(t, "b", st) // counts from 1 again
	if _, err := restarted.Round(ctx, Summary{ServerConcurrencyLimit: 20}); err != nil {
		t.Fatal(err)
	}
	peers, err := a.Round(ctx, Summary{})
	if err != nil {
		t.Fatal(err)
	}
	if len(peers) != 1 || peers[0].Period != 1 || peers[0].ServerConcurrencyLimit != 20 {
		t.Fatalf("a's peers after b restarted = %+v, want b's new summary (period 1, limit 20)", peers)
	}
}
