package flowschemacompare

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apiserver/pkg/util/flowcontrol"

	"github.com/fairslice/fairslice/flowschema"
	"github.com/fairslice/fairslice/kube/internal/upstream/upstreamfs"
)

// benchRequests is a mix of typical requests, each of which some
// FlowSchema of the default configuration matches (upstream's no-match
// path formats a klog warning and would dominate).
func benchRequests() []flowschema.Request {
	auth := []string{flowschema.GroupAuthenticated}
	res := func(u string, g []string, verb, group, resource, sub, ns string) flowschema.Request {
		return flowschema.Request{User: u, Groups: g, Verb: verb, APIGroup: group, Resource: resource, Subresource: sub, Namespace: ns, ResourceRequest: true}
	}
	return []flowschema.Request{
		res("alice", auth, "list", "apps", "deployments", "", "team-a"),
		res("alice", auth, "get", "", "pods", "", "team-c"),
		res("root", []string{"system:masters", "system:authenticated"}, "delete", "", "pods", "", "x"),
		{User: "system:anonymous", Groups: []string{"system:unauthenticated"}, Verb: "get", Path: "/healthz"},
		res("system:node:n1", []string{"system:nodes", "system:authenticated"}, "patch", "", "nodes", "status", ""),
		res("system:node:n1", []string{"system:nodes", "system:authenticated"}, "get", "", "pods", "", "ns1"),
		res("system:kube-controller-manager", auth, "update", "coordination.k8s.io", "leases", "", "kube-system"),
		res("system:kube-scheduler", auth, "create", "", "bindings", "", "ns1"),
		res("system:serviceaccount:kube-system:foo", []string{"system:serviceaccounts", "system:authenticated"}, "get", "", "pods", "", "kube-system"),
		res("system:serviceaccount:ns1:foo", []string{"system:serviceaccounts", "system:authenticated"}, "list", "", "configmaps", "", "ns1"),
		{User: "bob", Groups: auth, Verb: "get", Path: "/apis/apps/v1"},
	}
}

// tenantConfig is the default configuration plus n tenant FlowSchemas:
// tenant i matches group team-<i> in namespace ns-<i> (precedence 1000+i,
// its own level for every tenant).
func tenantConfig(n int) *flowschema.Config {
	cfg := flowschema.DefaultConfig()
	cfg.PriorityLevels = append(cfg.PriorityLevels, flowschema.PriorityLevelConfiguration{
		ObjectMeta: flowschema.ObjectMeta{Name: "tenants"},
		Spec: flowschema.PriorityLevelConfigurationSpec{Type: "Limited", Limited: &flowschema.LimitedPriorityLevelConfiguration{
			NominalConcurrencyShares: flowschema.Int32(30),
			LimitResponse:            flowschema.LimitResponse{Type: "Queue", Queuing: &flowschema.QueuingConfiguration{Queues: 64, HandSize: 6, QueueLengthLimit: 50}}}},
	})
	for i := range n {
		fs := flowschema.FlowSchema{ObjectMeta: flowschema.ObjectMeta{Name: fmt.Sprintf("tenant-%04d", i)}}
		fs.Spec.PriorityLevelConfiguration.Name = "tenants"
		fs.Spec.MatchingPrecedence = int32(1000 + i)
		fs.Spec.DistinguisherMethod = &flowschema.FlowDistinguisherMethod{Type: "ByUser"}
		fs.Spec.Rules = []flowschema.PolicyRulesWithSubjects{{
			Subjects: []flowschema.Subject{{Kind: "Group", Group: &flowschema.GroupSubject{Name: fmt.Sprintf("team-%d", i)}}},
			ResourceRules: []flowschema.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"", "apps", "batch"},
				Resources: []string{"pods", "deployments", "jobs", "configmaps"}, Namespaces: []string{fmt.Sprintf("ns-%d", i)}}},
		}}
		cfg.FlowSchemas = append(cfg.FlowSchemas, fs)
	}
	return cfg
}

// tenantRequests mixes requests of random tenants with the default mix
// (which falls through every tenant FlowSchema).
func tenantRequests(n int) []flowschema.Request {
	reqs := benchRequests()
	r := rand.New(rand.NewPCG(uint64(n), 7))
	for range 2 * len(reqs) {
		i := r.IntN(max(n, 1))
		reqs = append(reqs, flowschema.Request{User: fmt.Sprintf("dev-%d", r.IntN(50)), Groups: []string{fmt.Sprintf("team-%d", i), "system:authenticated"},
			Verb: "list", APIGroup: "apps", Resource: "deployments", Namespace: fmt.Sprintf("ns-%d", i), ResourceRequest: true})
	}
	return reqs
}

// BenchmarkClassify measures one classification per op, cycling through
// a request mix. impl=upstream is upstream's Handle up to the point where
// it calls the note function with the decision (RLock, the linear scan
// over FlowSchemas, rules and subjects, the catch-all fallback check, the
// flow distinguisher and the SHA-256 flow hash), stopped there by a panic
// that is recovered; BenchmarkPanicRecover measures that stop alone.
// impl=fairslice is Classifier.Classify, which also computes the flow
// hash.
func BenchmarkClassify(b *testing.B) {
	cases := []struct {
		name string
		cfg  *flowschema.Config
		reqs []flowschema.Request
	}{{"config=default", flowschema.DefaultConfig(), benchRequests()}}
	for _, n := range []int{10, 100, 1000} {
		cases = append(cases, struct {
			name string
			cfg  *flowschema.Config
			reqs []flowschema.Request
		}{fmt.Sprintf("flowschemas=%d", n+11), tenantConfig(n), tenantRequests(n)})
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			b.Run("impl=upstream", func(b *testing.B) {
				up, err := upstreamfs.Start(tc.cfg, 600)
				if err != nil {
					b.Fatal(err)
				}
				defer up.Close()
				digests := make([]flowcontrol.RequestDigest, len(tc.reqs))
				for i := range tc.reqs {
					digests[i] = upstreamfs.Digest(&tc.reqs[i])
				}
				var sink string
				note := func(fs *flowcontrolv1.FlowSchema, _ *flowcontrolv1.PriorityLevelConfiguration, d string) {
					sink = fs.Name
					upstreamfs.Stop()
				}
				runtime.GC() // start both sides without pending garbage
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; b.Loop(); i++ {
					if i == len(digests) {
						i = 0
					}
					up.HandleStopped(digests[i], note)
				}
				_ = sink
			})
			b.Run("impl=fairslice", func(b *testing.B) {
				c, err := flowschema.Compile(tc.cfg)
				if err != nil {
					b.Fatal(err)
				}
				var sink uint64
				runtime.GC() // start both sides without pending garbage
				b.ReportAllocs()
				b.ResetTimer()
				reqs := tc.reqs
				for i := 0; b.Loop(); i++ {
					if i == len(reqs) {
						i = 0
					}
					sink += c.Classify(&reqs[i]).FlowHash
				}
				_ = sink
			})
		})
	}
}

// BenchmarkPanicRecover is the cost of the panic and recover that stop
// upstream's Handle in BenchmarkClassify/impl=upstream, included there.
func BenchmarkPanicRecover(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		func() {
			defer func() { _ = recover() }()
			upstreamfs.Stop()
		}()
	}
}
