package flowschema

import (
	"bytes"
	"encoding/json"
	"testing"
)

const fuzzSeedYAML = `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: l1}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 10
    limitResponse: {type: Queue, queuing: {queues: 16, handSize: 4}}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: fs1}
spec:
  priorityLevelConfiguration: {name: l1}
  matchingPrecedence: 500
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects: [{kind: Group, group: {name: dev}}, {kind: ServiceAccount, serviceAccount: {namespace: ns1, name: "*"}}]
    resourceRules: [{verbs: [get, list], apiGroups: [""], resources: [pods, pods/log], namespaces: ["*"]}]
    nonResourceRules: [{verbs: ["*"], nonResourceURLs: [/healthz, /apis/*]}]
`

// FuzzDecodeValidate feeds arbitrary bytes through Decode, Validate,
// Compile, Lint and a few classifications; nothing may panic, and a
// decoded configuration must survive an Encode/Decode round trip.
func FuzzDecodeValidate(f *testing.F) {
	f.Add([]byte(fuzzSeedYAML))
	var def bytes.Buffer
	if err := DefaultConfig().Encode(&def); err != nil {
		f.Fatal(err)
	}
	f.Add(def.Bytes())
	f.Add([]byte(`{"kind":"List","items":[{"kind":"FlowSchema","metadata":{"name":"x"},"spec":{"priorityLevelConfiguration":{"name":"exempt"}}}]}`))
	f.Add([]byte(`{"kind":"PriorityLevelConfiguration","metadata":{"name":"exempt"},"spec":{"type":"Limited"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Decode(data)
		if err != nil {
			return
		}
		_ = Validate(cfg)
		back := roundTrip(t, cfg)
		if len(back.FlowSchemas) != len(cfg.FlowSchemas) || len(back.PriorityLevels) != len(cfg.PriorityLevels) {
			t.Fatalf("round trip changed the object counts")
		}
		c, err := Compile(cfg)
		if err != nil {
			return
		}
		_ = c.Lint()
		if len(c.levels) == 0 {
			t.Fatal("no levels after Compile")
		}
		for _, req := range fuzzRequests {
			d := c.Classify(&req)
			s, r := referenceClassify(c, &req)
			if d.SchemaIndex != s || d.Rule != r {
				t.Fatalf("Classify(%s) = %s rules[%d], reference %d rules[%d]", DescribeRequest(&req), d.FlowSchema, d.Rule, s, r)
			}
			_ = c.Explain(&req)
		}
	})
}

var fuzzRequests = []Request{
	{User: "alice", Groups: []string{"dev", GroupAuthenticated}, Verb: "get", Resource: "pods", Subresource: "log", Namespace: "ns1", ResourceRequest: true},
	{User: "system:serviceaccount:ns1:x", Verb: "list", APIGroup: "apps", Resource: "deployments", ResourceRequest: true},
	{User: "bob", Groups: []string{GroupUnauthenticated}, Verb: "get", Path: "/healthz/etcd"},
}

// FuzzClassify checks the index against the reference matcher for an
// arbitrary request (JSON) on a fixed configuration with wildcards,
// service accounts and URL prefixes.
func FuzzClassify(f *testing.F) {
	cfg, err := Decode([]byte(fuzzSeedYAML))
	if err != nil {
		f.Fatal(err)
	}
	def := DefaultConfig()
	cfg.FlowSchemas = append(cfg.FlowSchemas, def.FlowSchemas...)
	cfg.PriorityLevels = append(cfg.PriorityLevels, def.PriorityLevels...)
	c, err := Compile(cfg)
	if err != nil {
		f.Fatal(err)
	}
	for _, r := range fuzzRequests {
		b, _ := json.Marshal(r)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var req Request
		if json.Unmarshal(data, &req) != nil {
			return
		}
		d := c.Classify(&req)
		s, r := referenceClassify(c, &req)
		if d.SchemaIndex != s || d.Rule != r {
			t.Fatalf("Classify(%s) = %s rules[%d], reference %d rules[%d]", DescribeRequest(&req), d.FlowSchema, d.Rule, s, r)
		}
	})
}
