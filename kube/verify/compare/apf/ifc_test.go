package apfcompare

import (
	"context"
	"flag"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/go-logr/logr"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/server/mux"
	"k8s.io/apiserver/pkg/util/flowcontrol"
	"k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing/eventclock"
	"k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing/queueset"
	testeventclock "k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing/testing/eventclock"
	"k8s.io/apiserver/pkg/util/flowcontrol/metrics"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/fairslice/fairslice/fairqueue"
	"github.com/fairslice/fairslice/flowschema"
	kubeflowcontrol "github.com/fairslice/fairslice/kube/flowcontrol"
	"github.com/fairslice/fairslice/kube/internal/upstream/upstreamfs"
)

// The differential test through utilflowcontrol.Interface: upstream's
// controller and kube/flowcontrol's, each built from its own fake
// clientset and informers on its own fake event clock, driven by the same
// upstreamDriver code (Handle with noteFn, queueNoteFn and execFn), with
// the configuration changed through the clientsets mid-scenario and the
// configuration worker run by the driver (configWorker), so that both
// sides digest every change, and reap every removed level, at the same
// point of the scenario.

// fakeClock adapts upstream's fake event clock to fairqueue.Clock.
type fakeClock struct{ f *testeventclock.Fake }

type fakeTimer struct {
	mu            sync.Mutex
	stopped, done bool
}

func (t *fakeTimer) Stop() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	was := !t.stopped && !t.done
	t.stopped = true
	return was
}

func (c fakeClock) Now() time.Time { return c.f.Now() }

func (c fakeClock) AfterFunc(d time.Duration, f func()) fairqueue.Timer {
	t := &fakeTimer{}
	c.f.EventAfterDuration(func(time.Time) {
		t.mu.Lock()
		run := !t.stopped
		t.done = true
		t.mu.Unlock()
		if run {
			f()
		}
	}, d)
	return t
}

// ifcSide is one implementation behind the interface and the clientset
// its informers read.
type ifcSide struct {
	*upstreamDriver
	client *fake.Clientset
}

// newIfcSide starts upstream's controller, or kube/flowcontrol's if ours
// is set, on its own fake clientset loaded with cfg, and digests cfg.
func newIfcSide(tb testing.TB, cfg *flowschema.Config, serverCL int, ours bool) *ifcSide {
	return newIfcSideClock(tb, cfg, serverCL, ours, false)
}

// newIfcSideClock is newIfcSide on the real clock if real is set (for
// benchmarks: upstream's fake clock takes a lock on every reading). Run is
// not called: the driver runs the configuration worker (configWorker).
func newIfcSideClock(tb testing.TB, cfg *flowschema.Config, serverCL int, ours, real bool) *ifcSide {
	cfg = cfg.DeepCopy()
	cfg.SetDefaults()
	return newIfcSideStored(tb, cfg, serverCL, ours, real)
}

// newIfcSideStored is newIfcSideClock with cfg loaded into the clientset
// as it is, not defaulted: as a fake clientset holds objects that no API
// server has defaulted.
func newIfcSideStored(tb testing.TB, cfg *flowschema.Config, serverCL int, ours, real bool) *ifcSide {
	silence.Do(func() { klog.SetLogger(logr.Discard()) })
	objs, _, err := upstreamfs.Objects(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	clk, _ := testeventclock.NewFake(start, 0, nil)
	client := fake.NewSimpleClientset(objs...)
	// Acknowledge the status writes without storing them, on both sides:
	// a stored write would be an informer event, queuing one more digest
	// (with its borrowing adjustment). The actions are still recorded.
	client.PrependReactor("patch", "flowschemas", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "status" {
			return true, &flowcontrolv1.FlowSchema{}, nil
		}
		return false, nil, nil
	})
	regs := &[]cache.ResourceEventHandlerRegistration{}
	factory := informers.NewSharedInformerFactory(client, 0)
	inf := handlerRecorder{factory, regs}
	var ctl flowcontrol.Interface
	var worker *configWorker
	var upClock eventclock.Interface = clk
	var ourClock fairqueue.Clock = fakeClock{clk}
	if real {
		upClock, ourClock = eventclock.Real{}, nil
	}
	if ours {
		// Run is not called, so neither side adjusts periodically:
		// "adjust" events drive both (ifcSide.adjust).
		c, err := kubeflowcontrol.NewWithOptions(inf, client.FlowcontrolV1(), serverCL, kubeflowcontrol.Options{Clock: ourClock})
		if err != nil {
			tb.Fatal(err)
		}
		ctl = c
		worker = newConfigWorker(tb, c, "queue", func() bool { return oursProcessNextWorkItem(c) }, regs)
	} else {
		ctl = flowcontrol.NewTestable(flowcontrol.TestableConfig{
			Name: "apfcompare", Clock: upClock, AsFieldManager: flowcontrol.ConfigConsumerAsFieldManager,
			FoundToDangling: func(found bool) bool { return !found }, InformerFactory: inf,
			FlowcontrolClient: client.FlowcontrolV1(), ServerConcurrencyLimit: serverCL,
			ReqsGaugeVec: metrics.PriorityLevelConcurrencyGaugeVec, ExecSeatsGaugeVec: metrics.PriorityLevelExecutionSeatsGaugeVec,
			QueueSetFactory: queueset.NewQueueSetFactory(upClock),
		})
		if got := reflect.TypeOf(ctl).String(); got != "*flowcontrol.configController" {
			tb.Fatalf("upstream controller is a %s, want *flowcontrol.configController", got)
		}
		p := (*[2]unsafe.Pointer)(unsafe.Pointer(&ctl))[1]
		worker = newConfigWorker(tb, ctl, "configQueue", func() bool { return upstreamProcessNextWorkItem(p) }, regs)
	}
	d := &upstreamDriver{tb: tb, clk: clk, ctl: ctl, worker: worker, stop: make(chan struct{}), mux: mux.NewPathRecorderMux("apfcompare"),
		queue: map[string]bool{}, slots: map[int]*slot{}}
	for _, pl := range cfg.PriorityLevels {
		// With queues 0 upstream's queue set rejects as concurrency-limit.
		if l := pl.Spec.Limited; l != nil && l.LimitResponse.Queuing != nil && l.LimitResponse.Queuing.Queues > 0 {
			d.queue[pl.Name] = true
		}
	}
	ctl.Install(d.mux)
	factory.Start(d.stop)
	worker.awaitHandlersSynced()
	worker.drain()
	return &ifcSide{upstreamDriver: d, client: client}
}

// addLevel creates a queuing priority level and a FlowSchema for group
// g<name> through the clientset, one object at a time, each digested
// before the next.
func (s *ifcSide) addLevel(name string, queues, hand, qll, shares int32) {
	ctx := context.Background()
	pl := &flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "pl" + name}, Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
		Type: flowcontrolv1.PriorityLevelEnablementLimited, Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
			NominalConcurrencyShares: &shares, LendablePercent: new(int32),
			LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue,
				Queuing: &flowcontrolv1.QueuingConfiguration{Queues: queues, HandSize: hand, QueueLengthLimit: qll}}}}}
	fs := &flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: "fs" + name}, Spec: flowcontrolv1.FlowSchemaSpec{
		PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "pl" + name}, MatchingPrecedence: 50,
		DistinguisherMethod: &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
		Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
			Subjects: []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindGroup, Group: &flowcontrolv1.GroupSubject{Name: "g" + name}}},
			ResourceRules: []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"},
				Namespaces: []string{"*"}, ClusterScope: true}}}}}}
	s.worker.change(func() error {
		_, err := s.client.FlowcontrolV1().FlowSchemas().Create(ctx, fs, metav1.CreateOptions{})
		return err
	})
	s.worker.change(func() error {
		_, err := s.client.FlowcontrolV1().PriorityLevelConfigurations().Create(ctx, pl, metav1.CreateOptions{})
		return err
	})
	s.queue["pl"+name] = true
	s.awaitDispatched()
}

// removeLevel deletes level pl, then the FlowSchemas fss that refer to it,
// one at a time, each digested before the next.
func (s *ifcSide) removeLevel(pl string, fss []string) {
	ctx := context.Background()
	s.worker.change(func() error {
		return s.client.FlowcontrolV1().PriorityLevelConfigurations().Delete(ctx, pl, metav1.DeleteOptions{})
	})
	for _, fs := range fss {
		s.worker.change(func() error { return s.client.FlowcontrolV1().FlowSchemas().Delete(ctx, fs, metav1.DeleteOptions{}) })
	}
	s.awaitDispatched()
}

// adjust runs one periodic borrowing adjustment: upstream's through its
// unexported method, ours through AdjustBorrowing at the fake clock's time.
func (s *ifcSide) adjust() {
	c, ok := s.ctl.(*kubeflowcontrol.Controller)
	if !ok {
		s.upstreamDriver.adjust()
		return
	}
	c.AdjustBorrowing(s.clk.Now())
	s.awaitDispatched()
}

// removable names the configuration's first level that is not mandatory
// (pl0 in a generated configuration, a suggested level in the bootstrap
// one) and the FlowSchemas that refer to it.
func removable(cfg *flowschema.Config) (pl string, fss []string) {
	for _, l := range cfg.PriorityLevels {
		if l.Name != flowschema.PriorityLevelNameExempt && l.Name != flowschema.PriorityLevelNameCatchAll {
			pl = l.Name
			break
		}
	}
	for _, fs := range cfg.FlowSchemas {
		if fs.Spec.PriorityLevelConfiguration.Name == pl {
			fss = append(fss, fs.Name)
		}
	}
	return pl, fss
}

// ifcEvents adds reconfigurations to a random scenario's events: with
// "add" in reconf, a new level "x" with a FlowSchema for group gx at a
// random point in the first half (later arrivals may come from gx); with
// "remove", the removal of the first non-mandatory level in the second
// half (see removable).
func ifcEvents(s *scenario, seed uint64, reconf string) []event {
	r := rand.New(rand.NewPCG(seed, 17))
	evs := slices.Clone(s.Events)
	insert := func(at int, ev event) {
		evs = append(evs[:at], append([]event{ev}, evs[at:]...)...)
	}
	if strings.Contains(reconf, "add") {
		insert(r.IntN(len(evs)/2+1), event{Kind: "add-level"})
	}
	if strings.Contains(reconf, "remove") {
		insert(len(evs)/2+r.IntN(len(evs)/2+1), event{Kind: "remove-level"})
	}
	// Requests arriving after add-level join gx with probability 1/3.
	added := false
	for _, ev := range evs {
		if ev.Kind == "add-level" {
			added = true
		}
		if added && ev.Kind == "arrive" && r.IntN(3) == 0 {
			s.Requests[ev.ID].Groups = []string{"system:authenticated", "gx"}
		}
	}
	return evs
}

// runIfc plays evs, s's events with reconfigurations, on upstream's
// controller and kube/flowcontrol's and returns the first mismatch.
func runIfc(t *testing.T, s *scenario, evs []event) string {
	up := newIfcSide(t, s.Config, s.ServerCL, false)
	defer up.close()
	ours := newIfcSide(t, s.Config, s.ServerCL, true)
	defer ours.close()
	return play(s, evs, up, ours, ifcCoverage, func(event) string { return "" })
}

var ifcCoverage = map[string]int{}

// ifcReconf selects the reconfigurations: by default the scenarios
// alternate between adding a level and removing one.
var ifcReconf = flag.String("apfdiff.reconf", "alternate", "reconfigurations in TestDifferentialInterface: alternate, add, remove, add,remove, or none")

// TestDifferentialInterface runs random scenarios, with a level added and
// one removed through the clientset mid-way, through upstream's controller
// and kube/flowcontrol's, both through utilflowcontrol.Interface, and
// requires after every event the same FlowSchema, priority level and
// distinguisher (as noteFn reports them), state and rejection reason of
// every request, the same dispatch order (queueNoteFn(false)), and the
// same three debug dumps (rows sorted).
func TestDifferentialInterface(t *testing.T) {
	seed := *diffSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	// As many scenarios as TestDifferential (12, about 1 s): with 6, about
	// one run in 60 had no queue-full rejection.
	n := max(1, *diffScenarios)
	t.Logf("seed %d (replay with -apfdiff.seed=%d -apfdiff.scenarios=2)", seed, seed)
	for i := range n {
		s := randomScenario(seed+uint64(i), *diffSteps)
		reconf := *ifcReconf
		if reconf == "alternate" {
			reconf = [2]string{"add", "remove"}[i%2]
		}
		if msg := runIfc(t, s, ifcEvents(s, seed+uint64(i), reconf)); msg != "" {
			t.Fatalf("scenario seed %d (server %d seats) mismatch:\n%s", s.Seed, s.ServerCL, msg)
		}
	}
	t.Logf("final states: %v", ifcCoverage)
	if n >= 12 {
		for _, k := range []string{"waiting", "executing", "done", "rejected:queue-full", "rejected:time-out", "dispatched by an adjustment"} {
			if ifcCoverage[k] == 0 {
				t.Errorf("no request ended %q: the scenarios do not exercise it", k)
			}
		}
	}
}
