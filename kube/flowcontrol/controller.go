package flowcontrol

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	endpointsrequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/server/mux"
	utilflowcontrol "k8s.io/apiserver/pkg/util/flowcontrol"
	fq "k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing"
	"k8s.io/apiserver/pkg/util/flowcontrol/metrics"
	fcrequest "k8s.io/apiserver/pkg/util/flowcontrol/request"
	kubeinformers "k8s.io/client-go/informers"
	flowcontrolclient "k8s.io/client-go/kubernetes/typed/flowcontrol/v1"
	flowcontrollisters "k8s.io/client-go/listers/flowcontrol/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/fairslice/fairslice/apf"
	"github.com/fairslice/fairslice/fairqueue"
	"github.com/fairslice/fairslice/flowschema"
	"github.com/fairslice/fairslice/seats"
)

// BorrowingAdjustmentPeriod is how often Run re-divides the server's
// concurrency among the priority levels, as upstream does.
const BorrowingAdjustmentPeriod = apf.BorrowingAdjustmentPeriod

// Options are what upstream's New cannot be told. The zero value is
// upstream's behaviour on the real clock.
type Options struct {
	// Clock drives queuing, wait times and condition timestamps; nil is
	// the real clock. Run's periodic borrowing adjustment ticks on real
	// time whatever the clock (call AdjustBorrowing to drive it yourself).
	Clock fairqueue.Clock
	// QueueSet carries the fairqueue switches every priority level's queue
	// set gets (FixZeroLimitAdmission, ClampFinalSeatsWithoutQueues,
	// FixStaleQueueRemoval, ServiceDuration); the zero value is upstream's
	// behaviour. Its sizing fields are ignored.
	QueueSet fairqueue.Config
	// Borrowing selects departures from upstream's borrowing
	// (seats.BorrowingOptions); the zero value is upstream's.
	Borrowing seats.BorrowingOptions
	// FieldManager is the server-side-apply field manager of the
	// FlowSchemas' Dangling condition; "" is upstream's
	// utilflowcontrol.ConfigConsumerAsFieldManager.
	FieldManager string
	// AdjustPeriod is Run's borrowing adjustment period; 0 is upstream's
	// BorrowingAdjustmentPeriod (10 s). With Fleet, Fleet.Period decides
	// (by default this period, or 1 s with Fleet.GoAway).
	AdjustPeriod time.Duration
	// Adaptive, beyond upstream, makes the total seats divided among the
	// priority levels follow the execution latency the controller
	// measures (apf.Options.Adaptive; serverConcurrencyLimit becomes the
	// default ceiling). nil keeps upstream's static total. Not with Fleet,
	// which sets the current limits itself. Handle finishes the execution
	// of a cancelled request (its client went away) as abandoned, so it
	// is no latency sample; Dump's Baseline shows each level's.
	Adaptive *apf.AdaptiveOptions
	// Fleet, beyond upstream, has Run coordinate with the other replicas
	// of the server through a fleet.Store (see Fleet); nil decides alone.
	Fleet *Fleet
}

// Controller is fairslice's API Priority and Fairness behind upstream's
// utilflowcontrol.Interface. New and NewWithOptions build it; the API
// server's handler chain calls Handle for every request, Run keeps the
// configuration in step with the FlowSchema and PriorityLevelConfiguration
// informers, Install adds the debug endpoints. All methods are safe for
// concurrent use.
type Controller struct {
	// WatchTracker and MaxSeatsTracker are upstream's own trackers: the
	// work estimator reads them, Handle's filter registers watches, and
	// the controller sets the levels' max seats.
	utilflowcontrol.WatchTracker
	utilflowcontrol.MaxSeatsTracker

	apf          *apf.Controller
	clock        fairqueue.Clock
	client       flowcontrolclient.FlowcontrolV1Interface
	fieldManager string
	period       time.Duration
	obs          *observer
	fleet        *fleetRun // nil: alone

	plLister           flowcontrollisters.PriorityLevelConfigurationLister
	fsLister           flowcontrollisters.FlowSchemaLister
	plSynced, fsSynced cache.InformerSynced
	queue              workqueue.TypedRateLimitingInterface[int]

	objs  atomic.Pointer[objects]
	calls sync.Pool // of *call

	// Touched only by the one worker goroutine.
	recent []statusUpdateAttempt
	rng    *rand.Rand
}

var _ utilflowcontrol.Interface = (*Controller)(nil)

// New is upstream's utilflowcontrol.New with fairslice underneath: same
// signature, same informers, same status writes, same metrics. It panics
// if serverConcurrencyLimit is not positive (upstream would divide the
// server's concurrency by zero).
func New(informerFactory kubeinformers.SharedInformerFactory, flowcontrolClient flowcontrolclient.FlowcontrolV1Interface, serverConcurrencyLimit int) utilflowcontrol.Interface {
	c, err := NewWithOptions(informerFactory, flowcontrolClient, serverConcurrencyLimit, Options{})
	if err != nil {
		panic(err)
	}
	return c
}

// NewWithOptions is New with the options upstream lacks. It fails on a
// non-positive serverConcurrencyLimit or invalid options.
func NewWithOptions(informerFactory kubeinformers.SharedInformerFactory, flowcontrolClient flowcontrolclient.FlowcontrolV1Interface, serverConcurrencyLimit int, opts Options) (*Controller, error) {
	if err := checkOptions(serverConcurrencyLimit, opts); err != nil {
		return nil, err
	}
	c := newController(flowcontrolClient, opts)
	if err := c.startAPF(serverConcurrencyLimit, opts); err != nil {
		return nil, err
	}
	if err := c.watch(informerFactory); err != nil {
		return nil, err
	}
	return c, nil
}

// checkOptions reports every problem of opts at once: a negative
// AdjustPeriod or Fleet.Period, Fleet with Adaptive, and what apf refuses of the options
// passed on to it (the server concurrency limit, the queue set's service
// duration, Adaptive's bounds).
func checkOptions(serverConcurrencyLimit int, opts Options) error {
	var errs []error
	if opts.AdjustPeriod < 0 {
		errs = append(errs, fmt.Errorf("flowcontrol: Options.AdjustPeriod=%v must not be negative", opts.AdjustPeriod))
	}
	if opts.Fleet != nil && opts.Fleet.Period < 0 {
		errs = append(errs, fmt.Errorf("flowcontrol: Options.Fleet.Period=%v must not be negative", opts.Fleet.Period))
	}
	if opts.Fleet != nil && opts.Adaptive != nil {
		// Both move the current limits: the fleet's borrowing is computed
		// over each replica's static total, which an adaptive total would
		// change under it.
		errs = append(errs, errors.New("flowcontrol: Options.Fleet and Options.Adaptive cannot be used together"))
	}
	apfOpts := apf.Options{ServerConcurrencyLimit: serverConcurrencyLimit, QueueSet: opts.QueueSet, Adaptive: opts.Adaptive}
	if err := apfOpts.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("flowcontrol: %w", err))
	}
	return errors.Join(errs...)
}

// newController returns the Controller's shell: the trackers, the clock,
// the client and field manager, the adjustment period, with opts'
// defaults, and its observer.
func newController(flowcontrolClient flowcontrolclient.FlowcontrolV1Interface, opts Options) *Controller {
	c := &Controller{
		WatchTracker:    utilflowcontrol.NewWatchTracker(),
		MaxSeatsTracker: utilflowcontrol.NewMaxSeatsTracker(),
		clock:           opts.Clock,
		client:          flowcontrolClient,
		fieldManager:    opts.FieldManager,
		period:          runPeriod(opts),
		rng:             rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1)),
	}
	if c.clock == nil {
		c.clock = fairqueue.RealClock{}
	}
	if c.fieldManager == "" {
		c.fieldManager = utilflowcontrol.ConfigConsumerAsFieldManager
	}
	c.obs = newObserver(c)
	return c
}

// startAPF builds the apf.Controller from the mandatory objects alone,
// and the fleet's run with opts.Fleet.
func (c *Controller) startAPF(serverConcurrencyLimit int, opts Options) error {
	c.objs.Store(newObjects(nil, nil))
	apfOpts := apf.Options{
		ServerConcurrencyLimit: serverConcurrencyLimit, Clock: c.clock, Observer: c.obs,
		Borrowing: opts.Borrowing, QueueSet: opts.QueueSet, Adaptive: opts.Adaptive,
		// Run drives the borrowing adjustment on its own period, as
		// upstream's controller does.
		AdjustPeriod: apf.ManualAdjustment,
		// The API server has validated the objects the informers deliver;
		// what upstream's controller accepts in isolation (a dangling
		// FlowSchema, say) is accepted here too.
		Lenient: true,
		// And used as they are, without the v1 defaults, as upstream's
		// controller uses them: objects that skipped the API server's
		// defaulting (a fake clientset's) behave as there.
		AsStored: true,
	}
	// Start from the mandatory objects alone, as upstream does before its
	// informers have synced.
	if opts.Fleet != nil {
		return c.joinFleet(apfOpts, opts.Fleet)
	}
	a, err := apf.New(&flowschema.Config{}, apfOpts)
	if err != nil {
		return fmt.Errorf("flowcontrol: %w", err)
	}
	c.apf = a
	return nil
}

// watch queues a reconfiguration on every change of the
// PriorityLevelConfigurations and FlowSchemas that matters (their spec;
// for FlowSchemas also their status).
func (c *Controller) watch(informerFactory kubeinformers.SharedInformerFactory) error {
	c.queue = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[int](200*time.Millisecond, 8*time.Hour),
		workqueue.TypedRateLimitingQueueConfig[int]{Name: "priority_and_fairness_config_queue"},
	)
	fci := informerFactory.Flowcontrol().V1()
	pli, fsi := fci.PriorityLevelConfigurations(), fci.FlowSchemas()
	c.plLister, c.fsLister = pli.Lister(), fsi.Lister()
	c.plSynced, c.fsSynced = pli.Informer().HasSynced, fsi.Informer().HasSynced
	enqueue := func(any) { c.queue.Add(0) }
	if _, err := pli.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, DeleteFunc: enqueue,
		UpdateFunc: func(oldObj, newObj any) {
			o, n := oldObj.(*flowcontrolv1.PriorityLevelConfiguration), newObj.(*flowcontrolv1.PriorityLevelConfiguration)
			if !apiequality.Semantic.DeepEqual(o.Spec, n.Spec) {
				c.queue.Add(0)
			}
		},
	}); err != nil {
		return fmt.Errorf("flowcontrol: PriorityLevelConfiguration informer: %w", err)
	}
	if _, err := fsi.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, DeleteFunc: enqueue,
		UpdateFunc: func(oldObj, newObj any) {
			// Status too: the controller keeps the Dangling condition it
			// writes, as upstream does.
			o, n := oldObj.(*flowcontrolv1.FlowSchema), newObj.(*flowcontrolv1.FlowSchema)
			if !apiequality.Semantic.DeepEqual(o.Spec, n.Spec) || !apiequality.Semantic.DeepEqual(o.Status, n.Status) {
				c.queue.Add(0)
			}
		},
	}); err != nil {
		return fmt.Errorf("flowcontrol: FlowSchema informer: %w", err)
	}
	return nil
}

// call is the state of one Handle call, pooled. req must stay the first
// field: the observer gets back from the *apf.Request it is told about to
// the call that owns it (callOf).
type call struct {
	req       apf.Request
	c         *Controller
	ctx       context.Context
	work      apf.WorkFunc // k.estimate, bound once
	noteFn    func(*flowcontrolv1.FlowSchema, *flowcontrolv1.PriorityLevelConfiguration, string)
	estimator func() fcrequest.WorkEstimate
	queueNote fq.QueueNoteFn
	// Set by the observer's events: the level's gauges (looked up once per
	// call) and the wait reported at dispatch or rejection.
	g    *levelGauges
	wait time.Duration
	// lingers: the request keeps seats after Handle returns, and the
	// debug dump may still read req then, so the call is not reused.
	lingers bool
}

func (c *Controller) getCall() *call {
	if k, ok := c.calls.Get().(*call); ok {
		return k
	}
	k := &call{c: c}
	k.work = k.estimate
	return k
}

func (c *Controller) putCall(k *call) {
	if k.lingers {
		return
	}
	k.req.User.Groups = nil
	k.ctx, k.noteFn, k.estimator, k.queueNote = nil, nil, nil, nil
	k.g, k.wait = nil, 0
	c.calls.Put(k)
}

// estimate is the apf.WorkFunc of a call: it tells the filter the
// classification with the informers' objects, then asks its work
// estimator, as upstream's startRequest does (for exempt requests too:
// upstream's code calls the estimator for every request).
func (k *call) estimate(cl *apf.Classification, _ uint64) fairqueue.WorkEstimate {
	objs := k.c.objs.Load()
	k.noteFn(objs.flowSchema(cl.FlowSchema), objs.priorityLevel(cl.PriorityLevel), cl.Distinguisher)
	w := clampWork(k.estimator())
	// fairqueue holds a finished request's place until AdditionalLatency
	// has passed whenever that is positive, final seats or none.
	k.lingers = w.AdditionalLatency > 0
	return w
}

// clampWork brings an upstream work estimate into the range fairqueue
// accepts; upstream's estimator stays far inside it.
func clampWork(w fcrequest.WorkEstimate) fairqueue.WorkEstimate {
	return fairqueue.WorkEstimate{
		InitialSeats:      min(max(w.InitialSeats, 1), fairqueue.MaxWorkSeats),
		FinalSeats:        min(w.FinalSeats, fairqueue.MaxWorkSeats),
		AdditionalLatency: min(max(w.AdditionalLatency, 0), fairqueue.MaxAdditionalLatency),
	}
}

// Handle classifies the request, calls noteFn with the FlowSchema and
// priority level objects from the informers (so their UIDs reach the
// response headers), then workEstimator, and queues the request in its
// level. queueNoteFn is called with true when the request enters a queue
// and with false when it leaves it. If the request is dispatched, execFn
// runs once in the caller's goroutine and Handle returns after it; the
// seats are released even if execFn panics. A request still waiting when
// ctx ends (its deadline is the wait limit upstream's filter sets) is
// rejected with time-out; execFn is then not called.
//
// Handle reads no clock itself: the wait and execution durations it
// reports to upstream's metrics are the ones apf measured with the clock
// readings it takes anyway (at arrival, dispatch and finish), which the
// observer's events carry.
func (c *Controller) Handle(ctx context.Context, requestDigest utilflowcontrol.RequestDigest,
	noteFn func(fs *flowcontrolv1.FlowSchema, pl *flowcontrolv1.PriorityLevelConfiguration, flowDistinguisher string),
	workEstimator func() fcrequest.WorkEstimate,
	queueNoteFn fq.QueueNoteFn,
	execFn func(),
) {
	k := c.getCall()
	defer c.putCall(k)
	k.ctx, k.noteFn, k.estimator, k.queueNote = ctx, noteFn, workEstimator, queueNoteFn
	setRequest(&k.req, &requestDigest)
	t, err := c.apf.Wait(ctx, &k.req, k.work)
	if err != nil {
		var rej *apf.RejectedError
		if !errors.As(err, &rej) {
			klog.ErrorS(err, "flowcontrol: request not admitted")
			return
		}
		if upstreamMetrics && !rej.Classification.Exempt {
			// Upstream labels a request that left its queue (time-out) as
			// execute="true", one rejected on arrival as "false".
			observeQueueWait(ctx, rej.Classification.PriorityLevel, rej.Classification.FlowSchema, rej.Reason == fairqueue.ReasonTimeOut, k.wait)
		}
		return
	}
	// The observer's Finished event observes the execution duration.
	defer finish(ctx, t)
	if upstreamMetrics {
		cl := t.Classification()
		if !cl.Exempt {
			observeQueueWait(ctx, cl.PriorityLevel, cl.FlowSchema, true, k.wait)
		}
		metrics.AddDispatch(ctx, cl.PriorityLevel, cl.FlowSchema)
	}
	execFn()
}

// finish ends an execution. One whose request was cancelled (its client
// went away: the wait context upstream's filter passes derives from the
// request's) is finished as abandoned, so that with Options.Adaptive its
// cut-short execution is no latency sample. Only a cancellation counts:
// that context's own deadline is the queue-wait limit (a quarter of the
// request's time), which a long execution passes while its client is
// still there.
func finish(ctx context.Context, t apf.Ticket) {
	if errors.Is(ctx.Err(), context.Canceled) {
		t.FinishAbandoned()
		return
	}
	t.Finish()
}

func observeQueueWait(ctx context.Context, pl, fs string, execute bool, d time.Duration) {
	metrics.ObserveWaitingDuration(ctx, pl, fs, strconv.FormatBool(execute), d)
	endpointsrequest.TrackAPFQueueWaitLatency(ctx, d)
}

// setRequest fills r from an upstream request digest.
func setRequest(r *apf.Request, rd *utilflowcontrol.RequestDigest) {
	r.User = apf.User{}
	if rd.User != nil {
		r.User = apf.User{Name: rd.User.GetName(), Groups: rd.User.GetGroups()}
	}
	r.Info = apf.RequestInfo{}
	if ri := rd.RequestInfo; ri != nil {
		r.Info = apf.RequestInfo{
			IsResourceRequest: ri.IsResourceRequest, Path: ri.Path, Verb: ri.Verb,
			APIPrefix: ri.APIPrefix, APIGroup: ri.APIGroup, APIVersion: ri.APIVersion,
			Namespace: ri.Namespace, Resource: ri.Resource, Subresource: ri.Subresource, Name: ri.Name,
			FieldSelector: ri.FieldSelector, LabelSelector: ri.LabelSelector,
		}
	}
}

// AdjustBorrowing runs the borrowing adjustment at now. Run calls it
// every Options.AdjustPeriod; call it yourself to drive a fake clock.
func (c *Controller) AdjustBorrowing(now time.Time) { c.apf.AdjustBorrowing(now) }

// Install registers upstream's three debug endpoints on c, unlisted as
// upstream's are: dump_priority_levels, dump_queues and dump_requests
// (with ?includeRequestDetails=1), in upstream's text formats.
func (c *Controller) Install(m *mux.PathRecorderMux) {
	h := c.apf.DebugHandler()
	m.UnlistedHandle(apf.DebugPathPriorityLevels, h)
	m.UnlistedHandle(apf.DebugPathQueues, h)
	m.UnlistedHandle(apf.DebugPathRequests, h)
}

// Dump returns a snapshot of every priority level, as the debug
// endpoints show it.
func (c *Controller) Dump() []apf.LevelDump { return c.apf.Dump() }
