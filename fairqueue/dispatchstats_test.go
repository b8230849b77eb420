package fairqueue

import (
	"math/rand/v2"
	"testing"
	"time"
)

// statsObserver checks every DispatchObserver event against a reference
// computed from the QueueSet's Dump at that moment.
type statsObserver struct {
	NopObserver
	t                    *testing.T
	qs                   *QueueSet
	stats, noAccommodate int
}

func (o *statsObserver) DispatchStats(req RequestInfo, got DispatchStats) {
	o.stats++
	d := o.qs.Dump()
	want := DispatchStats{R: d.CurrentR, S: d.Queues[req.Queue].NextDispatchR,
		SMin: MaxSeatSeconds, DiscountedSMin: MaxSeatSeconds}
	for _, q := range d.Queues {
		if len(q.Waiting) == 0 {
			continue
		}
		ds := q.NextDispatchR - SeatsTimesDuration(float64(q.SeatsInUse), EstimatedServiceDuration)
		want.SMin, want.SMax = min(want.SMin, q.NextDispatchR), max(want.SMax, q.NextDispatchR)
		want.DiscountedSMin, want.DiscountedSMax = min(want.DiscountedSMin, ds), max(want.DiscountedSMax, ds)
	}
	if got != want {
		o.t.Errorf("dispatch %d: DispatchStats = %+v, want %+v", o.stats, got, want)
	}
}

func (o *statsObserver) NoAccommodation(req RequestInfo) {
	o.noAccommodate++
	d := o.qs.Dump()
	q := d.Queues[req.Queue]
	if len(q.Waiting) == 0 || q.Waiting[0].Flow != req.Flow {
		o.t.Errorf("NoAccommodation for %+v, which is not the head of its queue", req)
		return
	}
	if seats := q.Waiting[0].Work.MaxSeats(); d.SeatsInUse+seats <= o.qs.Config().ConcurrencyLimit {
		o.t.Errorf("NoAccommodation for a request of %d seats with %d of %d in use", seats, d.SeatsInUse, o.qs.Config().ConcurrencyLimit)
	}
}

// TestDispatchObserver drives a queue set with random arrivals of 1–3
// seats and finishes on a stepping clock and checks the DispatchObserver
// events against the Dump (see statsObserver), and that both kinds occur.
func TestDispatchObserver(t *testing.T) {
	qs, err := NewQueueSet(Config{Name: "pl", Queues: 8, HandSize: 2, QueueLengthLimit: 50, ConcurrencyLimit: 4}, t0)
	if err != nil {
		t.Fatal(err)
	}
	o := &statsObserver{t: t, qs: qs}
	qs.SetObserver(o)
	rng := rand.New(rand.NewPCG(1, 2))
	now := t0
	var executing []*Request
	qs.SetDispatchFunc(func(r *Request) { executing = append(executing, r) })
	for i := range 2000 {
		now = now.Add(time.Duration(rng.IntN(5)) * time.Millisecond)
		if rng.IntN(2) == 0 || len(executing) == 0 {
			r := &Request{Flow: NewFlow("fs", string(rune('a'+rng.IntN(6))))}
			qs.Arrive(now, r, r.Flow.Hash, WorkEstimate{InitialSeats: uint64(1 + rng.IntN(3))})
			continue
		}
		j := rng.IntN(len(executing))
		r := executing[j]
		executing = append(executing[:j], executing[j+1:]...)
		qs.Finish(now, r)
		if i%100 == 0 {
			now = now.Add(time.Second)
		}
	}
	if o.stats == 0 || o.noAccommodate == 0 {
		t.Errorf("DispatchStats reported %d times, NoAccommodation %d times; want both > 0", o.stats, o.noAccommodate)
	}
}
