package orders_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if a goroutine outlives the tests: ticketdtest's
// cleanup stops each node entirely, and the tests close their clients.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
