package scenario

import (
	"fmt"
	"strconv"
	"time"

	"github.com/fairslice/fairslice/fairqueue"
)

// epoch is the wall-clock instant that time 0 maps to for fairqueue.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Names in Dump output: the queue set (priority level) is "scenario", each
// request's flow schema is FlowSchemaName and its flow distinguisher is its
// index in Scenario.Requests, in decimal. The kube module's upstream engine
// names requests the same way, so that the two engines' dumps compare
// equal.
const (
	setName = "scenario"
	// FlowSchemaName is the flow schema name of every request in Dump
	// output.
	FlowSchemaName = "scenario-flow"
)

// Inspector is implemented by engines that expose their queue set between
// events, as the engine NewEngine returns does. Tests use it to compare the
// queue set's state (R, each queue's next dispatch R, the robin index,
// Dump) with another engine's after every event.
type Inspector interface {
	QueueSet() *fairqueue.QueueSet
}

// NewEngine returns an Engine that replays a scenario through
// fairqueue.QueueSet, with the upstream-compatible defaults: no behaviour
// fixes enabled, except those a configuration sets (fixStaleQueueRemoval,
// fixZeroLimitAdmission, clampFinalSeatsWithoutQueues). Use a new Engine
// for each run.
func NewEngine() Engine { return &coreEngine{} }

type coreEngine struct {
	s    *Scenario
	h    Host
	qs   *fairqueue.QueueSet
	reqs []fairqueue.Request
}

func coreConfig(c Config) fairqueue.Config {
	return fairqueue.Config{
		Name:             setName,
		Queues:           c.Queues,
		HandSize:         c.HandSize,
		QueueLengthLimit: c.QueueLengthLimit,
		ConcurrencyLimit: c.ConcurrencyLimit,

		FixStaleQueueRemoval:         c.FixStaleQueueRemoval,
		FixZeroLimitAdmission:        c.FixZeroLimitAdmission,
		ClampFinalSeatsWithoutQueues: c.ClampFinalSeatsWithoutQueues,
	}
}

func (e *coreEngine) Start(s *Scenario, h Host) error {
	qs, err := fairqueue.NewQueueSet(coreConfig(s.Config), epoch)
	if err != nil {
		return err
	}
	e.s, e.h, e.qs = s, h, qs
	e.reqs = make([]fairqueue.Request, len(s.Requests))
	for i := range e.reqs {
		e.reqs[i].Value = i
		e.reqs[i].FlowSchema = FlowSchemaName
		e.reqs[i].FlowDistinguisher = strconv.Itoa(i)
	}
	qs.SetDispatchFunc(func(r *fairqueue.Request) { h.Dispatched(r.Value.(int)) })
	return nil
}

func (e *coreEngine) Arrive(now time.Duration, i int) Admission {
	req := &e.s.Requests[i]
	r := &e.reqs[i]
	reason := e.qs.Arrive(epoch.Add(now), r, req.Hash, fairqueue.WorkEstimate{
		InitialSeats:      uint64(req.InitialSeats),
		FinalSeats:        uint64(req.FinalSeats),
		AdditionalLatency: req.AdditionalLatency,
	})
	if reason != "" {
		return Admission{Queue: -1, Rejected: true, Reason: Reason(reason)}
	}
	return Admission{Queue: r.Queue()}
}

func (e *coreEngine) Complete(now time.Duration, i int) {
	r := &e.reqs[i]
	// Schedule the final-seat release before finishing, so that it precedes
	// the completions of the requests this Finish dispatches, as upstream's
	// clock event precedes them.
	lat := r.Work().AdditionalLatency
	if lat > 0 {
		e.h.Schedule(addSat(now, lat), i)
	}
	_, lingering := e.qs.Finish(epoch.Add(now), r)
	if lingering != (lat > 0) {
		e.h.Fail(fmt.Errorf("request %q: Finish reported lingering=%v with additional latency %v", e.s.Requests[i].ID, lingering, lat))
	}
}

func (e *coreEngine) Expire(now time.Duration, i int) bool {
	return e.qs.Expire(epoch.Add(now), &e.reqs[i])
}

func (e *coreEngine) Fire(now time.Duration, token int) {
	e.qs.Release(epoch.Add(now), &e.reqs[token])
}

func (e *coreEngine) Reconfigure(now time.Duration, c Config) error {
	return e.qs.Reconfigure(epoch.Add(now), coreConfig(c))
}

// QueueSet implements Inspector.
func (e *coreEngine) QueueSet() *fairqueue.QueueSet { return e.qs }
