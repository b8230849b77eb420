package apf

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fairslice/fairslice/flowschema"
)

// strictConfig is testConfigYAML with the level's limitResponse replaced.
func strictConfig(t *testing.T, limitResponse string) *flowschema.Config {
	const lr = "limitResponse:\n      type: Queue\n      queuing: {queues: 4, handSize: 2, queueLengthLimit: 2}"
	if !strings.Contains(testConfigYAML, lr) {
		t.Fatal("testConfigYAML has changed: update strictConfig")
	}
	return mustDecode(t, strings.Replace(testConfigYAML, lr, limitResponse, 1))
}

// New and Reconfigure refuse what the API server's validation refuses,
// naming every bad field; Lenient takes it as upstream's controller alone
// does.
func TestNewRefusesInvalidConfiguration(t *testing.T) {
	for _, tc := range []struct {
		name, limitResponse string
		fields              []string
	}{
		{"negative queues", `limitResponse: {type: Queue, queuing: {queues: -1, handSize: 1, queueLengthLimit: 5}}`,
			[]string{"spec.limited.limitResponse.queuing.queues"}},
		{"hand larger than queues", `limitResponse: {type: Queue, queuing: {queues: 2, handSize: 3, queueLengthLimit: 5}}`,
			[]string{"spec.limited.limitResponse.queuing.handSize"}},
		{"misspelt limitResponse", `limitResponce: {type: Queue, queuing: {queues: 8, handSize: 2, queueLengthLimit: 5}}`,
			[]string{"spec.limited.limitResponse.type"}},
		{"two errors at once", `limitResponse: {type: Queue, queuing: {queues: -1, handSize: 1, queueLengthLimit: -5}}`,
			[]string{"spec.limited.limitResponse.queuing.queues", "spec.limited.limitResponse.queuing.queueLengthLimit"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := strictConfig(t, tc.limitResponse)
			_, err := New(cfg, Options{ServerConcurrencyLimit: 20})
			var list flowschema.ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("New(%s) error = %v, want a flowschema.ErrorList", tc.name, err)
			}
			for _, f := range tc.fields {
				if !strings.Contains(err.Error(), f) {
					t.Errorf("New(%s) error = %v, want it to name %s", tc.name, err, f)
				}
			}
			c, err := New(cfg, Options{ServerConcurrencyLimit: 20, Lenient: true, AdjustPeriod: ManualAdjustment})
			if err != nil {
				t.Fatalf("New(%s, Lenient) = %v, want accepted", tc.name, err)
			}
			c.Close()
		})
	}
}

func TestReconfigureRefusedKeepsConfiguration(t *testing.T) {
	c, err := New(strictConfig(t, `limitResponse: {type: Queue, queuing: {queues: 8, handSize: 2, queueLengthLimit: 5}}`),
		Options{ServerConcurrencyLimit: 20, AdjustPeriod: ManualAdjustment})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	bad := strictConfig(t, `limitResponse: {type: Queue, queuing: {queues: -1, handSize: 1, queueLengthLimit: 5}}`)
	bad.PriorityLevels[0].Spec.Limited.NominalConcurrencyShares = ptr(int32(99))
	if err := c.Reconfigure(bad); err == nil {
		t.Fatal("Reconfigure(queues -1) = nil, want an error")
	}
	if got := c.Classify(tenant("a")).PriorityLevel; got != "work" {
		t.Errorf("after a refused Reconfigure, Classify = %q, want work", got)
	}
	if got := c.Dump()[levelIndex(c, "work")].Limits.Queues; got != 8 {
		t.Errorf("after a refused Reconfigure, work has %d queues, want 8", got)
	}
}

func ptr[T any](v T) *T { return &v }

// What upstream accepts but ignores comes back as findings.
func TestFindings(t *testing.T) {
	cfg := strictConfig(t, `limitResponse: {type: Queue, queuing: {queues: 8, handSize: 2, queueLengthLimit: 5}}`)
	dangling := cfg.FlowSchemas[0]
	dangling.Name, dangling.Spec.PriorityLevelConfiguration.Name = "typo", "wokr"
	cfg.FlowSchemas = append(cfg.FlowSchemas, dangling)
	c, err := New(cfg, Options{ServerConcurrencyLimit: 20, AdjustPeriod: ManualAdjustment})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var got []string
	for _, f := range c.Findings() {
		got = append(got, string(f.Kind)+" "+f.Name)
	}
	if !strings.Contains(strings.Join(got, ";"), "dangling typo") {
		t.Errorf("Findings() = %v, want one for the dangling FlowSchema typo", got)
	}
	fs, err := c.Apply(cfg)
	if err != nil || len(fs) != len(got) {
		t.Errorf("Apply(same) = %d findings, %v; want %d, nil", len(fs), err, len(got))
	}
}

// An exempt FlowSchema for /healthz works without the exempt level in the
// file, as in a cluster, where the API server creates it; upstream's
// controller alone (Lenient) skips it as dangling.
func TestExemptHealthzWithoutExemptLevel(t *testing.T) {
	cfg := mustDecode(t, `
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: healthz}
spec:
  priorityLevelConfiguration: {name: exempt}
  matchingPrecedence: 2
  rules:
  - subjects: [{kind: Group, group: {name: system:unauthenticated}}]
    nonResourceRules: [{verbs: ["get"], nonResourceURLs: ["/healthz"]}]
`)
	healthz := &Request{User: User{Name: "system:anonymous", Groups: []string{"system:unauthenticated"}},
		Info: RequestInfo{Verb: "get", Path: "/healthz"}}
	c, err := New(cfg, Options{ServerConcurrencyLimit: 2, AdjustPeriod: ManualAdjustment})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if cl := c.Classify(healthz); cl.FlowSchema != "healthz" || !cl.Exempt {
		t.Errorf("Classify(/healthz) = %s/%s exempt=%v, want healthz/exempt exempt", cl.FlowSchema, cl.PriorityLevel, cl.Exempt)
	}
	// Exempt: admitted without limit, far past the server's 2 seats.
	var tickets []Ticket
	for range 10 {
		tk, err := c.Wait(context.Background(), healthz, nil)
		if err != nil {
			t.Fatalf("Wait(/healthz) = %v, want admitted", err)
		}
		tickets = append(tickets, tk)
	}
	for _, tk := range tickets {
		tk.Finish()
	}
	for _, f := range c.Findings() {
		if f.Kind == flowschema.FindingDangling {
			t.Errorf("finding %s, want none dangling", f)
		}
	}

	lenient, err := New(cfg, Options{ServerConcurrencyLimit: 2, AdjustPeriod: ManualAdjustment, Lenient: true})
	if err != nil {
		t.Fatal(err)
	}
	defer lenient.Close()
	if cl := lenient.Classify(healthz); cl.FlowSchema == "healthz" {
		t.Errorf("Lenient: Classify(/healthz) = %s, want the dangling healthz skipped as upstream does", cl.FlowSchema)
	}
}

// Taken leniently, a Limited level with negative queues is unlimited, as
// upstream's queue set takes a negative number of queues as its code for
// exemption (kube/verify/compare/apf's TestDifferentialAsStored, case "negative
// queues", has upstream admit beyond the level's limit).
func TestLenientNegativeQueuesAreUnlimited(t *testing.T) {
	cfg := strictConfig(t, `limitResponse: {type: Queue, queuing: {queues: -1, handSize: 1, queueLengthLimit: 5}}`)
	c, err := New(cfg, Options{ServerConcurrencyLimit: 20, Lenient: true, AdjustPeriod: ManualAdjustment})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	limit := c.Dump()[levelIndex(c, "work")].Limits.Current
	admitted, rejected := 0, 0
	var held []Ticket
	// None should wait; one that does gives up after 10 s.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := range 100 {
		tk, err := c.Wait(ctx, tenant(fmt.Sprint("u", i)), nil)
		if err != nil {
			rejected++
			continue
		}
		admitted++
		held = append(held, tk)
	}
	for _, tk := range held {
		tk.Finish()
	}
	if limit <= 0 || limit >= 100 || admitted != 100 {
		t.Errorf("queues -1, limit %d: admitted %d, rejected %d of 100; want all admitted", limit, admitted, rejected)
	}
}
