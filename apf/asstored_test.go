package apf

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fairslice/fairslice/fairqueue"
	"github.com/fairslice/fairslice/flowschema"
)

// storedYAML is a level "work" as a fake clientset would hold it: 10000
// shares and the limit response LR (no defaults applied), with FlowSchema
// tenants for group tenants.
const storedYAML = `
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: work}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 10000
    limitResponse: LR
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: tenants}
spec:
  priorityLevelConfiguration: {name: work}
  matchingPrecedence: 500
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects: [{kind: Group, group: {name: tenants}}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], namespaces: ["*"], clusterScope: true}]
`

func storedObjects(t *testing.T, limitResponse string) *flowschema.Config {
	return mustDecode(t, strings.Replace(storedYAML, "LR", limitResponse, 1))
}

// admitAll sends n requests from distinct users, finishing none until
// all have been answered, and counts how many were admitted and the
// reasons of the others.
func admitAll(t *testing.T, c *Controller, n int) (admitted int, reasons map[fairqueue.Reason]int) {
	t.Helper()
	// None of them should wait; one that does times out (and is counted
	// as time-out) after 10 s.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	reasons = map[fairqueue.Reason]int{}
	var held []Ticket
	for i := range n {
		tk, err := c.Wait(ctx, tenant(fmt.Sprint("u", i)), nil)
		var rej *RejectedError
		switch {
		case err == nil:
			admitted++
			held = append(held, tk)
		case errors.As(err, &rej):
			reasons[rej.Reason]++
		default:
			t.Fatal(err)
		}
	}
	for _, tk := range held {
		tk.Finish()
	}
	return admitted, reasons
}

// With Options.AsStored, objects are used as given, as upstream's
// controller uses its informers' objects (issue 30): a level with
// limitResponse {queuing: {handSize: 20}} has queues 0, so it admits up
// to its limit, rejects the rest as concurrency-limit, and its max seats
// are max(1, min(ceil(0.15·100), 100/20)) = 5. Defaulted (64 queues,
// which a hand of 20 cannot be dealt from), the level is ignored and its
// requests go to catch-all.
func TestAsStoredUsesObjectsAsGiven(t *testing.T) {
	type result struct {
		Level    string
		MaxSeats uint64
		Queues   int
		Admitted int
		Reasons  map[fairqueue.Reason]int
	}
	tests := []struct {
		name string
		opts Options
		want result
	}{
		{"as stored", Options{Lenient: true, AsStored: true},
			result{Level: "work", MaxSeats: 5, Admitted: 100, Reasons: map[fairqueue.Reason]int{fairqueue.ReasonConcurrencyLimit: 20}}},
		{"defaulted", Options{Lenient: true},
			result{Level: "catch-all", MaxSeats: 0, Admitted: 100, Reasons: map[fairqueue.Reason]int{fairqueue.ReasonConcurrencyLimit: 20}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			opts.ServerConcurrencyLimit, opts.AdjustPeriod = 100, ManualAdjustment
			c, err := New(storedObjects(t, "{queuing: {handSize: 20}}"), opts)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			var got result
			got.Level = c.Classify(tenant("u")).PriorityLevel
			if i := levelIndex(c, got.Level); i >= 0 {
				l := c.Dump()[i].Limits
				got.MaxSeats, got.Queues = l.MaxSeats, l.Queues
			}
			got.Admitted, got.Reasons = admitAll(t, c, 120)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("New(issue 30's objects, %+v) mismatch (-want +got):\n%s", tt.opts, diff)
			}
		})
	}
}

// A negative queue length limit, which only objects that skipped
// validation have, rejects as 0 does (upstream compares the queue's
// length with it) instead of making the level's queue set invalid.
func TestAsStoredNegativeQueueLengthLimit(t *testing.T) {
	c, err := New(storedObjects(t, "{type: Queue, queuing: {queues: 4, handSize: 2, queueLengthLimit: -1}}"),
		Options{ServerConcurrencyLimit: 10, Lenient: true, AsStored: true, AdjustPeriod: ManualAdjustment})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	admitted, reasons := admitAll(t, c, 30)
	limit := c.Dump()[levelIndex(c, "work")].Limits.Current
	want := map[fairqueue.Reason]int{fairqueue.ReasonQueueFull: 30 - limit}
	if admitted != limit || !cmp.Equal(reasons, want) {
		t.Errorf("queue length limit -1, limit %d: admitted %d, rejected %v; want %d admitted, rejected %v", limit, admitted, reasons, limit, want)
	}
}

// Strict (not Lenient), AsStored objects are validated as given: the
// zeros the defaults would fill are refused, as the API server never
// stores them.
func TestAsStoredStrictRefusesZeros(t *testing.T) {
	cfg := storedObjects(t, "{type: Queue, queuing: {handSize: 2}}")
	if _, err := New(cfg, Options{ServerConcurrencyLimit: 10, AdjustPeriod: ManualAdjustment}); err != nil {
		t.Fatalf("New(queues 0, defaulted) = %v, want nil", err)
	}
	_, err := New(cfg, Options{ServerConcurrencyLimit: 10, AsStored: true, AdjustPeriod: ManualAdjustment})
	var l flowschema.ErrorList
	if !errors.As(err, &l) {
		t.Fatalf("New(queues 0, AsStored) = %v, want an ErrorList", err)
	}
	want := []string{"spec.limited.limitResponse.queuing.queueLengthLimit", "spec.limited.limitResponse.queuing.queues",
		"spec.limited.limitResponse.queuing.handSize"}
	if diff := cmp.Diff(want, l.Fields()); diff != "" {
		t.Errorf("New(queues 0, AsStored) fields mismatch (-want +got):\n%s", diff)
	}
}
