package grpcapf

import (
	"context"
	"testing"

	"github.com/fairslice/fairslice/apf"
	"github.com/fairslice/fairslice/flowschema"
	"google.golang.org/grpc"
)

const twoLevels = `
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: a}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 50
    lendablePercent: 0
    limitResponse: {type: Queue, queuing: {queues: 4, handSize: 2, queueLengthLimit: 10}}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: b}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 50
    lendablePercent: 0
    limitResponse: {type: Queue, queuing: {queues: 4, handSize: 2, queueLengthLimit: 10}}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: a}
spec:
  priorityLevelConfiguration: {name: a}
  matchingPrecedence: 500
  rules:
  - subjects: [{kind: Group, group: {name: a}}]
    nonResourceRules: [{verbs: ["*"], nonResourceURLs: ["*"]}]
`

func TestOutOfBandReportsCarryTheHighestPressureOfTheChosenLevels(t *testing.T) {
	cfg, err := flowschema.Decode([]byte(twoLevels))
	if err != nil {
		t.Fatal(err)
	}
	c, err := apf.New(cfg, apf.Options{ServerConcurrencyLimit: 21})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	limit := c.Limits()["a"].Current
	var held []apf.Ticket
	for range 2 {
		tk, err := c.Wait(context.Background(), &apf.Request{User: apf.User{Name: "u", Groups: []string{"a"}}, Info: MethodRequestInfo("/x/y", false)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, tk)
	}
	want := 2 / float64(limit)
	for _, tc := range []struct {
		levels []string
		util   float64
	}{
		{nil, want}, // every level: a is the highest
		{[]string{"a"}, want},
		{[]string{"b"}, -1}, // idle: no utilization, no rate
		{[]string{"b", "a", "missing"}, want},
	} {
		sm := (&levelsProvider{c: c, levels: tc.levels}).ServerMetrics()
		wantQPS := 1.0
		if tc.util < 0 {
			wantQPS = -1
		}
		if sm.AppUtilization != tc.util || sm.QPS != wantQPS || sm.CPUUtilization != -1 || sm.Utilization == nil {
			t.Errorf("levels %v: out-of-band report utilization %v, qps %v, cpu %v; want %v, %v, -1 (unset)", tc.levels, sm.AppUtilization, sm.QPS, sm.CPUUtilization, tc.util, wantQPS)
		}
	}
	for _, tk := range held {
		tk.Finish()
	}
	s := grpc.NewServer()
	if err := RegisterLoadReportService(s, c, LoadReportServiceOptions{}); err != nil {
		t.Errorf("RegisterLoadReportService: %v", err)
	}
	if err := RegisterLoadReportService(s, nil, LoadReportServiceOptions{}); err == nil {
		t.Error("RegisterLoadReportService with a nil controller: nil error")
	}
	s.Stop()
}
