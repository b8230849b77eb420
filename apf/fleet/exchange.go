package fleet

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// DefaultPeriod is how often a replica publishes and reads: upstream's
// borrowing period.
const DefaultPeriod = 10 * time.Second

// DefaultStaleAfter is how many of its own periods a replica keeps a peer
// whose summary has not advanced.
const DefaultStaleAfter = 3

// ExchangeConfig configures an Exchange.
type ExchangeConfig struct {
	// Replica is this replica's name. Required.
	Replica string
	// Store is where summaries go. Required.
	Store Store
	// StaleAfter is how many of this replica's periods a peer is kept
	// after its Period last advanced; 0 means DefaultStaleAfter.
	StaleAfter int
}

// Exchange is one replica's side of the fleet exchange: Round publishes
// its summary and returns the fresh summaries of its peers. It runs no
// goroutine and keeps no time: the caller calls Round once per period
// (DefaultPeriod), off the request path. Not safe for concurrent use.
type Exchange struct {
	self       string
	store      Store
	staleAfter uint64
	period     uint64
	peers      map[string]*peer
}

// peer is the latest summary of another replica and the local period in
// which its Period last advanced.
type peer struct {
	s    Summary
	seen uint64
}

// NewExchange returns an Exchange, or an error naming every bad field.
func NewExchange(cfg ExchangeConfig) (*Exchange, error) {
	var errs []error
	if cfg.Replica == "" {
		errs = append(errs, errors.New("fleet: ExchangeConfig.Replica is empty"))
	}
	if cfg.Store == nil {
		errs = append(errs, errors.New("fleet: ExchangeConfig.Store is nil"))
	}
	if cfg.StaleAfter < 0 {
		errs = append(errs, fmt.Errorf("fleet: ExchangeConfig.StaleAfter=%d must not be negative", cfg.StaleAfter))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.StaleAfter == 0 {
		cfg.StaleAfter = DefaultStaleAfter
	}
	return &Exchange{self: cfg.Replica, store: cfg.Store, staleAfter: uint64(cfg.StaleAfter), peers: map[string]*peer{}}, nil
}

// Round runs one period: it stamps own with this replica's name and next
// period, publishes it, reads the store, and returns the peers' summaries
// that are not stale, in replica name order. A store error is returned
// with the peers still known from earlier rounds (and not stale): the
// caller decides on them or, with none, alone, as without a fleet.
func (e *Exchange) Round(ctx context.Context, own Summary) ([]Summary, error) {
	e.period++
	own.Replica, own.Period = e.self, e.period
	if err := own.Validate(); err != nil {
		return e.fresh(), err
	}
	var errs []error
	if err := e.store.Publish(ctx, own); err != nil {
		errs = append(errs, err)
	}
	read, err := e.store.Read(ctx)
	if err != nil {
		errs = append(errs, err)
	}
	inStore := map[string]bool{}
	for _, s := range read {
		if s.Replica == e.self {
			continue
		}
		inStore[s.Replica] = true
		p := e.peers[s.Replica]
		switch {
		case p == nil:
			e.peers[s.Replica] = &peer{s: s, seen: e.period}
		case s.Period != p.s.Period:
			// A restarted peer counts from 1 again: any change is news.
			p.s, p.seen = s, e.period
		}
	}
	if err == nil {
		// A stale peer is remembered while its summary stays in the
		// store, so that the same old summary is not taken for news.
		for name, p := range e.peers {
			if !inStore[name] && e.stale(p) {
				delete(e.peers, name)
			}
		}
	}
	return e.fresh(), errors.Join(errs...)
}

// stale reports that p's Period has not advanced for staleAfter periods.
func (e *Exchange) stale(p *peer) bool { return e.period-p.seen >= e.staleAfter }

// fresh returns the peers not stale.
func (e *Exchange) fresh() []Summary {
	var out []Summary
	for _, p := range e.peers {
		if !e.stale(p) {
			out = append(out, p.s)
		}
	}
	slices.SortFunc(out, func(a, b Summary) int { return strings.Compare(a.Replica, b.Replica) })
	return out
}
