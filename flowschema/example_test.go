package flowschema_test

import (
	"fmt"
	"log"

	"github.com/fairslice/fairslice/flowschema"
	"github.com/fairslice/fairslice/seats"
)

// Classify a request with the API server's default configuration.
func ExampleClassifier_Classify() {
	c, err := flowschema.Compile(flowschema.DefaultConfig())
	if err != nil {
		log.Fatal(err)
	}
	req := flowschema.Request{
		User: "system:serviceaccount:ns1:builder", Groups: []string{"system:serviceaccounts", "system:authenticated"},
		Verb: "list", Resource: "pods", Namespace: "ns1", ResourceRequest: true,
	}
	d := c.Classify(&req)
	fmt.Println(d.FlowSchema, d.PriorityLevel, d.Distinguisher)
	fmt.Printf("%#x\n", d.FlowHash)
	// Output:
	// service-accounts workload-low system:serviceaccount:ns1:builder
	// 0x778ddae8ecd1dda0
}

// Explain why a kubelet's node-status update lands where it does.
func ExampleClassifier_Explain() {
	c, err := flowschema.Compile(flowschema.DefaultConfig())
	if err != nil {
		log.Fatal(err)
	}
	req := flowschema.Request{
		User: "system:node:n1", Groups: []string{"system:nodes", "system:authenticated"},
		Verb: "patch", Resource: "nodes", Subresource: "status", ResourceRequest: true,
	}
	e := c.Explain(&req)
	fmt.Print(e.String())
	// Output:
	// request: user "system:node:n1" groups ["system:nodes" "system:authenticated"] verb "patch" apiGroup "" resource "nodes/status" cluster-scoped
	// matched: FlowSchema system-node-high (precedence 400) via rules[0], subjects[0] (Group system:nodes), resourceRules[0]
	// priority level: node-high
	// flow: distinguisher "system:node:n1", hash 0xd69637f146cbe904
	// not matched:
	//   exempt (precedence 1):
	//     rules[0]: no subject matches (Group system:masters)
	//   probes (precedence 2):
	//     rules[0]: subject matches but the rule has no resourceRules (this is a resource request)
	//   system-leader-election (precedence 100):
	//     rules[0]: no subject matches (User system:kube-controller-manager, User system:kube-scheduler, ServiceAccount kube-system/*)
}

// Validate reports every problem at once, with field paths and values.
func ExampleValidate() {
	cfg, err := flowschema.Decode([]byte(`
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: batch}
spec:
  type: Limited
  limited:
    lendablePercent: 120
    limitResponse: {type: Queue, queuing: {queues: 128, handSize: 9}}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: batch-jobs}
spec:
  priorityLevelConfiguration: {name: batch}
  matchingPrecedence: 1
  rules:
  - subjects: [{kind: Group, group: {name: batch}}]
    resourceRules: [{verbs: ["*", get], apiGroups: [batch], resources: [jobs]}]
`))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(flowschema.Validate(cfg))
	// Output:
	// flowschema: FlowSchema "batch-jobs": spec.matchingPrecedence: Invalid value: 1: only the schema named 'exempt' may have matchingPrecedence 1
	// flowschema: FlowSchema "batch-jobs": spec.rules[0].resourceRules[0].verbs: Invalid value: ["*","get"]: if '*' is present, must not specify other verbs
	// flowschema: FlowSchema "batch-jobs": spec.rules[0].resourceRules[0].namespaces: Required value: resource rules that are not cluster scoped must supply at least one namespace
	// flowschema: PriorityLevelConfiguration "batch": spec.limited.limitResponse.queuing.handSize: Invalid value: 9: required entropy bits of deckSize 128 and handSize 9 should not be greater than 60
	// flowschema: PriorityLevelConfiguration "batch": spec.limited.lendablePercent: Invalid value: 120: must be between 0 and 100, inclusive
}

// Lint finds FlowSchemas that can never match.
func ExampleLint() {
	cfg := flowschema.DefaultConfig()
	extra, err := flowschema.Decode([]byte(`
kind: FlowSchema
metadata: {name: my-nodes}
spec:
  priorityLevelConfiguration: {name: workload-high}
  matchingPrecedence: 600
  rules:
  - subjects: [{kind: Group, group: {name: system:nodes}}]
    resourceRules: [{verbs: [get], apiGroups: [""], resources: [pods], namespaces: ["*"]}]
`))
	if err != nil {
		log.Fatal(err)
	}
	cfg.FlowSchemas = append(cfg.FlowSchemas, extra.FlowSchemas...)
	findings, err := flowschema.Lint(cfg)
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range findings {
		fmt.Println(f)
	}
	// Output:
	// shadowed FlowSchema my-nodes: every request it matches is matched first by system-nodes
}

// Compile a priority level as a fake clientset holds it (no API server
// defaulted it): by default Compile fills in 64 queues, which a hand of 20
// cannot be dealt from, and ignores the level; AsStored uses it as given,
// queues 0 included, as upstream's controller does.
func ExampleCompileWith() {
	cfg, err := flowschema.Decode([]byte(`
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: batch}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 10000
    limitResponse: {queuing: {handSize: 20}}
`))
	if err != nil {
		log.Fatal(err)
	}
	for _, opts := range []flowschema.CompileOptions{{}, {AsStored: true}} {
		c, err := flowschema.CompileWith(cfg, opts)
		if err != nil {
			log.Fatal(err)
		}
		for _, l := range c.IgnoredLevels() {
			fmt.Printf("AsStored=%v: %s ignored: %s\n", opts.AsStored, l.Name, l.Reason)
		}
		lims, err := seats.ComputeLimits(100, c.PriorityLevels())
		if err != nil {
			log.Fatal(err)
		}
		for _, l := range lims {
			if l.Name == "batch" {
				fmt.Printf("AsStored=%v: %s nominal %d, max seats %d\n", opts.AsStored, l.Name, l.NominalCL, l.MaxSeats)
			}
		}
	}
	// Output:
	// AsStored=false: batch ignored: invalid shuffle sharding config: required entropy bits of deckSize 64 and handSize 20 is greater than 60
	// AsStored=true: batch nominal 100, max seats 5
}
