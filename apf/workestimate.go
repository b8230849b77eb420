package apf

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"time"

	"github.com/fairslice/fairslice/fairqueue"
)

// ListStats is what the caller knows about the objects a list request
// reads: how many there are of the resource and their average size.
type ListStats struct {
	ObjectCount            int64
	AverageObjectSizeBytes int64
}

// The errors an ObjectCounter returns when it has no usable count.
var (
	// ErrObjectCountNotFound: the resource is unknown; the list costs the
	// minimum seats.
	ErrObjectCountNotFound = errors.New("apf: object count not found")
	// ErrObjectCountStale: the count is too old to trust; the list is
	// estimated as reading a billion objects of 1.5 MB (the maximum seats).
	ErrObjectCountStale = errors.New("apf: object count is stale")
)

// ObjectCounter supplies object counts for list work estimation; the
// caller implements it (upstream reads them from its storage layer).
// ListStats is called for every list (and, with WatchList, watch) request
// and must be fast and safe for concurrent use. Any error other than the
// two above is treated like ErrObjectCountStale.
type ObjectCounter interface {
	ListStats(apiGroup, resource string) (ListStats, error)
}

// WatchCounter supplies the number of watches interested in a mutating
// request (a WatchTracker is one).
type WatchCounter interface {
	InterestedWatchCount(ri *RequestInfo) int
}

// WorkEstimatorConfig tunes the work estimator. The zero value of each
// field means upstream's default.
type WorkEstimatorConfig struct {
	// MinimumSeats of every request: 1.
	MinimumSeats uint64
	// MaximumListSeats caps list estimates: 100 (upstream's with the
	// SizeBasedListCostEstimate feature, on by default since 1.34; 10
	// without it).
	MaximumListSeats uint64
	// MaximumMutatingSeats caps the final seats of mutating requests: 10.
	MaximumMutatingSeats uint64
	// ObjectsPerSeat of a count-based list estimate: 100.
	ObjectsPerSeat float64
	// WatchesPerSeat of a mutating request's final phase: 10.
	WatchesPerSeat float64
	// EventAdditionalDuration is the final phase per watch-seat: 5 ms.
	EventAdditionalDuration time.Duration

	// CountBasedListCost estimates lists by object count
	// (SizeBasedListCostEstimate off) instead of by bytes loaded.
	CountBasedListCost bool
	// WatchAsGet estimates watches at the minimum seats (WatchList off)
	// instead of as lists.
	WatchAsGet bool
	// DisableMutatingEstimator gives mutating requests the minimum seats
	// and no final phase.
	DisableMutatingEstimator bool
	// ConsistentReadsFromCache says the cache serves consistent lists
	// (upstream asks etcd whether it supports watch progress
	// notifications; without etcd it does not).
	ConsistentReadsFromCache bool
}

func (c *WorkEstimatorConfig) withDefaults() WorkEstimatorConfig {
	d := *c
	if d.MinimumSeats == 0 {
		d.MinimumSeats = 1
	}
	if d.MaximumListSeats == 0 {
		d.MaximumListSeats = 100
		if d.CountBasedListCost {
			d.MaximumListSeats = 10
		}
	}
	if d.MaximumMutatingSeats == 0 {
		d.MaximumMutatingSeats = 10
	}
	if d.ObjectsPerSeat == 0 {
		d.ObjectsPerSeat = 100
	}
	if d.WatchesPerSeat == 0 {
		d.WatchesPerSeat = 10
	}
	if d.EventAdditionalDuration == 0 {
		d.EventAdditionalDuration = 5 * time.Millisecond
	}
	return d
}

func (c *WorkEstimatorConfig) validate() error {
	var errs []error
	if c.ObjectsPerSeat < 0 || math.IsNaN(c.ObjectsPerSeat) {
		errs = append(errs, fmt.Errorf("apf: WorkEstimatorConfig.ObjectsPerSeat=%v must be positive", c.ObjectsPerSeat))
	}
	if c.WatchesPerSeat < 0 || math.IsNaN(c.WatchesPerSeat) {
		errs = append(errs, fmt.Errorf("apf: WorkEstimatorConfig.WatchesPerSeat=%v must be positive", c.WatchesPerSeat))
	}
	if c.EventAdditionalDuration < 0 {
		errs = append(errs, fmt.Errorf("apf: WorkEstimatorConfig.EventAdditionalDuration=%v must not be negative", c.EventAdditionalDuration))
	}
	if c.MaximumListSeats != 0 && c.MaximumListSeats < c.MinimumSeats {
		errs = append(errs, fmt.Errorf("apf: WorkEstimatorConfig.MaximumListSeats=%d is below MinimumSeats=%d", c.MaximumListSeats, c.MinimumSeats))
	}
	if c.MaximumMutatingSeats != 0 && c.MaximumMutatingSeats < c.MinimumSeats {
		errs = append(errs, fmt.Errorf("apf: WorkEstimatorConfig.MaximumMutatingSeats=%d is below MinimumSeats=%d", c.MaximumMutatingSeats, c.MinimumSeats))
	}
	return errors.Join(errs...)
}

// WorkEstimator computes the seats of a request as upstream's work
// estimator does:
//   - list (and watch, unless WatchAsGet): from the ObjectCounter's stats
//     and the list options in the query, between the minimum seats and
//     the level's maximum (see Estimate);
//   - create, update, patch, delete: 1 seat, plus, when W ≥ WatchesPerSeat
//     watches are interested (WatchCounter), ceil(W/WatchesPerSeat) final
//     seats (capped at the level's maximum) held for the time that keeps
//     ceil(W/WatchesPerSeat) × EventAdditionalDuration of seat-time;
//     serviceaccounts/token requests get no final phase;
//   - everything else: the minimum seats.
//
// A nil ObjectCounter makes every list cost the minimum seats (as an
// unknown resource does upstream); a nil WatchCounter counts no watches.
// Safe for concurrent use if the counters are.
type WorkEstimator struct {
	cfg     WorkEstimatorConfig
	objects ObjectCounter
	watches WatchCounter
}

// NewWorkEstimator returns an estimator; cfg's zero fields take upstream's
// defaults.
func NewWorkEstimator(cfg WorkEstimatorConfig, objects ObjectCounter, watches WatchCounter) (*WorkEstimator, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &WorkEstimator{cfg: cfg.withDefaults(), objects: objects, watches: watches}, nil
}

// Estimate returns the work of the request described by ri and its query
// (the URL's query values; nil if there are none), for a priority level
// whose maximum seats per request is levelMaxSeats (0 for no level limit,
// as for exempt and reject-type levels).
func (e *WorkEstimator) Estimate(ri *RequestInfo, query url.Values, levelMaxSeats uint64) fairqueue.WorkEstimate {
	switch ri.Verb {
	case "list":
		return e.estimateList(ri, query, levelMaxSeats)
	case "watch":
		if !e.cfg.WatchAsGet {
			return e.estimateList(ri, query, levelMaxSeats)
		}
	case "create", "update", "patch", "delete":
		we, _, _ := e.estimateMutating(ri, levelMaxSeats)
		return we
	}
	return fairqueue.WorkEstimate{InitialSeats: e.cfg.MinimumSeats}
}

// EstimateWatchCount is Estimate that also returns the number of watches
// the estimate of a mutating request counted, and whether it counted any
// (false for other verbs, with the mutating estimator disabled, for
// serviceaccounts/token, and without a WatchCounter): upstream's
// watch_count_samples, reported through Controller.ObserveWatchCount.
func (e *WorkEstimator) EstimateWatchCount(ri *RequestInfo, query url.Values, levelMaxSeats uint64) (we fairqueue.WorkEstimate, watches int, counted bool) {
	switch ri.Verb {
	case "create", "update", "patch", "delete":
		return e.estimateMutating(ri, levelMaxSeats)
	}
	return e.Estimate(ri, query, levelMaxSeats), 0, false
}

func capSeats(levelMax, limit uint64) uint64 {
	if levelMax == 0 || levelMax > limit {
		return limit
	}
	return levelMax
}

// listOptions are the parts of metav1.ListOptions the list estimator reads.
type listOptions struct {
	limit                int64
	resourceVersion      string
	resourceVersionMatch string
	continueToken        string
	sendInitialEvents    bool
	fieldSelector        string
	labelSelector        string
}

func parseListOptions(q url.Values) (listOptions, error) {
	var o listOptions
	if v := q["limit"]; len(v) > 0 && v[0] != "" {
		n, err := strconv.ParseInt(v[0], 10, 64)
		if err != nil {
			return o, err
		}
		o.limit = n
	}
	if v := q["timeoutSeconds"]; len(v) > 0 && v[0] != "" {
		if _, err := strconv.ParseInt(v[0], 10, 64); err != nil {
			return o, err
		}
	}
	o.resourceVersion = q.Get("resourceVersion")
	o.resourceVersionMatch = q.Get("resourceVersionMatch")
	o.continueToken = q.Get("continue")
	o.sendInitialEvents = watchParam(q["sendInitialEvents"])
	o.fieldSelector = q.Get("fieldSelector")
	o.labelSelector = q.Get("labelSelector")
	return o, nil
}

// fromStorage reports whether a list is served by the storage rather than
// the watch cache (upstream's ShouldDelegateListMeta with a cache that has
// no snapshots).
func (e *WorkEstimator) fromStorage(o *listOptions) bool {
	switch o.resourceVersionMatch {
	case "Exact":
		return true
	case "NotOlderThan":
		return false
	case "":
		if o.continueToken != "" {
			return true
		}
		if o.limit > 0 && o.resourceVersion != "" && o.resourceVersion != "0" {
			return true
		}
		if o.resourceVersion == "" {
			return !e.cfg.ConsistentReadsFromCache
		}
		return false
	default:
		return true
	}
}

const (
	bytesPerSeat          = 100_000
	maxCacheMemoryPerList = 1_000_000
	maxObjectSize         = 1_500_000
	infiniteObjectCount   = 1_000_000_000
)

func (e *WorkEstimator) estimateList(ri *RequestInfo, query url.Values, levelMax uint64) fairqueue.WorkEstimate {
	minSeats := e.cfg.MinimumSeats
	maxSeats := capSeats(levelMax, e.cfg.MaximumListSeats)
	o, err := parseListOptions(query)
	if err != nil {
		return fairqueue.WorkEstimate{InitialSeats: maxSeats}
	}
	if ri.Verb == "watch" {
		legacy := o.resourceVersion == "" || o.resourceVersion == "0"
		if !o.sendInitialEvents && !legacy {
			return fairqueue.WorkEstimate{InitialSeats: minSeats}
		}
	}
	fromCache := ri.Verb == "watch" || !e.fromStorage(&o)
	if e.objects == nil {
		return fairqueue.WorkEstimate{InitialSeats: minSeats}
	}
	stats, err := e.objects.ListStats(ri.APIGroup, ri.Resource)
	switch {
	case errors.Is(err, ErrObjectCountNotFound):
		return fairqueue.WorkEstimate{InitialSeats: minSeats}
	case err != nil:
		stats = ListStats{ObjectCount: infiniteObjectCount, AverageObjectSizeBytes: maxObjectSize}
	}
	single := ri.Name != ""
	var seats uint64
	if e.cfg.CountBasedListCost {
		seats = e.seatsByCount(stats, &o, fromCache, single)
	} else {
		seats = seatsBySize(stats, &o, fromCache, single)
	}
	return fairqueue.WorkEstimate{InitialSeats: min(max(seats, minSeats), maxSeats)}
}

func (e *WorkEstimator) seatsByCount(s ListStats, o *listOptions, fromCache, single bool) uint64 {
	limit := s.ObjectCount
	if o.limit > 0 && o.limit < limit {
		limit = o.limit
	}
	var n int64
	switch {
	case single:
		n = 1
	case fromCache:
		n = s.ObjectCount
	case o.fieldSelector != "" || o.labelSelector != "":
		n = s.ObjectCount + limit
	default:
		n = 2 * limit
	}
	return uint64(math.Ceil(float64(n) / e.cfg.ObjectsPerSeat))
}

func seatsBySize(s ListStats, o *listOptions, fromCache, single bool) uint64 {
	if s.AverageObjectSizeBytes <= 0 && s.ObjectCount != 0 {
		s.AverageObjectSizeBytes = maxObjectSize
	}
	limited := s.ObjectCount
	if o.limit > 0 && o.limit < limited {
		limited = o.limit
	}
	var n int64
	switch {
	case single:
		n = 1
	case fromCache:
		n = limited
	case o.fieldSelector != "" || o.labelSelector != "":
		n = max(limited, s.ObjectCount/2)
	default:
		n = limited
	}
	bytes := n * s.AverageObjectSizeBytes
	if fromCache {
		bytes = min(bytes, maxCacheMemoryPerList)
	}
	return uint64(math.Ceil(float64(bytes) / bytesPerSeat))
}

func (e *WorkEstimator) estimateMutating(ri *RequestInfo, levelMax uint64) (fairqueue.WorkEstimate, int, bool) {
	minSeats := e.cfg.MinimumSeats
	if e.cfg.DisableMutatingEstimator {
		return fairqueue.WorkEstimate{InitialSeats: minSeats}, 0, false
	}
	if ri.Resource == "serviceaccounts" && ri.Subresource == "token" {
		return fairqueue.WorkEstimate{InitialSeats: minSeats}, 0, false
	}
	if e.watches == nil {
		return fairqueue.WorkEstimate{InitialSeats: 1}, 0, false
	}
	maxSeats := capSeats(levelMax, e.cfg.MaximumMutatingSeats)
	w := e.watches.InterestedWatchCount(ri)
	we := fairqueue.WorkEstimate{InitialSeats: 1}
	if w >= int(e.cfg.WatchesPerSeat) {
		final := uint64(math.Ceil(float64(w) / e.cfg.WatchesPerSeat))
		work := fairqueue.SeatsTimesDuration(float64(final), e.cfg.EventAdditionalDuration)
		final = min(final, maxSeats)
		we.FinalSeats = final
		we.AdditionalLatency = work.DurationPerSeat(float64(final))
	}
	return we, w, true
}
