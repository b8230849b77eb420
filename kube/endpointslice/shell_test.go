package endpointslice

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"
)

// retryOrDrop, the retry rule of both controllers' workers, forgets a
// key whose sync succeeded, requeues a failed one maxRetries times and
// then drops it, as upstream's handleErr.
func TestRetryOrDrop(t *testing.T) {
	ctx := context.Background()
	q := workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Nanosecond, time.Nanosecond))
	defer q.ShutDown()
	fail := errors.New("write failed")
	tests := []struct {
		name         string
		err          error
		wantRequeues int
	}{
		{"first failure", fail, 1},
		{"second failure", fail, 2},
		{"success", nil, 0},
	}
	for _, tc := range tests {
		retryOrDrop(ctx, q, "ns/a", tc.err, "retrying", "Endpoints")
		if got := q.NumRequeues("ns/a"); got != tc.wantRequeues {
			t.Errorf("%s: NumRequeues = %d, want %d", tc.name, got, tc.wantRequeues)
		}
	}
	for range maxRetries {
		retryOrDrop(ctx, q, "ns/b", fail, "retrying", "Endpoints")
	}
	if got := q.NumRequeues("ns/b"); got != maxRetries {
		t.Fatalf("after %d failures NumRequeues = %d, want %d", maxRetries, got, maxRetries)
	}
	retryOrDrop(ctx, q, "ns/b", fail, "retrying", "Endpoints")
	if got := q.NumRequeues("ns/b"); got != 0 {
		t.Errorf("after %d failures NumRequeues = %d, want 0 (dropped)", maxRetries+1, got)
	}
}
