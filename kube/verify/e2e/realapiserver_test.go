package e2e

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilflowcontrol "k8s.io/apiserver/pkg/util/flowcontrol"
	fq "k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing"
	fcrequest "k8s.io/apiserver/pkg/util/flowcontrol/request"
	kubeinformers "k8s.io/client-go/informers"
	flowcontrolclient "k8s.io/client-go/kubernetes/typed/flowcontrol/v1"

	"github.com/fairslice/fairslice/kube/verify/internal/realapiserver"
)

// countingFlowControl wraps upstream's flow controller and counts the
// requests it is asked to handle, to prove the harness puts a replacement on
// the request path.
type countingFlowControl struct {
	utilflowcontrol.Interface
	handled atomic.Int64
}

func (c *countingFlowControl) Handle(ctx context.Context, digest utilflowcontrol.RequestDigest,
	noteFn func(*flowcontrolv1.FlowSchema, *flowcontrolv1.PriorityLevelConfiguration, string),
	workEstimator func() fcrequest.WorkEstimate, queueNoteFn fq.QueueNoteFn, execFn func()) {
	c.handled.Add(1)
	c.Interface.Handle(ctx, digest, noteFn, workEstimator, queueNoteFn, execFn)
}

func TestRealAPIServerServesAndReplacesFlowControl(t *testing.T) {
	counting := &countingFlowControl{}
	srv := realapiserver.Start(t, realapiserver.Options{
		FlowControl: func(f kubeinformers.SharedInformerFactory, c flowcontrolclient.FlowcontrolV1Interface, limit int) utilflowcontrol.Interface {
			counting.Interface = utilflowcontrol.New(f, c, limit)
			return counting
		},
		Flags: []string{"--max-requests-inflight=20", "--max-mutating-requests-inflight=10"},
	})
	if srv.ServerConcurrencyLimit != 30 {
		t.Errorf("ServerConcurrencyLimit = %d, want 30", srv.ServerConcurrencyLimit)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	before := counting.handled.Load()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "e2e-smoke"}}
	if _, err := srv.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating a namespace: %v", err)
	}
	if _, err := srv.Client.CoreV1().Namespaces().Get(ctx, "e2e-smoke", metav1.GetOptions{}); err != nil {
		t.Fatalf("reading it back: %v", err)
	}
	if got := counting.handled.Load() - before; got < 2 {
		t.Errorf("the replacement flow controller handled %d of the 2 requests, want both", got)
	}
	if srv.KubeconfigPath == "" {
		t.Error("KubeconfigPath is empty")
	}
}
