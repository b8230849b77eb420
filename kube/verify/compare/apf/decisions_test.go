package apfcompare

import (
	"math/rand/v2"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"
	"unsafe"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"
	genericfilters "k8s.io/apiserver/pkg/server/filters"
	"k8s.io/apiserver/pkg/util/flowcontrol"

	"github.com/fairslice/fairslice/apf"
)

// The response headers are the API's constants.
func TestHeaderNamesMatchAPI(t *testing.T) {
	if apf.HeaderFlowSchemaUID != flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID {
		t.Errorf("apf.HeaderFlowSchemaUID = %q, want %q", apf.HeaderFlowSchemaUID, flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID)
	}
	if apf.HeaderPriorityLevelUID != flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID {
		t.Errorf("apf.HeaderPriorityLevelUID = %q, want %q", apf.HeaderPriorityLevelUID, flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID)
	}
}

// DefaultLongRunning decides as kube-apiserver's long-running check:
// BasicLongRunningRequestCheck with the verbs and subresources
// k8s.io/kubernetes v1.37.2 pkg/controlplane/apiserver/config.go gives it,
// for every verb and subresource upstream lists and some it does not.
func TestDefaultLongRunningDifferential(t *testing.T) {
	upstream := genericfilters.BasicLongRunningRequestCheck(
		sets.NewString("watch", "proxy"),
		sets.NewString("attach", "exec", "proxy", "log", "portforward"))
	verbs := []string{"get", "list", "watch", "proxy", "create", "update", "patch", "delete", "deletecollection", "connect", ""}
	subresources := []string{"", "attach", "exec", "proxy", "log", "portforward", "status", "scale", "binding", "eviction", "logs", "Exec"}
	paths := []string{"/api/v1/pods", "/debug/pprof/", "/debug/pprof/profile", "/debug/pprof", "/healthz", "/metrics"}
	n := 0
	for _, resource := range []bool{true, false} {
		for _, verb := range verbs {
			for _, sub := range subresources {
				for _, path := range paths {
					ours := apf.RequestInfo{IsResourceRequest: resource, Verb: verb, Subresource: sub, Path: path, Resource: "pods"}
					theirs := genericrequest.RequestInfo{IsResourceRequest: resource, Verb: verb, Subresource: sub, Path: path, Resource: "pods"}
					r := httptest.NewRequest("GET", path, nil)
					if got, want := apf.DefaultLongRunning(r, &ours), upstream(r, &theirs); got != want {
						t.Errorf("DefaultLongRunning(resource=%v verb=%q subresource=%q path=%q) = %v, want %v", resource, verb, sub, path, got, want)
					}
					n++
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no case compared")
	}
}

// upstreamTracker returns upstream's dropped-requests tracker reading the
// time from now. Upstream builds it only on the real clock
// (NewDroppedRequestsTracker); its clock is its first field, now.
func upstreamTracker(t *testing.T, now func() time.Time) flowcontrol.DroppedRequestsTracker {
	tr := flowcontrol.NewDroppedRequestsTracker()
	typ := reflect.TypeOf(tr)
	if typ.Kind() != reflect.Pointer || typ.Elem().Kind() != reflect.Struct || typ.Elem().NumField() == 0 ||
		typ.Elem().Field(0).Name != "now" || typ.Elem().Field(0).Type != reflect.TypeOf(now) {
		t.Fatalf("upstream's tracker is %v, not a struct whose first field is now func() time.Time", typ)
	}
	*(*func() time.Time)((*[2]unsafe.Pointer)(unsafe.Pointer(&tr))[1]) = now
	return tr
}

// Retry-After follows upstream's dropped-requests tracker on the same
// rejection traces: bursts that raise it, quiet spells that lower it,
// several levels.
func TestRetryAfterDifferential(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		now := time.Unix(1_800_000_000, 0)
		up := upstreamTracker(t, func() time.Time { return now })
		ours := apf.NewRetryAfter()
		levels := []string{"a", "b"}
		for i := range 3000 {
			// Mostly dense bursts, sometimes a pause of up to a minute.
			switch x := r.IntN(100); {
			case x < 70:
				now = now.Add(time.Duration(r.IntN(50)) * time.Millisecond)
			case x < 97:
				now = now.Add(time.Duration(r.IntN(1500)) * time.Millisecond)
			default:
				now = now.Add(time.Duration(r.IntN(60)) * time.Second)
			}
			pl := levels[r.IntN(len(levels))]
			up.RecordDroppedRequest(pl)
			want := up.GetRetryAfter(pl)
			got := ours.Record(now, pl)
			if got != want {
				t.Fatalf("seed %d, rejection %d at %v (level %s): Retry-After = %d, want %d (upstream)", seed, i, now.Format(time.StampMilli), pl, got, want)
			}
			if g, w := ours.Get(pl), up.GetRetryAfter(pl); g != w {
				t.Fatalf("seed %d, rejection %d: Get(%s) = %d, want %d", seed, i, pl, g, w)
			}
		}
	}
}
