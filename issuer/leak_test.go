package issuer_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's run if any goroutine outlives its tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
