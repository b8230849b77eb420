package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilflowcontrol "k8s.io/apiserver/pkg/util/flowcontrol"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/fairslice/fairslice/kube/flowcontrol"
	"github.com/fairslice/fairslice/kube/verify/internal/realapiserver"
	"github.com/fairslice/fairslice/shufflesharding"
)

// fcIdentity is a user the tests impersonate.
type fcIdentity struct {
	name   string
	user   string
	groups []string
}

var fcIdentities = []fcIdentity{
	{"node", "system:node:n1", []string{"system:nodes", "system:authenticated"}},
	{"service account", "system:serviceaccount:default:builder", []string{"system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"}},
	{"system:masters", "root", []string{"system:masters", "system:authenticated"}},
	{"authenticated user", "alice", []string{"system:authenticated"}},
	{"controller manager", "system:kube-controller-manager", []string{"system:authenticated"}},
}

// fcClient is an HTTP client of srv impersonating user in groups: raw
// HTTP, so that 429s are seen rather than retried by client-go.
func fcClient(t testing.TB, srv *realapiserver.Server, user string, groups []string) (*http.Client, string) {
	t.Helper()
	cfg := rest.CopyConfig(srv.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return hc, cfg.Host
}

// fcGet does GET path and returns the response with its body read.
func fcGet(ctx context.Context, hc *http.Client, host, path string) (*http.Response, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, host+path, nil)
	if err != nil {
		return nil, "", err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, string(b), err
}

// fcNames maps the server's FlowSchema and priority level UIDs to names.
func fcNames(t testing.TB, ctx context.Context, c kubernetes.Interface) map[string]string {
	t.Helper()
	names := map[string]string{}
	fss, err := c.FlowcontrolV1().FlowSchemas().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, fs := range fss.Items {
		names[string(fs.UID)] = "fs/" + fs.Name
	}
	pls, err := c.FlowcontrolV1().PriorityLevelConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, pl := range pls.Items {
		names[string(pl.UID)] = "pl/" + pl.Name
	}
	return names
}

// fcClassify returns the FlowSchema and priority level that classified a
// GET by id on srv, by the names of the UIDs in the response headers.
func fcClassify(t testing.TB, ctx context.Context, srv *realapiserver.Server, id fcIdentity, names map[string]string) [2]string {
	t.Helper()
	hc, host := fcClient(t, srv, id.user, id.groups)
	resp, body, err := fcGet(ctx, hc, host, "/api/v1/namespaces/default")
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET as %s = %d %s", id.name, resp.StatusCode, body)
	}
	fs, pl := resp.Header.Get("X-Kubernetes-PF-FlowSchema-UID"), resp.Header.Get("X-Kubernetes-PF-PriorityLevel-UID")
	return [2]string{names[fs] + " (" + fs + ")", names[pl] + " (" + pl + ")"}
}

func startFairslice(t testing.TB, flags ...string) *realapiserver.Server {
	// The switch is this one field: flowcontrol.New has upstream's
	// utilflowcontrol.New signature.
	return realapiserver.Start(t, realapiserver.Options{FlowControl: flowcontrol.New, Flags: flags})
}

// TestFlowControlClassificationMatchesUpstream: the same identities get
// the same FlowSchema and priority level, named by the UIDs in the
// response headers, from kube-apiserver with upstream's flow controller
// and with fairslice's; the UIDs are those of the server's own objects.
func TestFlowControlClassificationMatchesUpstream(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	up := realapiserver.Start(t, realapiserver.Options{})
	ours := startFairslice(t)
	upNames, ourNames := fcNames(t, ctx, up.Client), fcNames(t, ctx, ours.Client)
	for _, id := range fcIdentities {
		u, o := fcClassify(t, ctx, up, id, upNames), fcClassify(t, ctx, ours, id, ourNames)
		strip := func(s [2]string) [2]string {
			for i := range s {
				s[i], _, _ = strings.Cut(s[i], " (")
			}
			return s
		}
		if strip(u) != strip(o) {
			t.Errorf("%s: upstream's server says %v, fairslice's %v", id.name, u, o)
		}
		if strings.HasPrefix(o[0], " ") || strings.HasPrefix(o[1], " ") {
			t.Errorf("%s: fairslice's response headers %v name no object of the server", id.name, o)
		} else {
			t.Logf("%s: %v", id.name, strip(o))
		}
	}
}

// fcLevel is a small queuing priority level and a FlowSchema sending
// users e2e-* to it, by user.
func fcLevel(name string, shares, queues, hand, qll int32) (*flowcontrolv1.PriorityLevelConfiguration, *flowcontrolv1.FlowSchema) {
	pl := &flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
		Type: flowcontrolv1.PriorityLevelEnablementLimited, Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
			NominalConcurrencyShares: &shares, LendablePercent: new(int32), BorrowingLimitPercent: new(int32),
			LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue,
				Queuing: &flowcontrolv1.QueuingConfiguration{Queues: queues, HandSize: hand, QueueLengthLimit: qll}}}}}
	fs := &flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: flowcontrolv1.FlowSchemaSpec{
		PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: name}, MatchingPrecedence: 200,
		DistinguisherMethod: &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
		Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
			Subjects: []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindGroup, Group: &flowcontrolv1.GroupSubject{Name: name}}},
			ResourceRules: []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"},
				Namespaces: []string{"*"}, ClusterScope: true}}}}}}
	return pl, fs
}

// fcEventually polls cond every 50 ms for up to 30 s.
func fcEventually(t testing.TB, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok, detail := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30s (last: %s)", what, detail)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestFlowControlInRealAPIServer runs kube-apiserver (30 seats) with
// fairslice's flow controller and checks, through the API: a FlowSchema
// created through the API takes effect and the controller writes its
// Dangling condition (with upstream's field manager), a dangling one gets
// Dangling=True; a noisy user on a one-seat level gets 429s with
// Retry-After while a quiet user of the same level is always served;
// watches start and release their seats once initialized; the debug
// endpoints answer; /metrics carries the apiserver_flowcontrol_* series.
func TestFlowControlInRealAPIServer(t *testing.T) {
	srv := startFairslice(t, "--max-requests-inflight=20", "--max-mutating-requests-inflight=10")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	fcAPI := srv.Client.FlowcontrolV1()

	// One seat: ceil(30 × 1 / (sum of the bootstrap shares + 1)).
	pl, fs := fcLevel("e2e-tight", 1, 64, 2, 4)
	if _, err := fcAPI.PriorityLevelConfigurations().Create(ctx, pl, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fs, err := fcAPI.FlowSchemas().Create(ctx, fs, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dangling := &flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: "e2e-dangling"}, Spec: *fs.Spec.DeepCopy()}
	dangling.Spec.PriorityLevelConfiguration.Name = "e2e-missing"
	dangling.Spec.MatchingPrecedence = 300
	if _, err := fcAPI.FlowSchemas().Create(ctx, dangling, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	t.Run("dangling condition", func(t *testing.T) {
		for name, want := range map[string]flowcontrolv1.ConditionStatus{"e2e-tight": flowcontrolv1.ConditionFalse, "e2e-dangling": flowcontrolv1.ConditionTrue} {
			fcEventually(t, "Dangling condition of "+name, func() (bool, string) {
				got, err := fcAPI.FlowSchemas().Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return false, err.Error()
				}
				for _, c := range got.Status.Conditions {
					if c.Type == flowcontrolv1.FlowSchemaConditionDangling && c.Status == want {
						for _, mf := range got.ManagedFields {
							if mf.Manager == utilflowcontrol.ConfigConsumerAsFieldManager && mf.Subresource == "status" {
								return true, ""
							}
						}
						return false, fmt.Sprintf("condition %+v but managed fields %+v", c, got.ManagedFields)
					}
				}
				return false, fmt.Sprintf("conditions %+v", got.Status.Conditions)
			})
		}
	})

	t.Run("new FlowSchema takes effect", func(t *testing.T) {
		hc, host := fcClient(t, srv, "e2e-probe", []string{"e2e-tight", "system:authenticated"})
		fcEventually(t, "requests of group e2e-tight classified to FlowSchema e2e-tight", func() (bool, string) {
			resp, _, err := fcGet(ctx, hc, host, "/api/v1/namespaces/default")
			if err != nil {
				return false, err.Error()
			}
			got := resp.Header.Get("X-Kubernetes-PF-FlowSchema-UID")
			return got == string(fs.UID), "FlowSchema UID " + got + ", want " + string(fs.UID)
		})
	})

	t.Run("noisy throttled, quiet served", func(t *testing.T) {
		noisy, quiet := "e2e-noisy", fcQuietUser("e2e-tight", "e2e-noisy", 64, 2)
		nc, host := fcClient(t, srv, noisy, []string{"e2e-tight", "system:authenticated"})
		qc, _ := fcClient(t, srv, quiet, []string{"e2e-tight", "system:authenticated"})
		var ok, rejected, badRetry atomic.Int64
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for range 40 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					resp, _, err := fcGet(ctx, nc, host, "/api/v1/namespaces/default/configmaps")
					switch {
					case err != nil:
					case resp.StatusCode == http.StatusTooManyRequests:
						rejected.Add(1)
						if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || s < 1 {
							badRetry.Add(1)
						}
					case resp.StatusCode == http.StatusOK:
						ok.Add(1)
					}
				}
			}()
		}
		time.Sleep(500 * time.Millisecond)
		var quietCodes []int
		for range 30 {
			resp, _, err := fcGet(ctx, qc, host, "/api/v1/namespaces/default/configmaps")
			if err != nil {
				t.Fatal(err)
			}
			quietCodes = append(quietCodes, resp.StatusCode)
			time.Sleep(20 * time.Millisecond)
		}
		close(stop)
		wg.Wait()
		t.Logf("noisy: %d served, %d rejected; quiet: %v", ok.Load(), rejected.Load(), quietCodes)
		if rejected.Load() == 0 {
			t.Error("the noisy user got no 429")
		}
		if badRetry.Load() != 0 {
			t.Errorf("%d of the noisy user's 429s had no positive Retry-After", badRetry.Load())
		}
		if slices.ContainsFunc(quietCodes, func(c int) bool { return c != http.StatusOK }) {
			t.Errorf("the quiet user got %v, want only 200", quietCodes)
		}
	})

	t.Run("debug endpoints", func(t *testing.T) {
		admin := fcAdmin(t, srv)
		for path, want := range map[string]string{
			"/debug/api_priority_and_fairness/dump_priority_levels": "e2e-tight",
			"/debug/api_priority_and_fairness/dump_queues":          "e2e-tight",
			"/debug/api_priority_and_fairness/dump_requests":        "PriorityLevelName",
		} {
			resp, body, err := fcGet(ctx, admin, srv.Config.Host, path)
			if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(body, want) {
				t.Errorf("GET %s = %v %v, want 200 containing %q:\n%s", path, resp.StatusCode, err, want, body)
			}
		}
	})

	t.Run("metrics", func(t *testing.T) {
		_, body, err := fcGet(ctx, fcAdmin(t, srv), srv.Config.Host, "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{
			`apiserver_flowcontrol_dispatched_requests_total{flow_schema="e2e-tight",priority_level="e2e-tight"}`,
			`apiserver_flowcontrol_rejected_requests_total{flow_schema="e2e-tight",priority_level="e2e-tight",reason="queue-full"}`,
			`apiserver_flowcontrol_request_wait_duration_seconds_count{execute="true",flow_schema="e2e-tight",priority_level="e2e-tight"}`,
			`apiserver_flowcontrol_nominal_limit_seats{priority_level="e2e-tight"} 1`,
			`apiserver_flowcontrol_current_executing_seats{flow_schema="e2e-tight",priority_level="e2e-tight"}`,
			`apiserver_flowcontrol_priority_level_request_utilization_count{phase="waiting",priority_level="e2e-tight"}`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
	})
}

// fcQuietUser returns a user whose hand of queues in level fsName (deck,
// hand) shares no queue with noisy's.
func fcQuietUser(fsName, noisy string, deck, hand int) string {
	d, err := shufflesharding.NewDealer(deck, hand)
	if err != nil {
		panic(err)
	}
	taken := d.DealIntoHand(shufflesharding.FlowHash(fsName, noisy), nil)
	for i := 0; ; i++ {
		u := fmt.Sprintf("e2e-quiet-%d", i)
		h := d.DealIntoHand(shufflesharding.FlowHash(fsName, u), nil)
		if !slices.ContainsFunc(h, func(q int) bool { return slices.Contains(taken, q) }) {
			return u
		}
	}
}

func fcAdmin(t testing.TB, srv *realapiserver.Server) *http.Client {
	hc, err := rest.HTTPClientFor(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	return hc
}

// BenchmarkRealAPIServerGet is a cheap GET (the default namespace) by an
// authenticated user (FlowSchema and level global-default) through
// kube-apiserver with upstream's flow controller and with fairslice's,
// both servers running at once, b.RunParallel clients.
func BenchmarkRealAPIServerGet(b *testing.B) {
	servers := []struct {
		name string
		srv  *realapiserver.Server
	}{
		{"impl=upstream", realapiserver.Start(b, realapiserver.Options{})},
		{"impl=fairslice", startFairslice(b)},
	}
	for _, s := range servers {
		hc, host := fcClient(b, s.srv, "alice", []string{"system:authenticated"})
		b.Run(s.name, func(b *testing.B) {
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					resp, _, err := fcGet(context.Background(), hc, host, "/api/v1/namespaces/default")
					if err != nil || resp.StatusCode != http.StatusOK {
						b.Errorf("GET = %v, %v", resp, err)
						return
					}
				}
			})
		})
	}
}
