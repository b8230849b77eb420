package flowcontrol

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/user"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/server/mux"
	utilflowcontrol "k8s.io/apiserver/pkg/util/flowcontrol"
	fcrequest "k8s.io/apiserver/pkg/util/flowcontrol/request"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/fairslice/fairslice/apf"
	"github.com/fairslice/fairslice/apf/fleet"
	"github.com/fairslice/fairslice/fairqueue"
)

func i32(v int32) *int32 { return &v }

// testLevel is a queuing level "tenants" (1 queue of 2) and a FlowSchema
// "tenants" for group "tenants", with UIDs, and a FlowSchema "orphan"
// whose level does not exist.
func testObjects() []runtime.Object {
	pl := &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "tenants", UID: "pl-uid-tenants"},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: i32(1), LendablePercent: i32(0),
				LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue,
					Queuing: &flowcontrolv1.QueuingConfiguration{Queues: 1, HandSize: 1, QueueLengthLimit: 2}}}},
	}
	fs := func(name, level string) *flowcontrolv1.FlowSchema {
		return &flowcontrolv1.FlowSchema{
			ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("fs-uid-" + name)},
			Spec: flowcontrolv1.FlowSchemaSpec{
				PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: level}, MatchingPrecedence: 100,
				DistinguisherMethod: &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
				Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
					Subjects: []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindGroup, Group: &flowcontrolv1.GroupSubject{Name: "tenants"}}},
					ResourceRules: []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"},
						Resources: []string{"*"}, Namespaces: []string{"*"}, ClusterScope: true}},
				}},
			},
		}
	}
	return []runtime.Object{pl, fs("tenants", "tenants"), fs("orphan", "missing")}
}

type testEnv struct {
	c      *Controller
	client *fake.Clientset
	stop   chan struct{}
	done   chan struct{}

	mu      sync.Mutex
	patches map[string]k8stesting.PatchActionImpl
}

// startEnv runs a Controller with 10 seats over a fake clientset holding
// objs, and waits until it has written the condition of every FlowSchema
// named in want.
func startEnv(t *testing.T, objs []runtime.Object, want ...string) *testEnv {
	t.Helper()
	return startEnvWith(t, Options{}, objs, want...)
}

// startEnvWith is startEnv with the Controller's options.
func startEnvWith(t *testing.T, opts Options, objs []runtime.Object, want ...string) *testEnv {
	t.Helper()
	e := &testEnv{client: fake.NewSimpleClientset(objs...), stop: make(chan struct{}), done: make(chan struct{}),
		patches: map[string]k8stesting.PatchActionImpl{}}
	e.client.PrependReactor("patch", "flowschemas", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "status" {
			return false, nil, nil
		}
		p := a.(k8stesting.PatchActionImpl)
		e.mu.Lock()
		e.patches[p.Name] = p
		e.mu.Unlock()
		return true, &flowcontrolv1.FlowSchema{}, nil
	})
	inf := informers.NewSharedInformerFactory(e.client, 0)
	c, err := NewWithOptions(inf, e.client.FlowcontrolV1(), 10, opts)
	if err != nil {
		t.Fatal(err)
	}
	e.c = c
	inf.Start(e.stop)
	go func() {
		defer close(e.done)
		if err := c.Run(e.stop); err != nil {
			t.Errorf("Run = %v", err)
		}
	}()
	t.Cleanup(func() {
		close(e.stop)
		waitFor(t, e.done, "Run to return")
		inf.Shutdown()
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		e.mu.Lock()
		n := 0
		for _, name := range want {
			if _, ok := e.patches[name]; ok {
				n++
			}
		}
		e.mu.Unlock()
		if n == len(want) {
			return e
		}
		if time.Now().After(deadline) {
			t.Fatalf("conditions of %v not written within 20s", want)
		}
		time.Sleep(time.Millisecond)
	}
}

func waitFor(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(20 * time.Second):
		t.Fatalf("timed out after 20s waiting for %s", what)
	}
}

func digest(u string, groups ...string) utilflowcontrol.RequestDigest {
	return utilflowcontrol.RequestDigest{
		RequestInfo: &genericrequest.RequestInfo{IsResourceRequest: true, Verb: "get", APIPrefix: "api", APIVersion: "v1",
			Namespace: "default", Resource: "pods", Name: "p", Path: "/api/v1/namespaces/default/pods/p"},
		User: &user.DefaultInfo{Name: u, Groups: groups},
	}
}

// handled is what one Handle call reported.
type handled struct {
	fs, pl, fsUID, plUID, dist string
	estimated, executed        int
	queueNotes                 []bool
}

// handle calls Handle in a goroutine; execFn blocks until release is
// closed. It returns the record and a channel closed when Handle returns.
func handle(ctx context.Context, c *Controller, rd utilflowcontrol.RequestDigest, entered, release chan struct{}) (*handled, chan struct{}) {
	h := &handled{}
	var mu sync.Mutex
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Handle(ctx, rd,
			func(fs *flowcontrolv1.FlowSchema, pl *flowcontrolv1.PriorityLevelConfiguration, dist string) {
				mu.Lock()
				h.fs, h.pl, h.fsUID, h.plUID, h.dist = fs.Name, pl.Name, string(fs.UID), string(pl.UID), dist
				mu.Unlock()
			},
			func() fcrequest.WorkEstimate {
				mu.Lock()
				h.estimated++
				noted := h.fs != ""
				mu.Unlock()
				if !noted {
					panic("workEstimator called before noteFn")
				}
				return fcrequest.WorkEstimate{InitialSeats: 1}
			},
			func(inQueue bool) {
				mu.Lock()
				h.queueNotes = append(h.queueNotes, inQueue)
				mu.Unlock()
			},
			func() {
				mu.Lock()
				h.executed++
				mu.Unlock()
				if entered != nil {
					close(entered)
				}
				if release != nil {
					<-release
				}
			})
	}()
	return h, done
}

func TestHandleNotesInformerObjects(t *testing.T) {
	e := startEnv(t, testObjects(), "tenants", "orphan")
	h, done := handle(context.Background(), e.c, digest("alice", "tenants", "system:authenticated"), nil, nil)
	waitFor(t, done, "Handle")
	want := handled{fs: "tenants", pl: "tenants", fsUID: "fs-uid-tenants", plUID: "pl-uid-tenants", dist: "", // one queue: no flow, as upstream
		estimated: 1, executed: 1, queueNotes: []bool{true, false}}
	if h.fs != want.fs || h.pl != want.pl || h.fsUID != want.fsUID || h.plUID != want.plUID || h.dist != want.dist ||
		h.estimated != 1 || h.executed != 1 || len(h.queueNotes) != 2 || !h.queueNotes[0] || h.queueNotes[1] {
		t.Errorf("Handle(alice in tenants) = %+v, want %+v", *h, want)
	}
	// system:masters is exempt: upstream's bootstrap objects (no UID), no
	// queue, and upstream's code asks the estimator even then.
	h, done = handle(context.Background(), e.c, digest("root", "system:masters", "system:authenticated"), nil, nil)
	waitFor(t, done, "Handle")
	if h.fs != "exempt" || h.pl != "exempt" || h.executed != 1 || len(h.queueNotes) != 0 || h.estimated != 1 {
		t.Errorf("Handle(system:masters) = %+v, want exempt, executed once, no queue notes", *h)
	}
}

// A request that waits until its context ends is rejected (execFn not
// called, queueNoteFn true then false); a third one finds the queue full.
func TestHandleQueueFullAndTimeOut(t *testing.T) {
	e := startEnv(t, testObjects(), "tenants")
	// The level's concurrency limit: nominal share of 10 seats among
	// tenants (1), exempt (0) and catch-all (5): ceil(10/6) = 2.
	var releases []chan struct{}
	var dones []chan struct{}
	for i := range 2 {
		entered, release := make(chan struct{}), make(chan struct{})
		_, done := handle(context.Background(), e.c, digest("busy", "tenants"), entered, release)
		waitFor(t, entered, "request "+string(rune('0'+i))+" to execute")
		releases, dones = append(releases, release), append(dones, done)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	waiting, wdone := handle(ctx, e.c, digest("late", "tenants"), nil, nil)
	waitFor(t, wdone, "the waiting request to time out")
	if waiting.executed != 0 || len(waiting.queueNotes) != 2 || !waiting.queueNotes[0] || waiting.queueNotes[1] {
		t.Errorf("timed-out request = %+v, want not executed, queue notes [true false]", *waiting)
	}
	for i := range releases {
		close(releases[i])
		waitFor(t, dones[i], "Handle to return")
	}
}

// Every FlowSchema gets upstream's Dangling condition through
// server-side apply with upstream's field manager, forced.
func TestDanglingCondition(t *testing.T) {
	e := startEnv(t, testObjects(), "tenants", "orphan")
	for name, want := range map[string][3]string{
		"tenants": {"False", "Found", `This FlowSchema references the PriorityLevelConfiguration object named "tenants" and it exists`},
		"orphan":  {"True", "NotFound", `This FlowSchema references the PriorityLevelConfiguration object named "missing" but there is no such object`},
	} {
		e.mu.Lock()
		p := e.patches[name]
		e.mu.Unlock()
		if p.PatchType != types.ApplyPatchType || p.PatchOptions.FieldManager != utilflowcontrol.ConfigConsumerAsFieldManager ||
			p.PatchOptions.Force == nil || !*p.PatchOptions.Force {
			t.Errorf("status write of %s: type %q, options %+v, want apply by %q, forced", name, p.PatchType, p.PatchOptions, utilflowcontrol.ConfigConsumerAsFieldManager)
		}
		var obj flowcontrolv1.FlowSchema
		if err := json.Unmarshal(p.Patch, &obj); err != nil {
			t.Fatalf("status write of %s: %v", name, err)
		}
		if len(obj.Status.Conditions) != 1 {
			t.Fatalf("status write of %s: conditions %+v, want one", name, obj.Status.Conditions)
		}
		c := obj.Status.Conditions[0]
		if got := [3]string{string(c.Status), c.Reason, c.Message}; c.Type != flowcontrolv1.FlowSchemaConditionDangling || got != want {
			t.Errorf("Dangling condition of %s = %s %v, want %v", name, c.Type, got, want)
		}
	}
}

// A FlowSchema created after the start takes effect.
func TestReconfigureFromInformer(t *testing.T) {
	objs := testObjects()
	e := startEnv(t, objs[:1]) // only the level
	h, done := handle(context.Background(), e.c, digest("bob", "tenants", "system:authenticated"), nil, nil)
	waitFor(t, done, "Handle")
	if h.fs != "catch-all" {
		t.Fatalf("before the FlowSchema: bob classified to %q, want catch-all", h.fs)
	}
	if _, err := e.client.FlowcontrolV1().FlowSchemas().Create(context.Background(), objs[1].(*flowcontrolv1.FlowSchema), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		h, done = handle(context.Background(), e.c, digest("bob", "tenants", "system:authenticated"), nil, nil)
		waitFor(t, done, "Handle")
		if h.fs == "tenants" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after creating FlowSchema tenants: bob classified to %q for 20s, want tenants", h.fs)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestInstallDebugEndpoints(t *testing.T) {
	e := startEnv(t, testObjects(), "tenants")
	m := mux.NewPathRecorderMux("test")
	e.c.Install(m)
	for path, want := range map[string]string{
		"/debug/api_priority_and_fairness/dump_priority_levels":                  "PriorityLevelName, ActiveQueues, IsIdle",
		"/debug/api_priority_and_fairness/dump_queues":                           "tenants,",
		"/debug/api_priority_and_fairness/dump_requests?includeRequestDetails=1": "UserName",
	} {
		rec := httptest.NewRecorder()
		m.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Code != 200 || !strings.Contains(rec.Body.String(), want) {
			t.Errorf("GET %s = %d %q, want 200 containing %q", path, rec.Code, rec.Body.String(), want)
		}
	}
}

func TestNewWithOptionsRejectsBadInput(t *testing.T) {
	inf := informers.NewSharedInformerFactory(fake.NewSimpleClientset(), 0)
	for _, tc := range []struct {
		scl  int
		opts Options
		want string
	}{
		{0, Options{}, "ServerConcurrencyLimit=0"},
		{10, Options{AdjustPeriod: -time.Second}, "AdjustPeriod=-1s"},
		{10, Options{Adaptive: &apf.AdaptiveOptions{Min: 11}}, "Options.Adaptive.Min=11 must not exceed Max (10)"},
		{10, Options{Adaptive: &apf.AdaptiveOptions{}, Fleet: &Fleet{Replica: "a", Store: fleet.NewMemoryStore()}}, "Options.Fleet and Options.Adaptive cannot be used together"},
	} {
		_, err := NewWithOptions(inf, nil, tc.scl, tc.opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewWithOptions(%d, %+v) = %v, want an error naming %s", tc.scl, tc.opts, err, tc.want)
		}
	}
	// Every problem at once, not the first alone.
	_, err := NewWithOptions(inf, nil, 0, Options{AdjustPeriod: -time.Second, QueueSet: fairqueue.Config{ServiceDuration: -1},
		Adaptive: &apf.AdaptiveOptions{Min: 3}, Fleet: &Fleet{Replica: "a", Store: fleet.NewMemoryStore()}})
	for _, want := range []string{"AdjustPeriod=-1s", "cannot be used together", "ServerConcurrencyLimit=0", "ServiceDuration=-1ns"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("NewWithOptions with four problems = %v, want it to name %s too", err, want)
		}
	}
}

// With Options.Adaptive the total starts at its floor and stays within
// its bounds; without, it is the server concurrency limit.
func TestNewWithOptionsAdaptive(t *testing.T) {
	inf := informers.NewSharedInformerFactory(fake.NewSimpleClientset(), 0)
	for _, tc := range []struct {
		opts Options
		want int
	}{
		{Options{}, 50},
		{Options{Adaptive: &apf.AdaptiveOptions{Min: 7}}, 7},
	} {
		c, err := NewWithOptions(inf, nil, 50, tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.apf.Total(); got != tc.want {
			t.Errorf("NewWithOptions(50, %+v): total = %d, want %d", tc.opts, got, tc.want)
		}
		c.apf.Close()
		c.queue.ShutDown()
	}
}

// A panic in execFn reaches Handle's caller (upstream's filter turns it
// into the response) and the request's seat is given back.
func TestHandleExecPanicReleasesSeat(t *testing.T) {
	e := startEnv(t, testObjects(), "tenants")
	rd := digest("crash", "tenants")
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Errorf("Handle with a panicking execFn: recovered %v, want boom", r)
			}
		}()
		e.c.Handle(context.Background(), rd,
			func(*flowcontrolv1.FlowSchema, *flowcontrolv1.PriorityLevelConfiguration, string) {},
			func() fcrequest.WorkEstimate { return fcrequest.WorkEstimate{InitialSeats: 1} },
			func(bool) {}, func() { panic("boom") })
	}()
	for _, d := range e.c.Dump() {
		if d.Name == "tenants" && d.QueueSet.Executing != 0 {
			t.Errorf("after the panic, level tenants has %d executing requests, want 0", d.QueueSet.Executing)
		}
	}
	// Both seats are free: two requests execute at once.
	var dones []chan struct{}
	var releases []chan struct{}
	for range 2 {
		entered, release := make(chan struct{}), make(chan struct{})
		_, done := handle(context.Background(), e.c, rd, entered, release)
		waitFor(t, entered, "a request after the panic to execute")
		dones, releases = append(dones, done), append(releases, release)
	}
	for i := range dones {
		close(releases[i])
		waitFor(t, dones[i], "Handle to return")
	}
}

// A request whose estimate has an additional latency stays in its level
// after Handle returns (fairqueue releases it on a timer, with or without
// final seats), and the timer's event reaches its call: the call must not
// be reused until then.
func TestLingeringCallNotReused(t *testing.T) {
	for _, w := range []fcrequest.WorkEstimate{
		{InitialSeats: 1, FinalSeats: 2, AdditionalLatency: time.Second},
		{InitialSeats: 1, FinalSeats: 0, AdditionalLatency: time.Second},
	} {
		k := &call{noteFn: func(*flowcontrolv1.FlowSchema, *flowcontrolv1.PriorityLevelConfiguration, string) {},
			estimator: func() fcrequest.WorkEstimate { return w }, c: &Controller{}}
		k.c.objs.Store(newObjects(nil, nil))
		k.estimate(&apf.Classification{FlowSchema: "catch-all", PriorityLevel: "catch-all"}, 0)
		if !k.lingers {
			t.Errorf("estimate %+v: call.lingers = false, want true (its request lingers in fairqueue)", w)
		}
	}
	k := &call{noteFn: func(*flowcontrolv1.FlowSchema, *flowcontrolv1.PriorityLevelConfiguration, string) {},
		estimator: func() fcrequest.WorkEstimate { return fcrequest.WorkEstimate{InitialSeats: 3} }, c: &Controller{}}
	k.c.objs.Store(newObjects(nil, nil))
	k.estimate(&apf.Classification{FlowSchema: "catch-all", PriorityLevel: "catch-all"}, 0)
	if k.lingers {
		t.Error("estimate without additional latency: call.lingers = true, want false (the call can be reused)")
	}
}

// Objects that no API server defaulted (issue 30) are used as they are,
// as upstream's controller uses them: level batch, with limitResponse
// {queuing: {handSize: 20}}, no type and queues 0, admits without queuing
// and has max seats max(1, min(ceil(0.15·10), 10/20)) = 1, and its
// FlowSchema is not dangling. Defaulted to 64 queues, a hand of 20 would
// not deal and the level would be ignored (max seats 0, dangling).
func TestUndefaultedObjectsUsedAsGiven(t *testing.T) {
	pl := &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "batch"},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: i32(10000),
				LimitResponse: flowcontrolv1.LimitResponse{Queuing: &flowcontrolv1.QueuingConfiguration{HandSize: 20}}}},
	}
	fs := testObjects()[1].(*flowcontrolv1.FlowSchema)
	fs.Name, fs.Spec.PriorityLevelConfiguration.Name = "batch", "batch"
	e := startEnv(t, []runtime.Object{pl, fs}, "batch")
	var reasons []string
	e.mu.Lock()
	var obj flowcontrolv1.FlowSchema
	if err := json.Unmarshal(e.patches["batch"].Patch, &obj); err != nil {
		t.Fatal(err)
	}
	e.mu.Unlock()
	for _, c := range obj.Status.Conditions {
		reasons = append(reasons, c.Reason)
	}
	got := fmt.Sprintf("%d %v %s %d", e.c.GetMaxSeats("batch"), reasons, e.c.Dump()[0].Name, e.c.Dump()[0].Limits.Queues)
	if want := "1 [Found] batch 0"; got != want {
		t.Errorf("max seats, Dangling reason, first level and its queues = %s, want %s", got, want)
	}
}
