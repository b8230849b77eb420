package backendsim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/fairslice/fairslice/apf"
	"github.com/fairslice/fairslice/fairqueue"
	"github.com/fairslice/fairslice/flowschema"
	"github.com/fairslice/fairslice/internal/simclock"
)

// Change sets the backend's slots to Slots at At after the start.
type Change struct {
	At    time.Duration
	Slots int
}

// Config describes one run. Zero fields take the defaults named beside
// them.
type Config struct {
	// Slots is the backend's capacity: requests it serves at once.
	// Required.
	Slots int
	// Changes change the capacity during the run, in time order.
	Changes []Change
	// Work is how long a request holds a slot (20 ms).
	Work time.Duration
	// Users is the number of users (flows), all in one priority level (4).
	Users int
	// Load is the offered load as a multiple of the initial capacity,
	// Slots/Work requests per second, split evenly among the users, each
	// a Poisson process (2).
	Load float64
	// Timeout is the client's timeout: a response later than Timeout
	// after arrival is not goodput. The wait limit in APF's queues is a
	// quarter of it, as upstream's (1 s).
	Timeout time.Duration
	// Duration of the run (20 s).
	Duration time.Duration
	// Static is Options.ServerConcurrencyLimit: the total with Adaptive
	// nil, the default ceiling with it. Required.
	Static int
	// Adaptive is Options.Adaptive.
	Adaptive *apf.AdaptiveOptions
	// Seed seeds the arrivals.
	Seed uint64
	// Sample is the spacing of Result.Trace (100 ms).
	Sample time.Duration
	// Noise, when set, makes each request's time in its slot vary as on a
	// busy machine; nil: every request takes exactly Work.
	Noise *Noise
}

// Noise is seeded execution-time noise: a request holds its slot for
// Work·exp(Sigma·z), z standard normal, plus, with probability
// StallProb, a stall drawn from an exponential distribution of mean
// StallMean (the process descheduled, a timer fired late). The draws
// come from their own PCG stream seeded with Config.Seed, so adding noise
// leaves the arrivals unchanged.
type Noise struct {
	Sigma     float64
	StallProb float64
	StallMean time.Duration
}

// MeasuredNoise returns noise resembling what was measured on the shared 2-core
// development machine with the example server's backend idle (100 ms
// window means of 20 ms of work between 20.5 and 49.8 ms; see
// docs/notes/2026-12-adaptive-total-noise.md).
func MeasuredNoise() *Noise {
	return &Noise{Sigma: 0.1, StallProb: 0.05, StallMean: 100 * time.Millisecond}
}

// hold is how long one request holds its slot.
func (s *sim) hold() time.Duration {
	n := s.cfg.Noise
	if n == nil {
		return s.cfg.Work
	}
	d := float64(s.cfg.Work) * math.Exp(n.Sigma*s.noise.NormFloat64())
	if s.noise.Float64() < n.StallProb {
		d += s.noise.ExpFloat64() * float64(n.StallMean)
	}
	return time.Duration(d)
}

// Point is the state at one instant of the run.
type Point struct {
	At time.Duration
	// Total is the controller's total; Limit the concurrency limit of the
	// users' level; InBackend the requests holding or waiting for a slot;
	// Slots the backend's capacity.
	Total, Limit, InBackend, Slots int
}

// Result is the outcome of a run.
type Result struct {
	// Offered requests arrived; Completed were served, Good within the
	// timeout; Rejected were refused by APF (any reason, time-outs in its
	// queues included).
	Offered, Completed, Good, Rejected int
	// Goodput is Good per second of the run.
	Goodput float64
	// LatencyP50 and LatencyP99 are of completed requests, arrival to
	// response (nearest rank).
	LatencyP50, LatencyP99 time.Duration
	Trace                  []Point
}

// SettledAfter returns how long after from the total entered [lo, hi] to
// stay there until to (exclusive), or false if it does not.
func (r *Result) SettledAfter(from, to time.Duration, lo, hi int) (time.Duration, bool) {
	settled, ok := time.Duration(0), false
	for _, p := range r.Trace {
		if p.At < from || p.At >= to {
			continue
		}
		in := p.Total >= lo && p.Total <= hi
		switch {
		case in && !ok:
			settled, ok = p.At-from, true
		case !in:
			ok = false
		}
	}
	return settled, ok
}

func (c *Config) defaults() (Config, error) {
	d := *c
	var errs []error
	if d.Slots <= 0 {
		errs = append(errs, fmt.Errorf("backendsim: Config.Slots=%d must be positive", d.Slots))
	}
	if d.Static <= 0 {
		errs = append(errs, fmt.Errorf("backendsim: Config.Static=%d must be positive", d.Static))
	}
	for i, ch := range d.Changes {
		if ch.Slots <= 0 || ch.At < 0 || (i > 0 && ch.At < d.Changes[i-1].At) {
			errs = append(errs, fmt.Errorf("backendsim: Config.Changes[%d]=%+v must have positive slots, in time order", i, ch))
		}
	}
	if n := d.Noise; n != nil && (!(n.Sigma >= 0) || !(n.StallProb >= 0 && n.StallProb <= 1) || n.StallMean < 0) {
		errs = append(errs, fmt.Errorf("backendsim: Config.Noise=%+v must have Sigma >= 0, StallProb in [0, 1] and StallMean >= 0", *n))
	}
	if d.Work < 0 || d.Users < 0 || d.Load < 0 || d.Timeout < 0 || d.Duration < 0 || d.Sample < 0 {
		errs = append(errs, fmt.Errorf("backendsim: Config Work=%v Users=%d Load=%v Timeout=%v Duration=%v Sample=%v must not be negative",
			d.Work, d.Users, d.Load, d.Timeout, d.Duration, d.Sample))
	}
	def := func(p *time.Duration, v time.Duration) {
		if *p == 0 {
			*p = v
		}
	}
	def(&d.Work, 20*time.Millisecond)
	def(&d.Timeout, time.Second)
	def(&d.Duration, 20*time.Second)
	def(&d.Sample, 100*time.Millisecond)
	if d.Users == 0 {
		d.Users = 4
	}
	if d.Load == 0 {
		d.Load = 2
	}
	return d, errors.Join(errs...)
}

// configYAML is the run's APF configuration: one queuing level for the
// users, distinguished by user; New adds the mandatory levels.
const configYAML = `
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: users}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 100
    limitResponse:
      type: Queue
      queuing: {queues: 16, handSize: 4, queueLengthLimit: 50}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: users}
spec:
  priorityLevelConfiguration: {name: users}
  matchingPrecedence: 500
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects: [{kind: Group, group: {name: users}}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], namespaces: ["*"], clusterScope: true}]
`

// request is one simulated request.
type request struct {
	req     apf.Request
	arrival time.Time
	cancel  context.CancelFunc
	settle  chan struct{}
	res     chan waitResult
	taken   bool // res consumed
	state   int  // waiting, dispatched, rejected
}

const (
	stWaiting = iota
	stDispatched
	stRejected
)

type waitResult struct {
	tk  apf.Ticket
	err error
}

// sim is one run's state. The driver goroutine owns it; Wait goroutines
// touch it only through the observer while holding a level's lock, with
// the driver waiting for them.
type sim struct {
	cfg Config
	ev  *simclock.Clock
	c   *apf.Controller
	rnd *rand.Rand
	// noise draws Config.Noise, apart from the arrivals.
	noise *rand.Rand

	mu    sync.Mutex // byReq, for the observer
	byReq map[*apf.Request]*request
	limit int // the users' level's current limit

	slots, busy int
	fifo        []*request // waiting for a slot, inside the handler
	res         Result
	latencies   []time.Duration
	all         []*request
	err         error
}

// observer tells the model about dispatches and settles arrivals.
type observer struct {
	apf.NopObserver
	s *sim
}

func (o observer) lookup(ev apf.RequestEvent) *request {
	o.s.mu.Lock()
	defer o.s.mu.Unlock()
	return o.s.byReq[ev.Request]
}

func settle(r *request) {
	select {
	case r.settle <- struct{}{}:
	default:
	}
}

func (o observer) Enqueued(ev apf.RequestEvent, _ int) {
	if r := o.lookup(ev); r != nil {
		settle(r)
	}
}

func (o observer) Dispatched(ev apf.RequestEvent) {
	if r := o.lookup(ev); r != nil {
		r.state = stDispatched
		o.s.enterBackend(r)
		settle(r)
	}
}

func (o observer) Rejected(ev apf.RequestEvent, _ fairqueue.Reason) {
	if r := o.lookup(ev); r != nil {
		r.state = stRejected
		settle(r)
	}
}

func (o observer) LevelLimits(pl string, l apf.Limits) {
	if pl == "users" {
		o.s.mu.Lock()
		o.s.limit = l.Current
		o.s.mu.Unlock()
	}
}

// Run simulates cfg on a fake clock and returns what happened. It is
// deterministic: the same Config gives the same Result.
func Run(cfg Config) (Result, error) {
	c, err := cfg.defaults()
	if err != nil {
		return Result{}, err
	}
	objects, err := flowschema.Decode([]byte(configYAML))
	if err != nil {
		return Result{}, err
	}
	s := &sim{cfg: c, ev: simclock.New(time.Unix(0, 0).UTC()), rnd: rand.New(rand.NewPCG(c.Seed, 0x26)),
		noise: rand.New(rand.NewPCG(c.Seed, 0x4e)),
		byReq: map[*apf.Request]*request{}, slots: c.Slots}
	s.c, err = apf.New(objects, apf.Options{ServerConcurrencyLimit: c.Static, Clock: s.ev, Observer: observer{s: s}, Adaptive: c.Adaptive})
	if err != nil {
		return Result{}, err
	}
	start := s.ev.Now()
	rate := c.Load * float64(c.Slots) / c.Work.Seconds() / float64(c.Users)
	for u := range c.Users {
		s.nextArrival(fmt.Sprint("user-", u), rate)
	}
	for _, ch := range c.Changes {
		s.ev.At(start.Add(ch.At), func() { s.setSlots(ch.Slots) })
	}
	for at := time.Duration(0); at < c.Duration; at += c.Sample {
		s.ev.At(start.Add(at), func() { s.sample(at) })
	}
	s.ev.Run(start.Add(c.Duration), nil)
	s.finishRun()
	return s.result(), s.err
}

// nextArrival schedules the user's next request.
func (s *sim) nextArrival(user string, rate float64) {
	gap := time.Duration(s.rnd.ExpFloat64() / rate * float64(time.Second))
	s.ev.AfterFunc(gap, func() {
		if s.err == nil {
			s.arrive(user)
		}
		s.nextArrival(user, rate)
	})
}

// block waits for ch, recording an error after 10 s of real time.
func (s *sim) block(ch <-chan struct{}, what string) bool {
	select {
	case <-ch:
		return true
	case <-time.After(10 * time.Second):
		if s.err == nil {
			s.err = fmt.Errorf("backendsim: %s did not happen within 10s", what)
		}
		return false
	}
}

func (s *sim) arrive(user string) {
	ctx, cancel := context.WithCancel(context.Background())
	r := &request{arrival: s.ev.Now(), cancel: cancel, settle: make(chan struct{}, 1), res: make(chan waitResult, 1)}
	r.req = apf.Request{User: apf.User{Name: user, Groups: []string{"users"}},
		Info: apf.RequestInfo{IsResourceRequest: true, Verb: "get", Resource: "pods", Namespace: "ns"}}
	s.mu.Lock()
	s.byReq[&r.req] = r
	s.mu.Unlock()
	s.all = append(s.all, r)
	s.res.Offered++
	go func() {
		tk, err := s.c.Wait(ctx, &r.req, nil)
		r.res <- waitResult{tk, err}
	}()
	s.block(r.settle, "an arrival's decision")
	s.c.Stats() // every level's lock once: the arrival has completed
	if r.state == stRejected {
		s.res.Rejected++
		s.take(r)
		return
	}
	s.ev.AfterFunc(s.cfg.Timeout/4, func() { s.waitLimit(r) })
}

// take consumes r's Wait result.
func (s *sim) take(r *request) waitResult {
	r.taken = true
	select {
	case w := <-r.res:
		return w
	case <-time.After(10 * time.Second):
		if s.err == nil {
			s.err = errors.New("backendsim: Wait did not return within 10s")
		}
		return waitResult{err: s.err}
	}
}

// waitLimit ends the wait of a request still queued at its limit.
func (s *sim) waitLimit(r *request) {
	if r.state != stWaiting {
		return
	}
	r.cancel()
	if w := s.take(r); w.err == nil {
		s.err = errors.New("backendsim: a cancelled request was admitted")
	}
	s.res.Rejected++
}

// enterBackend gives r a slot or queues it inside the handler.
func (s *sim) enterBackend(r *request) {
	if s.busy < s.slots {
		s.busy++
		s.ev.AfterFunc(s.hold(), func() { s.complete(r) })
		return
	}
	s.fifo = append(s.fifo, r)
}

// complete ends r's work: its slot goes to the next in the handler's
// queue, and its ticket is finished (which may dispatch more).
func (s *sim) complete(r *request) {
	now := s.ev.Now()
	s.busy--
	s.startQueued()
	lat := now.Sub(r.arrival)
	s.res.Completed++
	if lat <= s.cfg.Timeout {
		s.res.Good++
	}
	s.latencies = append(s.latencies, lat)
	if w := s.take(r); w.err == nil {
		w.tk.Finish()
	}
}

func (s *sim) startQueued() {
	for s.busy < s.slots && len(s.fifo) > 0 {
		next := s.fifo[0]
		s.fifo = s.fifo[1:]
		s.busy++
		s.ev.AfterFunc(s.hold(), func() { s.complete(next) })
	}
}

func (s *sim) setSlots(n int) {
	s.slots = n
	s.startQueued()
}

func (s *sim) sample(at time.Duration) {
	s.mu.Lock()
	limit := s.limit
	s.mu.Unlock()
	s.res.Trace = append(s.res.Trace, Point{At: at, Total: s.c.Total(), Limit: limit, InBackend: s.busy + len(s.fifo), Slots: s.slots})
}

// finishRun closes the controller and collects every Wait still open.
func (s *sim) finishRun() {
	s.c.Close()
	for _, r := range s.all {
		if r.taken {
			continue
		}
		if w := s.take(r); w.err == nil {
			w.tk.Finish()
		}
		r.cancel()
	}
	for _, r := range s.all {
		r.cancel()
	}
}

func (s *sim) result() Result {
	res := s.res
	res.Goodput = float64(res.Good) / s.cfg.Duration.Seconds()
	slices.Sort(s.latencies)
	res.LatencyP50, res.LatencyP99 = rank(s.latencies, 0.50), rank(s.latencies, 0.99)
	return res
}

func rank(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[max(0, int(math.Ceil(q*float64(len(sorted))))-1)]
}
