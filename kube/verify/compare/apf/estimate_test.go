package apfcompare

import (
	"errors"
	"math/rand/v2"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/sets"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/storage"
	fcrequest "k8s.io/apiserver/pkg/util/flowcontrol/request"
	"k8s.io/klog/v2"

	"github.com/fairslice/fairslice/apf"
	"github.com/fairslice/fairslice/fairqueue"
)

// randomTarget returns a random method and Kubernetes-ish URL: API paths
// with and without groups, namespaces, names, subresources, watch and
// proxy prefixes, list options; and some non-API paths.
func randomTarget(r *rand.Rand) (string, string) {
	pick := func(l ...string) string { return l[r.IntN(len(l))] }
	method := pick("GET", "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")
	var p string
	switch r.IntN(10) {
	case 0:
		p = pick("/", "/healthz", "/api", "/api/v1", "/apis/apps", "/apis/apps/v1", "/version", "/debug/pprof/heap")
	default:
		p = pick("/api/v1", "/apis/apps/v1", "/apis/coordination.k8s.io/v1", "/apis/x/v1beta1")
		p += pick("", "", "/watch", "/proxy")
		if r.IntN(2) == 0 {
			p += "/namespaces/" + pick("a", "kube-system")
			p += pick("", "/status", "/finalize")
		}
		p += "/" + pick("pods", "nodes", "leases", "serviceaccounts", "events")
		if r.IntN(2) == 0 {
			p += "/" + pick("x", "y")
			p += pick("", "", "/status", "/log", "/exec", "/token", "/proxy/sub/path")
		}
	}
	q := url.Values{}
	for _, k := range []string{"watch", "limit", "resourceVersion", "resourceVersionMatch", "continue", "sendInitialEvents", "fieldSelector", "labelSelector"} {
		if r.IntN(4) != 0 {
			continue
		}
		switch k {
		case "watch", "sendInitialEvents":
			q.Set(k, pick("true", "false", "1", "0", ""))
		case "limit":
			q.Set(k, pick("1", "20", "499", "100000", "-1", "x"))
		case "resourceVersion":
			q.Set(k, pick("", "0", "1", "123"))
		case "resourceVersionMatch":
			q.Set(k, pick("", "Exact", "NotOlderThan", "bogus"))
		case "continue":
			q.Set(k, "tok")
		case "fieldSelector":
			q.Set(k, pick("metadata.name=x", "metadata.name==y,spec.nodeName=n", "spec.nodeName=n", "a=b"))
		case "labelSelector":
			q.Set(k, "app=x")
		}
	}
	if len(q) > 0 {
		p += "?" + q.Encode()
	}
	return method, p
}

var upstreamResolver = &genericrequest.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")}

// TestRequestInfoDifferential parses random requests with
// apf.ParseRequestInfo and with upstream's RequestInfoFactory (as
// kube-apiserver configures it) and requires the same attributes and the
// same success or failure.
func TestRequestInfoDifferential(t *testing.T) {
	r := seeded(t)
	for range 20_000 {
		method, target := randomTarget(r)
		req := httptest.NewRequest(method, target, nil)
		up, upErr := upstreamResolver.NewRequestInfo(req)
		ours, err := apf.ParseRequestInfo(req)
		if (upErr != nil) != (err != nil) {
			t.Fatalf("%s %s: upstream error %v, ours %v", method, target, upErr, err)
		}
		want := apf.RequestInfo{IsResourceRequest: up.IsResourceRequest, Path: up.Path, Verb: up.Verb, APIPrefix: up.APIPrefix,
			APIGroup: up.APIGroup, APIVersion: up.APIVersion, Namespace: up.Namespace, Resource: up.Resource,
			Subresource: up.Subresource, Name: up.Name, FieldSelector: up.FieldSelector, LabelSelector: up.LabelSelector}
		if diff := cmp.Diff(want, ours); diff != "" {
			t.Fatalf("%s %s (-upstream +fairslice):\n%s", method, target, diff)
		}
	}
}

type fixedStats struct {
	s   apf.ListStats
	err error
}

func (f fixedStats) ListStats(string, string) (apf.ListStats, error) { return f.s, f.err }

type fixedWatches int

func (n fixedWatches) InterestedWatchCount(*apf.RequestInfo) int { return int(n) }

// TestWorkEstimatorDifferential estimates random requests with random
// object counts, sizes, count errors, watch counts and level maximum seats
// through apf.WorkEstimator and upstream's work estimator (default
// configuration and feature gates: size-based list cost and WatchList on;
// consistent reads not served from the cache, as without etcd) and
// requires the same estimate.
func TestWorkEstimatorDifferential(t *testing.T) {
	silence.Do(func() { klog.SetLogger(logr.Discard()) })
	r := seeded(t)
	var lists, finals int
	errs := []struct{ up, ours error }{{nil, nil}, {fcrequest.ObjectCountNotFoundErr, apf.ErrObjectCountNotFound},
		{fcrequest.ObjectCountStaleErr, apf.ErrObjectCountStale}, {errors.New("boom"), errors.New("boom")}}
	for i := range 20_000 {
		method, target := randomTarget(r)
		req := httptest.NewRequest(method, target, nil)
		up, upErr := upstreamResolver.NewRequestInfo(req)
		if upErr != nil {
			continue
		}
		ri, _ := apf.ParseRequestInfo(req)
		count := []int64{0, 1, 69, 399, 799, 5000, 1_000_000}[r.IntN(7)]
		size := []int64{0, 1, 10_000, 1_500_000}[r.IntN(4)]
		e := errs[r.IntN(len(errs))]
		watches := []int{0, 9, 10, 29, 99, 1000}[r.IntN(6)]
		maxSeats := []uint64{0, 1, 3, 10, 20, 100, 150}[r.IntN(7)]

		upEst := fcrequest.NewWorkEstimator(
			func(string) (storage.Stats, error) {
				return storage.Stats{ObjectCount: count, EstimatedAverageObjectSizeBytes: size}, e.up
			},
			func(*genericrequest.RequestInfo) int { return watches },
			fcrequest.DefaultWorkEstimatorConfig(),
			func(string) uint64 { return maxSeats })
		req = req.WithContext(genericrequest.WithRequestInfo(req.Context(), up))
		want := upEst(req, "fs", "pl")

		ours, err := apf.NewWorkEstimator(apf.WorkEstimatorConfig{}, fixedStats{apf.ListStats{ObjectCount: count, AverageObjectSizeBytes: size}, e.ours}, fixedWatches(watches))
		if err != nil {
			t.Fatal(err)
		}
		got := ours.Estimate(&ri, req.URL.Query(), maxSeats)
		if got.InitialSeats > 1 {
			lists++
		}
		if got.FinalSeats > 0 {
			finals++
		}
		if got != (fairqueue.WorkEstimate{InitialSeats: want.InitialSeats, FinalSeats: want.FinalSeats, AdditionalLatency: want.AdditionalLatency}) {
			t.Fatalf("case %d: %s %s, %d objects of %d B (err %v), %d watches, max %d: upstream %+v, fairslice %+v",
				i, method, target, count, size, e.up, watches, maxSeats, want, got)
		}
	}
	if lists < 100 || finals < 100 {
		t.Errorf("only %d multi-seat lists and %d final phases: the draw does not exercise the estimator", lists, finals)
	}
}

// seeded returns a generator from -apfdiff.seed, or from the clock (logged).
func seeded(t *testing.T) *rand.Rand {
	seed := *diffSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -apfdiff.seed=%d)", seed, seed)
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}
