package flowschema

import (
	"fmt"
	"testing"

	"github.com/fairslice/fairslice/shufflesharding"
)

// benchMix is a typical request mix on the default configuration.
func benchMix() []Request {
	auth := []string{GroupAuthenticated}
	res := func(u string, g []string, verb, group, resource, sub, ns string) Request {
		return Request{User: u, Groups: g, Verb: verb, APIGroup: group, Resource: resource, Subresource: sub, Namespace: ns, ResourceRequest: true}
	}
	return []Request{
		res("alice", auth, "list", "apps", "deployments", "", "team-a"),
		res("alice", auth, "get", "", "pods", "", "team-c"),
		res("root", []string{GroupSystemMasters, GroupAuthenticated}, "delete", "", "pods", "", "x"),
		{User: "system:anonymous", Groups: []string{GroupUnauthenticated}, Verb: "get", Path: "/healthz"},
		res("system:node:n1", []string{GroupNodes, GroupAuthenticated}, "patch", "", "nodes", "status", ""),
		res("system:node:n1", []string{GroupNodes, GroupAuthenticated}, "get", "", "pods", "", "ns1"),
		res(UserKubeControllerManager, auth, "update", "coordination.k8s.io", "leases", "", "kube-system"),
		res(UserKubeScheduler, auth, "create", "", "bindings", "", "ns1"),
		res("system:serviceaccount:kube-system:foo", []string{GroupServiceAccounts, GroupAuthenticated}, "get", "", "pods", "", "kube-system"),
		res("system:serviceaccount:ns1:foo", []string{GroupServiceAccounts, GroupAuthenticated}, "list", "", "configmaps", "", "ns1"),
		{User: "bob", Groups: auth, Verb: "get", Path: "/apis/apps/v1"},
	}
}

// tenants adds n FlowSchemas, one per tenant group and namespace.
func tenants(n int) (*Config, []Request) {
	cfg := DefaultConfig()
	cfg.PriorityLevels = append(cfg.PriorityLevels, queuingPL("tenants", 30, 0, 64, 6))
	reqs := benchMix()
	for i := range n {
		cfg.FlowSchemas = append(cfg.FlowSchemas, newFS(fmt.Sprintf("tenant-%04d", i), "tenants", int32(1000+i), DistinguisherByUser, PolicyRulesWithSubjects{
			Subjects: []Subject{group(fmt.Sprintf("team-%d", i))},
			ResourceRules: []ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"", "apps"},
				Resources: []string{"pods", "deployments"}, Namespaces: []string{fmt.Sprintf("ns-%d", i)}}},
		}))
	}
	for i := 0; i < n; i += max(1, n/20) {
		reqs = append(reqs, Request{User: "dev", Groups: []string{fmt.Sprintf("team-%d", i), GroupAuthenticated}, Verb: "list",
			APIGroup: "apps", Resource: "deployments", Namespace: fmt.Sprintf("ns-%d", i), ResourceRequest: true})
	}
	return cfg, reqs
}

// BenchmarkClassify sweeps the number of FlowSchemas; one op is one
// classification (including the flow hash where upstream computes one).
func BenchmarkClassify(b *testing.B) {
	for _, n := range []int{0, 10, 100, 1000, 10000} {
		cfg, reqs := tenants(n)
		c, err := Compile(cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("flowschemas=%d", len(c.FlowSchemas())), func(b *testing.B) {
			b.ReportAllocs()
			var sink uint64
			for i := 0; b.Loop(); i++ {
				if i == len(reqs) {
					i = 0
				}
				sink += c.Classify(&reqs[i]).FlowHash
			}
			_ = sink
		})
	}
}

// BenchmarkFlowHash is the SHA-256 flow hash alone, part of Classify.
func BenchmarkFlowHash(b *testing.B) {
	b.ReportAllocs()
	var sink uint64
	for b.Loop() {
		sink += shufflesharding.FlowHash("global-default", "system:serviceaccount:ns1:foo")
	}
	_ = sink
}

// BenchmarkCompile is the one-off cost of building the index.
func BenchmarkCompile(b *testing.B) {
	for _, n := range []int{0, 1000} {
		cfg, _ := tenants(n)
		b.Run(fmt.Sprintf("flowschemas=%d", n+11), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Compile(cfg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
