package client_test

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// The SDK's tests check for leaked goroutines with the runtime's own stack
// dump rather than go.uber.org/goleak (which the server's packages use): the
// SDK module requires nothing but its wire types and its retry library, its
// tests included, so that a program using the SDK gets nothing else in its
// module graph.

// TestMain checks, once every test has run, that no goroutine of this
// package or of an HTTP client connection is left.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if left := waitForGoroutinesToEnd(func(_, stack string) bool {
			return strings.Contains(stack, "github.com/ticketd/ticketd/client.") || strings.Contains(stack, "net/http.(*persistConn)")
		}); len(left) > 0 {
			fmt.Fprintf(os.Stderr, "leaked %d client goroutines:\n\n%s\n", len(left), strings.Join(left, "\n\n"))
			code = 1
		}
	}
	os.Exit(code)
}

// noLeak checks, when the test ends, that every goroutine started while it
// ran has ended (waiting up to 5 s for those that are ending).
func noLeak(t *testing.T) {
	t.Helper()
	before := map[string]bool{}
	for id := range goroutines() {
		before[id] = true
	}
	t.Cleanup(func() {
		if left := waitForGoroutinesToEnd(func(id, _ string) bool { return !before[id] }); len(left) > 0 {
			t.Errorf("leaked %d goroutines:\n\n%s", len(left), strings.Join(left, "\n\n"))
		}
	})
}

// waitForGoroutinesToEnd polls, for up to 5 s, until no goroutine other than
// the caller's is selected by leaked; it returns the stacks of those left.
func waitForGoroutinesToEnd(leaked func(id, stack string) bool) []string {
	var left []string
	for i := 0; i < 100; i++ {
		left = left[:0]
		all := goroutines()
		self := currentGoroutine()
		for id, stack := range all {
			if id != self && leaked(id, stack) {
				left = append(left, stack)
			}
		}
		if len(left) == 0 {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return left
}

// goroutines returns every goroutine's stack by its ID.
func goroutines() map[string]string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	out := map[string]string{}
	for _, g := range strings.Split(string(buf), "\n\n") {
		if id, ok := goroutineID(g); ok {
			out[id] = g
		}
	}
	return out
}

func currentGoroutine() string {
	buf := make([]byte, 64)
	id, _ := goroutineID(string(buf[:runtime.Stack(buf, false)]))
	return id
}

// goroutineID reads the ID from a stack's header, "goroutine 12 [running]:".
func goroutineID(stack string) (string, bool) {
	rest, ok := strings.CutPrefix(stack, "goroutine ")
	if !ok {
		return "", false
	}
	id, _, ok := strings.Cut(rest, " ")
	return id, ok
}
