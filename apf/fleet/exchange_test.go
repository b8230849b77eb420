package fleet

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func newExchange(t *testing.T, name string, st Store) *Exchange {
	t.Helper()
	e, err := NewExchange(ExchangeConfig{Replica: name, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func peerNames(ss []Summary) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Replica)
	}
	return out
}

// TestExchangeForgetsSilentPeers steps three replicas through periods:
// a peer whose Period stops advancing is dropped after DefaultStaleAfter
// of the reader's periods, however the replicas' periods are numbered,
// and stays dropped while its last summary stays in the store.
func TestExchangeForgetsSilentPeers(t *testing.T) {
	ctx := context.Background()
	st := NewMemoryStore()
	a, b, c := newExchange(t, "a", st), newExchange(t, "b", st), newExchange(t, "c", st)
	c.period = 1000 // c's periods are numbered far from the others'
	steps := []struct {
		run  []*Exchange
		want []string // a's peers after its round
	}{
		{[]*Exchange{b, c, a}, []string{"b", "c"}},
		{[]*Exchange{b, c, a}, []string{"b", "c"}},
		{[]*Exchange{b, a}, []string{"b", "c"}}, // c silent 1
		{[]*Exchange{b, a}, []string{"b", "c"}}, // c silent 2
		{[]*Exchange{b, a}, []string{"b"}},      // c silent 3: forgotten
		{[]*Exchange{b, a}, []string{"b"}},      // c silent 4: its summary, still in the store, is not news
		{[]*Exchange{b, a}, []string{"b"}},      // c silent 5
		{[]*Exchange{c, a}, []string{"b", "c"}}, // c is back; b silent 1
	}
	for i, s := range steps {
		var got []Summary
		for _, e := range s.run {
			peers, err := e.Round(ctx, Summary{})
			if err != nil {
				t.Fatalf("step %d: %s.Round: %v", i, e.self, err)
			}
			got = peers
		}
		if d := cmp.Diff(s.want, peerNames(got)); d != "" {
			t.Errorf("step %d: a's peers (-want +got):\n%s", i, d)
		}
	}
}

// TestExchangeKeepsPeersWhileStoreIsDown: a store error is returned with
// the peers known before, until they go stale; then none remain.
// TestExchangeLetsGoOfPeersGoneFromStore: a stale peer is remembered
// only while its summary stays in the store (so that it is not taken for
// news), and let go of once the store no longer has it, but not on a
// round whose read failed.
func TestExchangeLetsGoOfPeersGoneFromStore(t *testing.T) {
	ctx := context.Background()
	st := NewMemoryStore()
	a, b := newExchange(t, "a", st), newExchange(t, "b", st)
	for _, e := range []*Exchange{b, a} {
		if _, err := e.Round(ctx, Summary{}); err != nil {
			t.Fatal(err)
		}
	}
	for range DefaultStaleAfter { // b silent: stale, still in the store
		if _, err := a.Round(ctx, Summary{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := a.peers["b"]; !ok {
		t.Fatal("a forgot stale b while b's summary is still in the store")
	}
	st.mu.Lock()
	delete(st.summaries, "b")
	st.mu.Unlock()
	st.SetUnavailable(true)
	if _, err := a.Round(ctx, Summary{}); err == nil {
		t.Fatal("Round with the store down: nil error")
	}
	if _, ok := a.peers["b"]; !ok {
		t.Error("a let go of b on a round whose read failed")
	}
	st.SetUnavailable(false)
	if _, err := a.Round(ctx, Summary{}); err != nil {
		t.Fatal(err)
	}
	if _, ok := a.peers["b"]; ok {
		t.Error("a still remembers b after b's summary left the store")
	}
}

func TestExchangeKeepsPeersWhileStoreIsDown(t *testing.T) {
	ctx := context.Background()
	st := NewMemoryStore()
	a, b := newExchange(t, "a", st), newExchange(t, "b", st)
	if _, err := b.Round(ctx, Summary{}); err != nil {
		t.Fatal(err)
	}
	if peers, err := a.Round(ctx, Summary{}); err != nil || len(peers) != 1 {
		t.Fatalf("a.Round = %v, %v; want b", peerNames(peers), err)
	}
	st.SetUnavailable(true)
	var want []int
	var got []int
	for range 4 {
		peers, err := a.Round(ctx, Summary{})
		if !errors.Is(err, ErrUnavailable) {
			t.Fatalf("a.Round with the store down: error %v, want ErrUnavailable", err)
		}
		got = append(got, len(peers))
	}
	want = []int{1, 1, 0, 0}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("peers per round with the store down (-want +got):\n%s", d)
	}
}

func TestNewExchangeRefusesBadConfig(t *testing.T) {
	_, err := NewExchange(ExchangeConfig{StaleAfter: -1})
	for _, want := range []string{"Replica is empty", "Store is nil", "StaleAfter=-1"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("NewExchange(bad) error = %v, want it to name %q", err, want)
		}
	}
}

func TestSummaryValidate(t *testing.T) {
	s := Summary{Flows: make([]FlowDemand, MaxTopFlows+1)}
	s.Flows[0].Seats = -1
	err := s.Validate()
	for _, want := range []string{"Replica is empty", "17 flows", "Flows[0]"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() error = %v, want it to name %q", err, want)
		}
	}
}
