package apfmetrics

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/fairslice/fairslice/apf"
	"github.com/fairslice/fairslice/flowschema"
)

type fixedWatches int

func (n fixedWatches) InterestedWatchCount(*apf.RequestInfo) int { return int(n) }

// TestWatchCountSamples sends a create, a delete and a get through the
// middleware with a WatchCounter that reports 42 watches: the two mutating
// requests are sampled, the get is not.
func TestWatchCountSamples(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := flowschema.Decode([]byte(cfgYAML))
	if err != nil {
		t.Fatal(err)
	}
	c, err := apf.New(cfg, apf.Options{ServerConcurrencyLimit: 4, Observer: m})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	est, err := apf.NewWorkEstimator(apf.WorkEstimatorConfig{}, nil, fixedWatches(42))
	if err != nil {
		t.Fatal(err)
	}
	h, err := c.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}),
		apf.HandlerOptions{User: apf.RequestHeaderUser, Estimator: est})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct{ method, path string }{
		{http.MethodPost, "/api/v1/namespaces/a/pods"},
		{http.MethodDelete, "/api/v1/namespaces/a/pods/p"},
		{http.MethodGet, "/api/v1/namespaces/a/pods/p"},
	} {
		hr := httptest.NewRequest(r.method, r.path, nil)
		hr.Header.Set("X-Remote-User", "a")
		hr.Header.Add("X-Remote-Group", "tenants")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, hr)
		if rec.Code != http.StatusOK {
			t.Fatalf("%s %s: status %d", r.method, r.path, rec.Code)
		}
	}
	want := `
# HELP apiserver_flowcontrol_watch_count_samples count of watchers for mutating requests in API Priority and Fairness
# TYPE apiserver_flowcontrol_watch_count_samples histogram
apiserver_flowcontrol_watch_count_samples_bucket{flow_schema="tenants",priority_level="work",le="0"} 0
apiserver_flowcontrol_watch_count_samples_bucket{flow_schema="tenants",priority_level="work",le="1"} 0
apiserver_flowcontrol_watch_count_samples_bucket{flow_schema="tenants",priority_level="work",le="10"} 0
apiserver_flowcontrol_watch_count_samples_bucket{flow_schema="tenants",priority_level="work",le="100"} 2
apiserver_flowcontrol_watch_count_samples_bucket{flow_schema="tenants",priority_level="work",le="1000"} 2
apiserver_flowcontrol_watch_count_samples_bucket{flow_schema="tenants",priority_level="work",le="10000"} 2
apiserver_flowcontrol_watch_count_samples_bucket{flow_schema="tenants",priority_level="work",le="+Inf"} 2
apiserver_flowcontrol_watch_count_samples_sum{flow_schema="tenants",priority_level="work"} 84
apiserver_flowcontrol_watch_count_samples_count{flow_schema="tenants",priority_level="work"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "apiserver_flowcontrol_watch_count_samples"); err != nil {
		t.Error(err)
	}
}
