package grpcapf_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test leaves a goroutine behind: the servers and
// clients the tests start stop at their cleanup, and the interceptors
// start none.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
