package main

import (
	"cmp"
	"flag"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/fairslice/fairslice/fairqueue/scenario"
	"github.com/fairslice/fairslice/flowschema"
	"github.com/fairslice/fairslice/kube/internal/cliflag"
	"github.com/fairslice/fairslice/seats"
)

// replayWaitLimit is how long a request may wait in a queue in the replay:
// upstream's limit for a request with the default 60 s timeout.
const replayWaitLimit = 15 * time.Second

// replayFlags are simulate's flags for replaying an audit log.
type replayFlags struct {
	auditLog          string
	serverConcurrency cliflag.Concurrency
	defaultDuration   time.Duration
	config            configFlags
}

func (r *replayFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&r.auditLog, "audit-log", "", "replay the requests of kube-apiserver audit log `FILE` through APF")
	r.serverConcurrency.N = 600
	fs.Var(&r.serverConcurrency, "server-concurrency", "with --audit-log: the server's concurrency limit `N`; with --backend-slots: N, or auto for the adaptive total (ceiling 600)")
	fs.DurationVar(&r.defaultDuration, "default-duration", 10*time.Millisecond, "with --audit-log: the execution time of a request whose completion the log lacks")
	r.config.register(fs)
}

// replayStats are the outcomes of a priority level's or a flow's requests.
type replayStats struct {
	PriorityLevel    string `json:"priorityLevel"`
	FlowSchema       string `json:"flowSchema,omitempty"`
	Distinguisher    string `json:"distinguisher,omitempty"`
	ConcurrencyLimit *int   `json:"concurrencyLimit,omitempty"`
	Requests         int    `json:"requests"`
	Dispatched       int    `json:"dispatched"`
	Rejected         int    `json:"rejected"`
	TimedOut         int    `json:"timedOut"`
	WaitP50          string `json:"waitP50"`
	WaitP99          string `json:"waitP99"`
	WaitMax          string `json:"waitMax"`
	waits            []time.Duration
}

func (s *replayStats) add(r scenario.Result, arrival time.Duration) {
	s.Requests++
	switch {
	case r.Outcome == scenario.OutcomeDispatched:
		s.Dispatched++
		s.waits = append(s.waits, r.DispatchedAt-arrival)
	case r.Reason == scenario.ReasonTimeOut:
		s.TimedOut++
	default:
		s.Rejected++
	}
}

// finish fills in the wait percentiles (nearest rank).
func (s *replayStats) finish() {
	slices.Sort(s.waits)
	rank := func(p float64) string {
		if len(s.waits) == 0 {
			return "0s"
		}
		i := int(float64(len(s.waits))*p+0.999999) - 1
		return s.waits[max(0, min(i, len(s.waits)-1))].String()
	}
	s.WaitP50, s.WaitP99, s.WaitMax = rank(0.50), rank(0.99), rank(1)
}

// replayResult is the -o json shape of simulate --audit-log.
type replayResult struct {
	Requests int            `json:"requests"`
	Skipped  int            `json:"skipped"`
	Levels   []*replayStats `json:"levels"`
	Flows    []*replayStats `json:"flows"`
	// runs holds each level's scenario and results, by level name, for
	// the picture.
	runs map[string]levelRun
}

// levelRun is one level's replay.
type levelRun struct {
	scenario *scenario.Scenario
	results  []scenario.Result
}

// run implements simulate --audit-log.
func (r *replayFlags) run(out outputFormat, pic simulatePictureFlags, stdout, stderr io.Writer) int {
	if r.serverConcurrency.N <= 0 || r.serverConcurrency.Auto {
		return usageError(stderr, "simulate", "--server-concurrency must be a positive number with --audit-log")
	}
	cfg, err := r.config.load(stderr, "simulate")
	if err != nil {
		return fail(stderr, "simulate", err)
	}
	reqs, skipped, problems, err := readAuditLog(r.auditLog)
	for _, p := range problems {
		fmt.Fprintf(stderr, "fairslice simulate: skipped %s\n", p)
	}
	if err != nil {
		return failure(stderr, "simulate", err)
	}
	res, err := replay(cfg, r.serverConcurrency.N, r.defaultDuration, reqs)
	if err != nil {
		return failure(stderr, "simulate", err)
	}
	res.Skipped = skipped
	if err := out.write(stdout, res, res.writeText); err != nil {
		return failure(stderr, "simulate", err)
	}
	if !pic.wanted() {
		return exitOK
	}
	// The picture shows the first level of the report (the one with the
	// most rejections and time-outs) that has a concurrency limit; an
	// exempt level has no queues to draw.
	for _, l := range res.Levels {
		if l.ConcurrencyLimit != nil {
			run := res.runs[l.PriorityLevel]
			return pic.draw("priority level "+l.PriorityLevel, run.scenario, false, run.results, stderr)
		}
	}
	fmt.Fprintln(stderr, "fairslice simulate: no picture: every request of the audit log is exempt")
	return exitFailure
}

// replay classifies reqs and runs each non-exempt level's requests through
// a queue set configured as the level, on the audit log's clock.
func replay(cfg *flowschema.Config, serverConcurrency int, defaultDuration time.Duration, reqs []auditRequest) (*replayResult, error) {
	c, err := flowschema.Compile(cfg)
	if err != nil {
		return nil, err
	}
	limits, err := seats.ComputeLimits(serverConcurrency, c.PriorityLevels())
	if err != nil {
		return nil, err
	}
	current := map[string]int{}
	for i, cl := range currentLimits(limits, serverConcurrency) {
		current[limits[i].Name] = cl
	}
	t0 := reqs[0].Arrival
	type member struct {
		req      int
		decision flowschema.Decision
	}
	byLevel := map[string][]member{}
	var order []string
	for i := range reqs {
		d := c.Classify(&reqs[i].Request)
		if _, ok := byLevel[d.PriorityLevel]; !ok {
			order = append(order, d.PriorityLevel)
		}
		byLevel[d.PriorityLevel] = append(byLevel[d.PriorityLevel], member{i, d})
	}
	res := &replayResult{Requests: len(reqs), Levels: []*replayStats{}, Flows: []*replayStats{}, runs: map[string]levelRun{}}
	flows := map[[3]string]*replayStats{}
	for _, name := range order {
		members := byLevel[name]
		pl := &c.PriorityLevels()[members[0].decision.LevelIndex]
		s := &scenario.Scenario{Config: levelConfig(pl, current[name])}
		for k, m := range members {
			s.Requests = append(s.Requests, replayRequest(fmt.Sprint(k), &reqs[m.req], t0, m.decision.FlowHash, defaultDuration))
		}
		level := &replayStats{PriorityLevel: name}
		var results []scenario.Result
		if members[0].decision.Exempt {
			for range members {
				results = append(results, scenario.Result{Outcome: scenario.OutcomeDispatched, Queue: -1})
			}
			for k := range results {
				results[k].DispatchedAt = s.Requests[k].Arrival
			}
		} else {
			limit := current[name]
			level.ConcurrencyLimit = &limit
			results, err = runEngine(s, scenario.NewEngine())
			if err != nil {
				return nil, fmt.Errorf("priority level %q: %w", name, err)
			}
		}
		for k, m := range members {
			level.add(results[k], s.Requests[k].Arrival)
			key := [3]string{name, m.decision.FlowSchema, m.decision.Distinguisher}
			f := flows[key]
			if f == nil {
				f = &replayStats{PriorityLevel: name, FlowSchema: m.decision.FlowSchema, Distinguisher: m.decision.Distinguisher}
				flows[key] = f
				res.Flows = append(res.Flows, f)
			}
			f.add(results[k], s.Requests[k].Arrival)
		}
		res.Levels = append(res.Levels, level)
		res.runs[name] = levelRun{s, results}
	}
	for _, s := range append(res.Levels, res.Flows...) {
		s.finish()
	}
	top := func(a, b *replayStats) int {
		return cmp.Or(cmp.Compare(b.Rejected+b.TimedOut, a.Rejected+a.TimedOut), cmp.Compare(b.Requests, a.Requests),
			cmp.Compare(a.PriorityLevel, b.PriorityLevel), cmp.Compare(a.FlowSchema, b.FlowSchema), cmp.Compare(a.Distinguisher, b.Distinguisher))
	}
	slices.SortFunc(res.Levels, top)
	slices.SortFunc(res.Flows, top)
	return res, nil
}

// replayRequest is an audit log's request in a level's scenario, under
// the model simulate --help states.
func replayRequest(id string, ar *auditRequest, t0 time.Time, hash uint64, defaultDuration time.Duration) scenario.Request {
	dur := ar.Duration
	switch {
	case ar.Request.Verb == "watch":
		dur = 0 // seats are held only until the watch is initialized
	case !ar.Complete:
		dur = defaultDuration
	}
	return scenario.Request{ID: id, Arrival: ar.Arrival.Sub(t0), Hash: hash, InitialSeats: 1, Duration: max(dur, 0), WaitLimit: replayWaitLimit}
}

// levelConfig is the queue set of a limited priority level: its queuing
// (or no queues for limitResponse Reject) with concurrency limit cl.
func levelConfig(pl *flowschema.PriorityLevelConfiguration, cl int) scenario.Config {
	c := scenario.Config{ConcurrencyLimit: cl}
	if l := pl.Spec.Limited; l != nil && l.LimitResponse.Queuing != nil && l.LimitResponse.Type == "Queue" {
		q := l.LimitResponse.Queuing
		c.Queues, c.HandSize, c.QueueLengthLimit = int(q.Queues), int(q.HandSize), int(q.QueueLengthLimit)
	}
	return c
}

func (r *replayResult) writeText(w io.Writer) error {
	fmt.Fprintf(w, "%d requests replayed (%d lines skipped); levels and flows with the most 429s and time-outs first\n\n", r.Requests, r.Skipped)
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "LEVEL\tLIMIT\tREQUESTS\tDISPATCHED\tREJECTED\tTIMED OUT\tWAIT P50\tWAIT P99\tWAIT MAX")
	for _, s := range r.Levels {
		limit := "exempt"
		if s.ConcurrencyLimit != nil {
			limit = fmt.Sprint(*s.ConcurrencyLimit)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\t%s\n", s.PriorityLevel, limit, s.Requests, s.Dispatched, s.Rejected, s.TimedOut, s.WaitP50, s.WaitP99, s.WaitMax)
	}
	fmt.Fprintln(tw, "\t\t\t\t\t\t\t\t")
	fmt.Fprintln(tw, "FLOW (FLOWSCHEMA/DISTINGUISHER)\tLEVEL\tREQUESTS\tDISPATCHED\tREJECTED\tTIMED OUT\tWAIT P50\tWAIT P99\tWAIT MAX")
	for _, s := range r.Flows {
		fmt.Fprintf(tw, "%s/%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\t%s\n", s.FlowSchema, orDash(s.Distinguisher), s.PriorityLevel, s.Requests, s.Dispatched, s.Rejected, s.TimedOut, s.WaitP50, s.WaitP99, s.WaitMax)
	}
	return tw.Flush()
}
