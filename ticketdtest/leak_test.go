package ticketdtest_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's run if any goroutine outlives its tests: every
// node a test started must have stopped entirely.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
