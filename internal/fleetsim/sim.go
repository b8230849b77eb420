package fleetsim

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/fairslice/fairslice/apf"
	"github.com/fairslice/fairslice/apf/fleet"
	"github.com/fairslice/fairslice/fairqueue"
	"github.com/fairslice/fairslice/internal/simclock"
)

// sim is one run of Run. Everything but the controllers runs in Run's
// goroutine; a goroutine per request calls Wait, and Run waits for it at
// every point where the request's fate could be decided, so that exactly
// one goroutine acts at a time, in an order fixed by the configuration.
// epoch is the simulation's time 0; any fixed instant would do.
var epoch = time.Unix(1_800_000_000, 0).UTC()

type sim struct {
	cfg      Config
	clock    *simclock.Clock
	end      time.Time
	from     time.Time // the end of the warmup: what is measured starts
	rng      *rand.Rand
	replicas []*replica
	clients  []*client
	flows    []flowStats
	byReq    map[*apf.Request]*request
	pending  []*request // queued requests dispatched in the current event
	waiting  map[*request]bool
	next     int                // the balancer's turn
	period   time.Duration      // of the Coordinators' rounds
	store    *fleet.MemoryStore // the Coordinators'; nil without
	keys     []apf.FlowKey      // each flow's, as the replicas classify it
	stats    totals
}

// replica is one server: its controller and the seats of the level.
type replica struct {
	sim     *sim
	index   int
	c       *apf.Controller
	limit   int       // the level's current limit, in seats
	since   time.Time // when limit took effect
	seatSec float64   // the level's seats × seconds so far
	maxSeat uint64
	limits  apf.Limits // the level's, as last reported
	// serverSeats is the most seats the level may hold here under
	// upstream's borrowing: what coordination cannot move.
	serverSeats int

	coord  *coordination       // nil unless Config.Coordinate or GoAwayTargeted
	goAway *apf.TargetedGoAway // nil unless GoAwayTargeted

	used      float64 // seat-seconds executed
	executing int     // seats
	waiting   int     // seats of queued requests
	inflight  int     // requests waiting or executing
}

// setLimit records a new current limit of the level at now.
func (r *replica) setLimit(now time.Time, l apf.Limits) {
	r.account(now)
	r.limit, r.maxSeat = l.Current, l.MaxSeats
}

// account adds the level's measured seat-seconds up to now.
func (r *replica) account(now time.Time) {
	if !r.since.IsZero() {
		r.seatSec += float64(r.limit) * measured(r.sim.from, r.since, now).Seconds()
	}
	r.since = now
}

// measured is the part of [start, end) after from.
func measured(from, start, end time.Time) time.Duration {
	if start.Before(from) {
		start = from
	}
	return max(0, end.Sub(start))
}

// client is one source of requests of a flow, with the connection it
// holds when it keeps one.
type client struct {
	flow   int
	rate   float64
	sticky bool // keeps a connection: pinned, or BalancerPinned
	conn   int  // the replica its connection is on; -1: none open
	conns  int  // connections opened so far, the current one's number
	// workers: a closed loop (Flow.Workers): each answer sends the next
	// request, not the Poisson process of rate.
	workers bool
}

// flowStats is what happened to one flow's requests.
type flowStats struct {
	requests, dispatched, rejected int
	seatSeconds                    float64
	lands                          map[int]bool // replicas it was connected to at the start
}

// totals are the fleet's counts.
type totals struct {
	requests, rejected, rejectedWhileIdle, goaways int
	rejectedWhileServersIdle                       int
}

// Run simulates cfg: every replica runs an apf.Controller on the
// simulation's clock, the clients send their requests through the
// balancer, and the result reports each flow's share of the fleet's seats
// against its max-min fair share. The same Config always gives the same
// Result. Run fails, naming every bad field, on an invalid Config, or if a
// flow's requests are not classified to Config.Level.
func Run(cfg Config) (*Result, error) {
	cfg = cfg.defaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &sim{
		cfg: cfg, clock: simclock.New(epoch), rng: rand.New(rand.NewPCG(cfg.Seed, 0xf1ee7)),
		byReq: map[*apf.Request]*request{}, waiting: map[*request]bool{},
	}
	s.end = s.clock.Now().Add(cfg.Duration)
	s.from = s.clock.Now().Add(cfg.Warmup)
	if err := s.start(); err != nil {
		return nil, err
	}
	s.clock.Run(s.end, s.settle)
	s.stop()
	return s.result()
}

// start builds the replicas and the clients and schedules the first
// arrivals.
func (s *sim) start() error {
	var errs []error
	for i := range s.cfg.Replicas {
		rep := &replica{sim: s, index: i}
		c, err := s.newController(rep)
		if err != nil {
			for _, r := range s.replicas {
				r.c.Close()
			}
			return fmt.Errorf("fleetsim: replica %d: %w", i, err)
		}
		rep.c = c
		rep.serverSeats = serverSeats(c.Limits(), s.cfg.Level)
		s.replicas = append(s.replicas, rep)
	}
	s.flows = make([]flowStats, len(s.cfg.Flows))
	for fi, f := range s.cfg.Flows {
		req := flowRequest(f.Name)
		cl := s.replicas[0].c.Classify(&req)
		s.keys = append(s.keys, apf.FlowKey{PriorityLevel: cl.PriorityLevel, FlowSchema: cl.FlowSchema, Distinguisher: cl.Distinguisher})
		if cl.PriorityLevel != s.cfg.Level {
			errs = append(errs, fmt.Errorf("fleetsim: Config.Flows[%d] (%q) is classified to priority level %q, not Config.Level %q",
				fi, f.Name, cl.PriorityLevel, s.cfg.Level))
		}
		s.flows[fi].lands = map[int]bool{}
		for range f.Clients {
			cl := &client{flow: fi, rate: f.Rate / float64(f.Clients), conn: -1}
			switch {
			case f.Pinned:
				cl.sticky, cl.conn = true, f.Replica
			case s.cfg.Balancer == BalancerPinned:
				cl.sticky, cl.conn = true, s.newConnection()
			}
			if cl.sticky {
				s.flows[fi].lands[cl.conn] = true
			}
			s.clients = append(s.clients, cl)
			if f.Workers > 0 {
				cl.workers = true
				for range f.Workers {
					s.clock.AfterFunc(0, func() { s.arrive(cl) })
				}
				continue
			}
			s.scheduleArrival(cl)
		}
	}
	if err := errors.Join(errs...); err != nil {
		for _, r := range s.replicas {
			r.c.Close()
		}
		return err
	}
	if s.cfg.Coordinate || s.cfg.GoAway.Mode == GoAwayTargeted {
		s.startCoordination()
	}
	return nil
}

// flowRequest is the request every client of the flow sends: a get by a
// user in system:authenticated, as the bootstrap configuration's
// global-default FlowSchema matches.
func flowRequest(user string) apf.Request {
	return apf.Request{
		User: apf.User{Name: user, Groups: []string{"system:authenticated"}},
		Info: apf.RequestInfo{
			IsResourceRequest: true, Path: "/api/v1/namespaces/default/configmaps/x", Verb: "get",
			APIPrefix: "api", APIVersion: "v1", Namespace: "default", Resource: "configmaps", Name: "x",
		},
	}
}

// scheduleArrival schedules cl's next request, a Poisson process's next
// arrival, if it comes before the end.
func (s *sim) scheduleArrival(cl *client) {
	if cl.rate <= 0 {
		return
	}
	d := time.Duration(s.rng.ExpFloat64() / cl.rate * float64(time.Second))
	if s.clock.Now().Add(d).Before(s.end) {
		s.clock.AfterFunc(d, func() { s.arrive(cl) })
	}
}

// arrive sends one request of cl and, in an open loop, schedules the
// next.
func (s *sim) arrive(cl *client) {
	if !cl.workers {
		s.scheduleArrival(cl)
	} else if !s.clock.Now().Before(s.end) {
		return
	}
	f := &s.cfg.Flows[cl.flow]
	rq := &request{client: cl, req: flowRequest(f.Name), ctx: newWaitCtx(), done: make(chan waitResult, 1)}
	rq.replica = s.replicas[s.route(cl)]
	rq.conn, rq.arrived = cl.conns, s.clock.Now()
	rq.work, rq.want = seatsWork(f.Seats), f.Seats
	if m := int(rq.replica.maxSeat); m > 0 {
		rq.want = min(rq.want, m)
	}
	if cl.sticky && s.cfg.GoAway.Mode == GoAwayRandom && s.rng.Float64() < s.cfg.GoAway.Chance {
		cl.conn = -1 // the response carries a GOAWAY: the next request reconnects
		s.stats.goaways++
	}
	if rq.counted = s.measuring(); rq.counted {
		s.stats.requests++
		s.flows[cl.flow].requests++
	}
	s.byReq[&rq.req] = rq
	s.submit(rq)
}

// seatsWork is the work estimate of a request of n seats.
func seatsWork(n int) apf.WorkFunc {
	return func(_ *apf.Classification, maxSeats uint64) fairqueue.WorkEstimate {
		seats := uint64(n)
		if maxSeats > 0 {
			seats = min(seats, maxSeats)
		}
		return fairqueue.WorkEstimate{InitialSeats: seats}
	}
}

// submit has rq's replica decide on it: it is dispatched or rejected at
// once, or left waiting with its wait limit scheduled.
func (s *sim) submit(rq *request) {
	rep := rq.replica
	rep.inflight++
	go func() {
		t, err := rep.c.Wait(rq.ctx, &rq.req, rq.work)
		rq.done <- waitResult{t, err}
	}()
	select {
	case res := <-rq.done:
		s.ended(rq, res)
	case <-rq.ctx.blocked:
		rq.queued = true
		s.waiting[rq] = true
		rep.waiting += rq.want
		rq.expiry = s.clock.AfterFunc(s.cfg.WaitLimit, func() { s.expire(rq) })
	}
}

// expire ends the wait of rq, still queued at its wait limit.
func (s *sim) expire(rq *request) {
	rq.expired = true
	rq.ctx.expire()
	s.ended(rq, <-rq.done)
}

// settle collects the answers of the queued requests the last event
// dispatched.
func (s *sim) settle() {
	for len(s.pending) > 0 {
		rq := s.pending[0]
		s.pending = s.pending[1:]
		rq.expiry.Stop()
		s.ended(rq, <-rq.done)
	}
}

// ended takes Wait's answer for rq: it executes, or it is rejected.
func (s *sim) ended(rq *request, res waitResult) {
	rep := rq.replica
	if rq.queued {
		delete(s.waiting, rq)
		rep.waiting -= rq.want
	}
	fs := &s.flows[rq.client.flow]
	delete(s.byReq, &rq.req)
	if res.err != nil {
		rep.inflight--
		var closed *apf.ClosedError
		if errors.As(res.err, &closed) {
			return // the run ended
		}
		s.rejected(rq)
		s.askGoAway(rq)
		s.respond(rq, false)
		return
	}
	s.askGoAway(rq)
	rq.ticket = res.ticket
	rep.executing += rq.seats
	if rq.counted {
		fs.dispatched++
	}
	exec := s.cfg.Flows[rq.client.flow].Execution
	// The execution is accounted now, its part inside the measured time.
	ss := float64(rq.seats) * measured(s.from, rq.start, minTime(rq.start.Add(exec), s.end)).Seconds()
	rep.used += ss
	fs.seatSeconds += ss
	s.clock.AfterFunc(exec, func() { s.finish(rq) })
}

// rejected counts the rejection of rq.
func (s *sim) rejected(rq *request) {
	if !rq.counted {
		return
	}
	s.flows[rq.client.flow].rejected++
	s.stats.rejected++
	if s.fleetIdle() >= idleFraction {
		s.stats.rejectedWhileIdle++
	}
	if s.serversIdle() >= idleFraction {
		s.stats.rejectedWhileServersIdle++
	}
}

// measuring reports whether the warmup is over.
func (s *sim) measuring() bool { return !s.clock.Now().Before(s.from) }

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// idleFraction is the share of the fleet's seats idle at which a
// rejection counts as one while idle.
const idleFraction = 0.3

// fleetIdle returns the fraction of the fleet's seats of the level (the
// replicas' current limits) not executing (0 if it has none).
func (s *sim) fleetIdle() float64 { return s.idle(func(r *replica) int { return r.limit }) }

// serversIdle returns the fraction of the fleet's server seats of the
// level (replica.serverSeats) not executing (0 if it has none).
func (s *sim) serversIdle() float64 { return s.idle(func(r *replica) int { return r.serverSeats }) }

// idle returns the fraction of the replicas' seats, as seatsOf counts
// them, not executing (0 if they have none, never below 0).
func (s *sim) idle(seatsOf func(*replica) int) float64 {
	seats, busy := 0, 0
	for _, r := range s.replicas {
		seats += seatsOf(r)
		busy += r.executing
	}
	if seats == 0 {
		return 0
	}
	return max(0, float64(seats-busy)/float64(seats))
}

// serverSeats is the most seats level may hold on a server whose levels'
// limits are limits, under upstream's borrowing: its nominal limit plus
// the seats every other level may lend, within its own borrowing limit
// (Upper). Only the configuration moves it; coordination does not.
func serverSeats(limits map[string]apf.Limits, level string) int {
	own := limits[level]
	seats := own.Nominal
	for name, l := range limits {
		if name != level {
			seats += l.Lendable
		}
	}
	return min(seats, own.Upper)
}

// finish ends rq's execution.
func (s *sim) finish(rq *request) {
	rq.ticket.Finish()
	rq.replica.executing -= rq.seats
	rq.replica.inflight--
	s.respond(rq, true)
}

// askGoAway asks rq's replica, as the middleware does once Wait has
// answered, whether rq's response carries a GOAWAY.
func (s *sim) askGoAway(rq *request) {
	g := rq.replica.goAway
	rq.goAway = g != nil && rq.client.sticky && g.Closes(s.clock.Now(), rq.arrived, s.keys[rq.client.flow])
}

// respond answers rq, served (ok) or rejected: a response carrying a
// GOAWAY closes the connection rq came on, and if that is still its
// client's, the client's next request reconnects; a closed-loop worker
// sends its next request.
func (s *sim) respond(rq *request, ok bool) {
	if rq.client.workers {
		cl, wait := rq.client, ClosedLoopRetry
		if ok {
			wait = 0
		}
		s.clock.AfterFunc(wait, func() { s.arrive(cl) })
	}
	if !rq.goAway || rq.conn != rq.client.conns || rq.client.conn < 0 {
		return
	}
	rq.client.conn = -1
	s.stats.goaways++
}

// stop ends the run at its end: the controllers are closed and the
// requests still waiting collected.
func (s *sim) stop() {
	for rq := range s.waiting {
		rq.expired = true // Close ends it; the simulator collects it below
	}
	for _, r := range s.replicas {
		r.account(s.end)
		r.c.Close()
	}
	for rq := range s.waiting {
		<-rq.done
	}
	s.waiting = nil
}
