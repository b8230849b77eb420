package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/fairslice/fairslice/kube/verify/internal/realapiserver"
)

// The fairslice CLI against a real kube-apiserver: the CLI is built (the
// light default binary) and run as a user runs it, with --kubeconfig
// naming the harness's kubeconfig, and with audit logs the server wrote.

// cliBinary builds cmd/fairslice into a temporary directory.
func cliBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "fairslice")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/fairslice/fairslice/kube/tools/cmd/fairslice")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build kube/tools/cmd/fairslice: %v\n%s", err, out)
	}
	return bin
}

// cliRun runs the CLI and returns its exit status and output.
func cliRun(t *testing.T, bin string, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String(), errOut.String()
	}
	if err != nil {
		t.Fatalf("fairslice %q: %v", args, err)
	}
	return 0, out.String(), errOut.String()
}

// cliAuditPolicy logs every request at Metadata level.
const cliAuditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: Metadata
`

func TestCLIAgainstRealAPIServer(t *testing.T) {
	bin := cliBinary(t)
	dir := t.TempDir()
	policy := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policy, []byte(cliAuditPolicy), 0o644); err != nil {
		t.Fatal(err)
	}
	auditLog := filepath.Join(dir, "audit.log")
	srv := realapiserver.Start(t, realapiserver.Options{Flags: []string{
		"--audit-policy-file=" + policy, "--audit-log-path=" + auditLog, "--audit-log-mode=blocking",
	}})
	kc := srv.KubeconfigPath
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	t.Run("apf", func(t *testing.T) {
		// The API server's own bootstrap configuration validates, lints
		// clean of errors, and classifies a node's request as upstream does.
		if code, stdout, stderr := cliRun(t, bin, "", "validate", "--kubeconfig", kc); code != 0 || !strings.HasPrefix(stdout, "valid: ") {
			t.Errorf("validate --kubeconfig = %d, %q, stderr %q", code, stdout, stderr)
		}
		code, stdout, stderr := cliRun(t, bin, "", "explain", "--kubeconfig", kc, "--user", "system:node:n1",
			"--groups", "system:nodes,system:authenticated", "--verb", "get", "--path", "/api/v1/nodes/n1", "-o", "json")
		var e struct{ FlowSchema, PriorityLevel string }
		if err := json.Unmarshal([]byte(stdout), &e); code != 0 || err != nil || e.FlowSchema != "system-node-high" || e.PriorityLevel != "node-high" {
			t.Errorf("explain --kubeconfig = %d, %q (%v), stderr %q; want system-node-high/node-high", code, stdout, err, stderr)
		}
		code, stdout, stderr = cliRun(t, bin, "", "limits", "--kubeconfig", kc, "--server-concurrency", "600", "-o", "json")
		var l struct {
			Levels []struct{ Name string }
		}
		if err := json.Unmarshal([]byte(stdout), &l); code != 0 || err != nil || len(l.Levels) < 8 {
			t.Errorf("limits --kubeconfig = %d, %q (%v), stderr %q; want the bootstrap levels", code, stdout, err, stderr)
		}
		// classify reads the cluster's configuration and the requests
		// from standard input.
		code, stdout, stderr = cliRun(t, bin, `{"user":"system:node:n1","groups":["system:nodes","system:authenticated"],"verb":"get","resource":"nodes","name":"n1"}`,
			"classify", "--kubeconfig", kc, "-")
		var c struct{ FlowSchema, PriorityLevel string }
		if err := json.Unmarshal([]byte(stdout), &c); code != 0 || err != nil || c.FlowSchema != "system-node-high" || c.PriorityLevel != "node-high" {
			t.Errorf("classify --kubeconfig = %d, %q (%v), stderr %q; want system-node-high/node-high", code, stdout, err, stderr)
		}
		// lint sees a FlowSchema created through the API that names a
		// missing level.
		fs := &flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: "cli-dangles"},
			Spec: flowcontrolv1.FlowSchemaSpec{
				PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "no-such-level"},
				MatchingPrecedence:         500,
				Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
					Subjects:         []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindGroup, Group: &flowcontrolv1.GroupSubject{Name: "g"}}},
					NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"/x"}}},
				}},
			}}
		if _, err := srv.Client.FlowcontrolV1().FlowSchemas().Create(ctx, fs, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr = cliRun(t, bin, "", "lint", "--kubeconfig", kc, "-o", "json")
		var lint struct {
			Findings []struct{ Kind, Name string }
		}
		found := false
		if err := json.Unmarshal([]byte(stdout), &lint); err != nil {
			t.Errorf("lint --kubeconfig -o json: %v\n%s", err, stdout)
		}
		for _, f := range lint.Findings {
			found = found || f.Kind == "dangling" && f.Name == "cli-dangles"
		}
		if code != 1 || !found {
			t.Errorf("lint --kubeconfig = %d, %q, stderr %q; want exit 1 and cli-dangles dangling", code, stdout, stderr)
		}
	})

	t.Run("service", func(t *testing.T) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "cli"}}
		if _, err := srv.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{corev1.LabelTopologyZone: "zone-a"}}}
		if _, err := srv.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "cli"},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Port: 80}}}}
		if _, err := srv.Client.CoreV1().Services("cli").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		for i, app := range []string{"web", "web", "web", "db"} {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p" + string(rune('0'+i)), Namespace: "cli", Labels: map[string]string{"app": app}},
				Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
			p, err := srv.Client.CoreV1().Pods("cli").Create(ctx, pod, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			p.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0." + string(rune('1'+i)),
				PodIPs: []corev1.PodIP{{IP: "10.0.0." + string(rune('1'+i))}}, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
			if _, err := srv.Client.CoreV1().Pods("cli").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		// No EndpointSlice controller runs in the harness: the plan creates
		// one slice for the three selected pods; the db pod is left out.
		code, stdout, stderr := cliRun(t, bin, "", "reconcile", "--kubeconfig", kc, "--namespace", "cli", "--service", "web")
		want := `{"creates": 1, "updates": 0, "deletes": 0, "lengths": [3]}` + "\n"
		if code != 0 || stdout != want || !strings.Contains(stderr, "left out 1 Pod") {
			t.Errorf("reconcile --kubeconfig = %d, %q, stderr %q; want 0, %q and the db pod left out", code, stdout, stderr, want)
		}
		code, stdout, stderr = cliRun(t, bin, "", "route", "--kubeconfig", kc, "--namespace", "cli", "--service", "web", "--node", "node-1")
		if code != 0 || strings.Count(stdout, "\ncluster ") != 3 {
			t.Errorf("route --kubeconfig = %d, %q, stderr %q; want three cluster endpoints", code, stdout, stderr)
		}
		if code, _, stderr := cliRun(t, bin, "", "hints", "--kubeconfig", kc, "--namespace", "cli", "--service", "nope"); code != 1 || !strings.Contains(stderr, "service cli/nope not found") {
			t.Errorf("hints for a missing Service = %d, stderr %q", code, stderr)
		}
	})

	t.Run("audit-log", func(t *testing.T) {
		// Requests by a node identity through impersonation, so that the
		// audit log holds a system-node-high flow besides the admin's.
		cfg := rest.CopyConfig(srv.Config)
		cfg.Impersonate.UserName = "system:node:node-1"
		cfg.Impersonate.Groups = []string{"system:nodes", "system:authenticated"}
		node, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for range 5 {
			// Authorization may refuse the node; the request has passed
			// APF and the audit log by then, which is all this needs.
			_, _ = node.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{})
		}
		data, err := os.ReadFile(auditLog)
		if err != nil || len(data) == 0 {
			t.Fatalf("the server wrote no audit log: %v", err)
		}
		code, stdout, stderr := cliRun(t, bin, "", "classify", "--kubeconfig", kc, "--audit-log", auditLog, "-o", "json")
		var got struct {
			Requests int
			Flows    []struct {
				FlowSchema, PriorityLevel string
				Requests                  int
			}
		}
		if err := json.Unmarshal([]byte(stdout), &got); code != 0 || err != nil || got.Requests == 0 {
			t.Fatalf("classify --audit-log = %d, %q (%v), stderr %q", code, stdout, err, stderr)
		}
		levels := map[string]int{}
		for _, f := range got.Flows {
			levels[f.PriorityLevel] += f.Requests
		}
		// The impersonated node's gets are node-high, as APF classifies
		// the impersonated user; the loopback admin (system:masters) is
		// exempt.
		if levels["node-high"] < 5 || levels["exempt"] == 0 {
			t.Errorf("classify --audit-log: %d requests at node-high, %d exempt; want at least the 5 node gets and some exempt; flows %+v",
				levels["node-high"], levels["exempt"], got.Flows)
		}
		code, stdout, stderr = cliRun(t, bin, "", "simulate", "--audit-log", auditLog, "--server-concurrency", "1", "-o", "json")
		var sim struct {
			Requests int
			Levels   []struct {
				PriorityLevel string
				Requests      int
			}
		}
		if err := json.Unmarshal([]byte(stdout), &sim); code != 0 || err != nil || sim.Requests != got.Requests || len(sim.Levels) == 0 {
			t.Errorf("simulate --audit-log = %d, %q (%v), stderr %q; want %d requests replayed", code, stdout, err, stderr, got.Requests)
		}
	})
}
