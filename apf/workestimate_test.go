package apf

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fairslice/fairslice/fairqueue"
)

type fixedStats struct {
	s   ListStats
	err error
}

func (f fixedStats) ListStats(string, string) (ListStats, error) { return f.s, f.err }

type fixedWatches int

func (n fixedWatches) InterestedWatchCount(*RequestInfo) int { return int(n) }

// Cases from upstream's width_test.go (SizeBasedListCostEstimate on, the
// default; consistent reads not served from the cache).
func TestWorkEstimatorList(t *testing.T) {
	size := func(n int64) ListStats { return ListStats{ObjectCount: n, AverageObjectSizeBytes: 10_000} }
	cases := []struct {
		url      string
		stats    ListStats
		err      error
		maxSeats uint64
		want     uint64
	}{
		{"/apis/foo.bar/v1/events?limit=invalid", size(799), nil, 100, 100},
		{"/apis/foo.bar/v1/events?limit=399&resourceVersion=1", size(699), nil, 100, 40},
		{"/apis/foo.bar/v1/events?resourceVersion=1", size(699), nil, 100, 10},
		{"/apis/foo.bar/v1/events?resourceVersion=1", size(69), nil, 100, 7},
		{"/apis/foo.bar/v1/events?limit=399", size(699), nil, 100, 40},
		{"/apis/foo.bar/v1/events", size(399), nil, 100, 40},
		{"/apis/foo.bar/v1/events", ListStats{}, ErrObjectCountNotFound, 100, 1},
		{"/apis/foo.bar/v1/events?continue=token&limit=399", size(699), nil, 100, 40},
		{"/apis/foo.bar/v1/events?limit=299&resourceVersion=0", size(399), nil, 100, 10},
		{"/apis/foo.bar/v1/events?limit=20&resourceVersion=0", size(399), nil, 100, 2},
		{"/apis/foo.bar/v1/events?resourceVersion=1&resourceVersionMatch=Exact&limit=399", size(699), nil, 100, 40},
		{"/apis/foo.bar/v1/events?resourceVersion=1&resourceVersionMatch=NotOlderThan", size(79), nil, 100, 8},
		{"/apis/foo.bar/v1/events?resourceVersion=1&resourceVersionMatch=Exact", size(5000), nil, 20, 20},
		{"/apis/foo.bar/v1/events?resourceVersionMatch=foo", size(200), nil, 100, 20},
		{"/apis/foo.bar/v1/events", ListStats{ObjectCount: 1, AverageObjectSizeBytes: 1}, ErrObjectCountStale, 100, 100},
		{"/apis/foo.bar/v1/events", ListStats{ObjectCount: 1}, nil, 100, 15},
		{"/apis/foo.bar/v1/events", ListStats{}, errors.New("unknown"), 100, 100},
		{"/apis/foo.bar/v1/events?limit=1", ListStats{}, errors.New("unknown"), 100, 15},
		{"/apis/foo.bar/v1/events?labelSelector=app%3Dtest&limit=49", size(799), nil, 100, 40},
		{"/apis/foo.bar/v1/events?resourceVersion=0&labelSelector=app%3Dtest&limit=29", size(799), nil, 100, 3},
		{"/apis/foo.bar/v1/events?watch=true", size(799), nil, 100, 10},
		{"/apis/foo.bar/v1/events?watch=true&resourceVersion=1", size(799), nil, 100, 1},
		{"/apis/foo.bar/v1/events?watch=true&sendInitialEvents=true&resourceVersion=1", size(79), nil, 100, 8},
		{"/apis/foo.bar/v1/events", size(799), nil, 0, 80}, // level limit 0: the global 100
		{"/apis/foo.bar/v1/events", size(1799), nil, 0, 100},
	}
	for _, c := range cases {
		e, err := NewWorkEstimator(WorkEstimatorConfig{}, fixedStats{c.stats, c.err}, nil)
		if err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest("GET", c.url, nil)
		ri, _ := ParseRequestInfo(req)
		if got := e.Estimate(&ri, req.URL.Query(), c.maxSeats); got != (fairqueue.WorkEstimate{InitialSeats: c.want}) {
			t.Errorf("Estimate(%s, %+v, %v, max %d) = %+v, want %d initial seats", c.url, c.stats, c.err, c.maxSeats, got, c.want)
		}
	}
}

func TestWorkEstimatorCountBased(t *testing.T) {
	e, _ := NewWorkEstimator(WorkEstimatorConfig{CountBasedListCost: true}, fixedStats{s: ListStats{ObjectCount: 799}}, nil)
	for _, c := range []struct {
		url  string
		want uint64
	}{
		{"/api/v1/pods?limit=399", 8},            // 2 × limit from storage: 798/100
		{"/api/v1/pods?resourceVersion=0", 8},    // all from cache
		{"/api/v1/pods?labelSelector=a%3Db", 10}, // 799 + 799, capped at 10
		{"/api/v1/pods?fieldSelector=metadata.name%3Dx", 1},
	} {
		req := httptest.NewRequest("GET", c.url, nil)
		ri, _ := ParseRequestInfo(req)
		if got := e.Estimate(&ri, req.URL.Query(), 0); got.InitialSeats != c.want {
			t.Errorf("count-based Estimate(%s) = %d seats, want %d", c.url, got.InitialSeats, c.want)
		}
	}
}

func TestWorkEstimatorMutating(t *testing.T) {
	cases := []struct {
		method, url string
		watches     int
		maxSeats    uint64
		want        fairqueue.WorkEstimate
	}{
		{"POST", "/apis/foo.bar/v1/foos", 0, 10, fairqueue.WorkEstimate{InitialSeats: 1}},
		{"POST", "/apis/foo.bar/v1/foos", 9, 10, fairqueue.WorkEstimate{InitialSeats: 1}},
		{"POST", "/apis/foo.bar/v1/foos", 29, 10, fairqueue.WorkEstimate{InitialSeats: 1, FinalSeats: 3, AdditionalLatency: 5 * time.Millisecond}},
		{"PUT", "/apis/foo.bar/v1/foos/x", 99, 10, fairqueue.WorkEstimate{InitialSeats: 1, FinalSeats: 10, AdditionalLatency: 5 * time.Millisecond}},
		{"PATCH", "/apis/foo.bar/v1/foos/x", 199, 10, fairqueue.WorkEstimate{InitialSeats: 1, FinalSeats: 10, AdditionalLatency: 10 * time.Millisecond}},
		{"DELETE", "/apis/foo.bar/v1/foos/x", 199, 5, fairqueue.WorkEstimate{InitialSeats: 1, FinalSeats: 5, AdditionalLatency: 20 * time.Millisecond}},
		{"POST", "/api/v1/namespaces/n/serviceaccounts/sa/token", 1000, 10, fairqueue.WorkEstimate{InitialSeats: 1}},
		{"DELETE", "/api/v1/namespaces/n/pods", 1000, 10, fairqueue.WorkEstimate{InitialSeats: 1}}, // deletecollection
		{"GET", "/api/v1/namespaces/n/pods/p", 1000, 10, fairqueue.WorkEstimate{InitialSeats: 1}},
	}
	for _, c := range cases {
		e, _ := NewWorkEstimator(WorkEstimatorConfig{}, nil, fixedWatches(c.watches))
		req := httptest.NewRequest(c.method, c.url, nil)
		ri, _ := ParseRequestInfo(req)
		if got := e.Estimate(&ri, nil, c.maxSeats); got != c.want {
			t.Errorf("Estimate(%s %s, %d watches, max %d) = %+v, want %+v", c.method, c.url, c.watches, c.maxSeats, got, c.want)
		}
	}
}

func TestWorkEstimatorConfigErrors(t *testing.T) {
	_, err := NewWorkEstimator(WorkEstimatorConfig{ObjectsPerSeat: -1, EventAdditionalDuration: -time.Second, MinimumSeats: 5, MaximumListSeats: 2}, nil, nil)
	if err == nil {
		t.Fatal("NewWorkEstimator(bad config) = nil error")
	}
	for _, field := range []string{"ObjectsPerSeat=-1", "EventAdditionalDuration=-1s", "MaximumListSeats=2"} {
		if !strings.Contains(err.Error(), field) {
			t.Errorf("error %q does not name %s", err, field)
		}
	}
}

func TestWatchTracker(t *testing.T) {
	wt := NewWatchTracker()
	reg := func(url string) func() {
		req := httptest.NewRequest("GET", url, nil)
		ri, _ := ParseRequestInfo(req)
		return wt.Register(&ri, req.URL.Query())
	}
	f1 := reg("/api/v1/pods?watch=1")
	f2 := reg("/api/v1/namespaces/a/pods?watch=1")
	f3 := reg("/api/v1/namespaces/a/pods?watch=1&fieldSelector=metadata.name%3Dp")
	f4 := reg("/api/v1/pods?watch=1&fieldSelector=spec.nodeName%3Dn1") // not counted
	if reg("/api/v1/pods") != nil {
		t.Errorf("Register(list) != nil")
	}
	count := func(method, url string) int {
		ri, _ := ParseRequestInfo(httptest.NewRequest(method, url, nil))
		return wt.InterestedWatchCount(&ri)
	}
	if got := count("PUT", "/api/v1/namespaces/a/pods/p"); got != 3 {
		t.Errorf("watches interested in pod a/p = %d, want 3", got)
	}
	if got := count("PUT", "/api/v1/namespaces/b/pods/p"); got != 1 {
		t.Errorf("watches interested in pod b/p = %d, want 1", got)
	}
	if got := count("GET", "/api/v1/namespaces/a/pods/p"); got != 0 {
		t.Errorf("watches interested in a get = %d, want 0", got)
	}
	f1()
	f1() // idempotent
	f2()
	f3()
	f4()
	if len(wt.counts) != 0 {
		t.Errorf("after forgetting all watches counts = %v, want empty", wt.counts)
	}
}

// FuzzWorkEstimate: any request and query gives a valid estimate within
// the configured bounds.
func FuzzWorkEstimate(f *testing.F) {
	f.Add("GET", "/api/v1/pods?limit=5&resourceVersion=0", int64(500), int64(1000), 20, uint64(10))
	f.Add("PUT", "/apis/g/v1/namespaces/a/x/y", int64(0), int64(0), 99, uint64(0))
	f.Fuzz(func(t *testing.T, method, target string, count, size int64, watches int, maxSeats uint64) {
		req := httptest.NewRequest("GET", "/", nil)
		req.Method = method
		if u, err := req.URL.Parse(target); err == nil {
			req.URL = u
		}
		ri, _ := ParseRequestInfo(req)
		e, _ := NewWorkEstimator(WorkEstimatorConfig{}, fixedStats{s: ListStats{ObjectCount: count, AverageObjectSizeBytes: size}}, fixedWatches(watches))
		we := e.Estimate(&ri, req.URL.Query(), maxSeats)
		if err := we.Validate(); err != nil {
			t.Fatalf("Estimate(%s %s) = %+v: %v", method, target, we, err)
		}
		if we.InitialSeats > 100 || we.FinalSeats > 10 {
			t.Fatalf("Estimate(%s %s) = %+v exceeds the default maxima", method, target, we)
		}
	})
}
