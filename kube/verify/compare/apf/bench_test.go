package apfcompare

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/user"
	endpointsfilters "k8s.io/apiserver/pkg/endpoints/filters"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"
	serverfilters "k8s.io/apiserver/pkg/server/filters"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/util/flowcontrol"
	fcrequest "k8s.io/apiserver/pkg/util/flowcontrol/request"

	"github.com/fairslice/fairslice/apf"
	"github.com/fairslice/fairslice/fairqueue"
	"github.com/fairslice/fairslice/flowschema"
)

// mixed is a mix of requests over the default configuration: one each for
// global-default, exempt (system:masters and a probe), node-high,
// leader-election, workload-high, workload-low and catch-all.
var mixed = []struct {
	user   string
	groups []string
	method string
	path   string
}{
	{"alice", []string{"system:authenticated"}, "GET", "/api/v1/namespaces/team-a/pods/p1"},
	{"root", []string{"system:masters", "system:authenticated"}, "GET", "/api/v1/pods"},
	{"system:anonymous", []string{"system:unauthenticated"}, "GET", "/healthz"},
	{"system:node:n1", []string{"system:nodes", "system:authenticated"}, "PUT", "/api/v1/nodes/n1/status"},
	{"system:kube-controller-manager", []string{"system:authenticated"}, "PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kcm"},
	{"system:serviceaccount:kube-system:job", []string{"system:serviceaccounts", "system:authenticated"}, "GET", "/apis/apps/v1/namespaces/kube-system/deployments"},
	{"system:serviceaccount:ns1:foo", []string{"system:serviceaccounts", "system:authenticated"}, "GET", "/api/v1/namespaces/ns1/configmaps/c"},
	{"bob", []string{"system:unauthenticated"}, "POST", "/api/v1/namespaces/b/pods"},
}

func mixedRequests(tb testing.TB) ([]apf.Request, []flowcontrol.RequestDigest) {
	reqs := make([]apf.Request, len(mixed))
	digests := make([]flowcontrol.RequestDigest, len(mixed))
	for i, m := range mixed {
		ri, err := apf.ParseRequestInfo(httptest.NewRequest(m.method, m.path, nil))
		if err != nil {
			tb.Fatal(err)
		}
		reqs[i] = apf.Request{User: apf.User{Name: m.user, Groups: m.groups}, Info: ri}
		digests[i] = flowcontrol.RequestDigest{
			RequestInfo: &genericrequest.RequestInfo{IsResourceRequest: ri.IsResourceRequest, Path: ri.Path, Verb: ri.Verb,
				APIPrefix: ri.APIPrefix, APIGroup: ri.APIGroup, APIVersion: ri.APIVersion, Namespace: ri.Namespace,
				Resource: ri.Resource, Subresource: ri.Subresource, Name: ri.Name},
			User: &user.DefaultInfo{Name: m.user, Groups: m.groups},
		}
	}
	return reqs, digests
}

// BenchmarkHandle measures one request through APF without HTTP: upstream's
// controller Handle (classification, work estimate, QueueSet StartRequest
// and Finish, metrics calls, unregistered) against apf's Controller.Wait
// and Ticket.Finish, on the default configuration at 600 seats with real
// clocks, cycling through the mixed requests (each dispatched at once).
func BenchmarkHandle(b *testing.B) {
	reqs, digests := mixedRequests(b)
	b.Run("impl=upstream", func(b *testing.B) {
		up := newIfcSideClock(b, flowschema.DefaultConfig(), 600, false, true)
		defer up.close()
		ctx := context.Background()
		note := func(*flowcontrolv1.FlowSchema, *flowcontrolv1.PriorityLevelConfiguration, string) {}
		work := func() fcrequest.WorkEstimate { return fcrequest.WorkEstimate{InitialSeats: 1} }
		qnote := func(bool) {}
		executed := 0
		exec := func() { executed++ }
		b.ReportAllocs()
		b.ResetTimer()
		cpu0 := cpuTime()
		for i := 0; b.Loop(); i++ {
			up.ctl.Handle(ctx, digests[i%len(digests)], note, work, qnote, exec)
		}
		reportCPU(b, cpu0)
		if executed == 0 {
			b.Fatal("nothing executed")
		}
	})
	b.Run("impl=fairslice", func(b *testing.B) {
		c, err := apf.New(nil, apf.Options{ServerConcurrencyLimit: 600})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		ctx := context.Background()
		work := func(*apf.Classification, uint64) fairqueue.WorkEstimate {
			return fairqueue.WorkEstimate{InitialSeats: 1}
		}
		b.ReportAllocs()
		b.ResetTimer()
		cpu0 := cpuTime()
		for i := 0; b.Loop(); i++ {
			t, err := c.Wait(ctx, &reqs[i%len(reqs)], work)
			if err != nil {
				b.Fatal(err)
			}
			t.Finish()
		}
		reportCPU(b, cpu0)
	})
}

// BenchmarkMiddleware measures the HTTP middleware under parallel load
// (b.RunParallel on every core): upstream's filter chain as the API server
// builds it for APF (WithRequestInfo, a user from the request headers,
// WithPriorityAndFairness with upstream's work estimator, no object
// counts) against apf's Handler with RequestHeaderUser and
// ParseRequestInfo. The handler behind both does nothing; each op is one
// request served with an httptest.ResponseRecorder. One user per
// goroutine, so the requests spread over flows of global-default.
func BenchmarkMiddleware(b *testing.B) {
	noop := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	run := func(b *testing.B, h http.Handler) {
		b.ReportAllocs()
		b.ResetTimer()
		cpu0 := cpuTime()
		defer reportCPU(b, cpu0)
		var n atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			req := httptest.NewRequest("GET", "/api/v1/namespaces/default/pods/p", nil)
			req.Header.Set(apf.HeaderRemoteUser, "user-"+itoa(int(n.Add(1))))
			req.Header.Add(apf.HeaderRemoteGroup, "system:authenticated")
			for pb.Next() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("status %d", rec.Code)
				}
			}
		})
	}
	b.Run("impl=upstream", func(b *testing.B) {
		up := newIfcSideClock(b, flowschema.DefaultConfig(), 600, false, true)
		defer up.close()
		estimator := fcrequest.NewWorkEstimator(
			func(string) (storage.Stats, error) { return storage.Stats{}, fcrequest.ObjectCountNotFoundErr },
			up.ctl.GetInterestedWatchCount, fcrequest.DefaultWorkEstimatorConfig(), up.ctl.GetMaxSeats)
		h := serverfilters.WithPriorityAndFairness(noop, longRunning, up.ctl, estimator, apf.DefaultRequestWaitLimit)
		h = withHeaderUser(h)
		h = endpointsfilters.WithRequestInfo(h, &genericrequest.RequestInfoFactory{
			APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")})
		run(b, h)
	})
	b.Run("impl=fairslice", func(b *testing.B) {
		c, err := apf.New(nil, apf.Options{ServerConcurrencyLimit: 600})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		h, err := c.Handler(noop, apf.HandlerOptions{User: apf.RequestHeaderUser})
		if err != nil {
			b.Fatal(err)
		}
		run(b, h)
	})
}

// cpuTime returns the CPU time the process has used. Reported per op
// (cpu-ns/op) next to the wall time, it is robust to other processes on a
// shared machine, which inflate sec/op of both implementations alike.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}

// longRunning is kube-apiserver's check.
var longRunning = serverfilters.BasicLongRunningRequestCheck(sets.NewString("watch", "proxy"),
	sets.NewString("attach", "exec", "proxy", "log", "portforward"))

// withHeaderUser puts the user of the X-Remote-User/X-Remote-Group headers
// in the context, as upstream's request-header authenticator does
// (system:authenticated added).
func withHeaderUser(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, _ := apf.RequestHeaderUser(r)
		ctx := genericrequest.WithUser(r.Context(), &user.DefaultInfo{Name: u.Name, Groups: u.Groups})
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}
