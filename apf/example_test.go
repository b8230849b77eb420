package apf_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"

	"github.com/fairslice/fairslice/apf"
	"github.com/fairslice/fairslice/flowschema"
)

// Classify a request with upstream's default configuration.
func ExampleController_Classify() {
	c, err := apf.New(nil, apf.Options{ServerConcurrencyLimit: 600})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	ri, _ := apf.ParseRequestInfo(httptest.NewRequest("GET", "/api/v1/namespaces/team-a/pods", nil))
	cl := c.Classify(&apf.Request{User: apf.User{Name: "alice", Groups: []string{"system:authenticated"}}, Info: ri})
	fmt.Println(ri.Verb, ri.Resource, ri.Namespace, "→", cl.FlowSchema, cl.PriorityLevel, cl.Distinguisher)
	// Output: list pods team-a → global-default global-default alice
}

// Admit requests without HTTP: Wait, do the work, Finish.
func ExampleController_Wait() {
	c, _ := apf.New(nil, apf.Options{ServerConcurrencyLimit: 600})
	defer c.Close()
	req := &apf.Request{User: apf.User{Name: "bob", Groups: []string{"system:authenticated"}},
		Info: apf.RequestInfo{IsResourceRequest: true, Verb: "get", APIVersion: "v1", Resource: "pods", Namespace: "a", Name: "p"}}
	t, err := c.Wait(context.Background(), req, nil)
	var rej *apf.RejectedError
	switch {
	case errors.As(err, &rej):
		fmt.Println("rejected:", rej.Reason, "retry after", rej.RetryAfter)
	case err != nil:
		fmt.Println(err)
	default:
		fmt.Println("admitted to", t.Classification().PriorityLevel)
		t.Finish()
	}
	// Output: admitted to global-default
}

// Put APF in front of a handler and look at the debug endpoints.
func ExampleController_Handler() {
	cfg, _ := flowschema.Decode([]byte(`
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: tenants}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 10
    limitResponse: {type: Queue, queuing: {queues: 4, handSize: 2, queueLengthLimit: 10}}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: tenants}
spec:
  priorityLevelConfiguration: {name: tenants}
  matchingPrecedence: 500
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects: [{kind: Group, group: {name: tenants}}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], namespaces: ["*"], clusterScope: true}]
`))
	c, _ := apf.New(cfg, apf.Options{ServerConcurrencyLimit: 15})
	defer c.Close()
	h, _ := c.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	}), apf.HandlerOptions{User: apf.RequestHeaderUser})

	req := httptest.NewRequest("GET", "/api/v1/namespaces/a/pods", nil)
	req.Header.Set("X-Remote-User", "alice")
	req.Header.Add("X-Remote-Group", "tenants")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	fmt.Print(rec.Code, " ", rec.Body.String())

	rec = httptest.NewRecorder()
	c.DebugHandler().ServeHTTP(rec, httptest.NewRequest("GET", apf.DebugPathPriorityLevels, nil))
	os.Stdout.WriteString(rec.Body.String())
	// Output:
	// 200 ok
	// PriorityLevelName, ActiveQueues, IsIdle, IsQuiescing, WaitingRequests, ExecutingRequests, DispatchedRequests, RejectedRequests, TimedoutRequests, CancelledRequests
	// catch-all,         0,            true,   false,       0,               0,                 0,                  0,                0,                0
	// exempt,            0,            true,   false,       0,               0,                 0,                  0,                0,                0
	// tenants,           0,            true,   false,       0,               0,                 1,                  0,                0,                0
}

// A server that clients reach directly refuses reserved identities, so no
// client makes itself exempt with a header.
func ExampleRefuseReservedIdentities() {
	c, _ := apf.New(nil, apf.StandaloneOptions(600))
	defer c.Close()
	h, _ := c.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t, _ := apf.TicketFromContext(r.Context())
		fmt.Fprintln(w, "served at", t.Classification().PriorityLevel)
	}), apf.HandlerOptions{User: apf.RequestHeaderUser})
	h = apf.RefuseReservedIdentities(h)
	for _, group := range []string{"developers", "system:masters"} {
		req := httptest.NewRequest("GET", "/api/v1/namespaces/a/pods", nil)
		req.Header.Set("X-Remote-User", "mallory")
		req.Header.Set("X-Remote-Group", group)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		fmt.Print(group, ": ", rec.Code, " ", rec.Body.String())
	}
	// Output:
	// developers: 200 served at global-default
	// system:masters: 403 forbidden: identity "system:masters" is reserved for the system
}

// A configuration the API server would refuse is refused with every bad
// field; one it would accept with mistakes is used, and the mistakes come
// back as findings.
func ExampleController_Findings() {
	_, err := apf.New(&flowschema.Config{PriorityLevels: []flowschema.PriorityLevelConfiguration{{
		ObjectMeta: flowschema.ObjectMeta{Name: "broken"},
		Spec: flowschema.PriorityLevelConfigurationSpec{Type: flowschema.PriorityLevelTypeLimited,
			Limited: &flowschema.LimitedPriorityLevelConfiguration{LimitResponse: flowschema.LimitResponse{
				Type: flowschema.LimitResponseQueue, Queuing: &flowschema.QueuingConfiguration{Queues: -1, HandSize: 1, QueueLengthLimit: 5}}}},
	}}}, apf.Options{ServerConcurrencyLimit: 600})
	var list flowschema.ErrorList
	fmt.Println("refused:", errors.As(err, &list), list.Fields())

	cfg := flowschema.DefaultConfig()
	cfg.FlowSchemas[len(cfg.FlowSchemas)-1].Spec.PriorityLevelConfiguration.Name = "global-defualt"
	c, _ := apf.New(cfg, apf.Options{ServerConcurrencyLimit: 600})
	defer c.Close()
	for _, f := range c.Findings() {
		if f.Kind == flowschema.FindingDangling {
			fmt.Println(f)
		}
	}
	// Output:
	// refused: true [spec.limited.limitResponse.queuing.queues spec.limited.limitResponse.queuing.handSize]
	// dangling FlowSchema global-default: references priority level "global-defualt", which does not exist; the FlowSchema is skipped
}

// With Options.Adaptive the total starts at its floor, where the first
// probe measures the no-load latency, and then follows latency between the
// floor and the ceiling (here ServerConcurrencyLimit).
func ExampleController_Total() {
	static, err := apf.New(nil, apf.Options{ServerConcurrencyLimit: 600})
	if err != nil {
		panic(err)
	}
	defer static.Close()
	adaptive, err := apf.New(nil, apf.Options{ServerConcurrencyLimit: 600, Adaptive: &apf.AdaptiveOptions{Min: 4}})
	if err != nil {
		panic(err)
	}
	defer adaptive.Close()
	fmt.Println("static total:", static.Total())
	fmt.Println("adaptive total at start:", adaptive.Total())
	// Output:
	// static total: 600
	// adaptive total at start: 4
}
