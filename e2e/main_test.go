package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/proc"
)

// ticketdBin is the binary TestMain built; empty in -short mode.
var ticketdBin string

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run()) // every test skips itself through binary(t)
	}
	dir, err := os.MkdirTemp("", "ticketd-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	ticketdBin = filepath.Join(dir, "ticketd")
	start := time.Now()
	if err := buildTicketd(ticketdBin); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: build ticketd:", err)
		_ = os.RemoveAll(dir)
		os.Exit(1)
	}
	if testing.Verbose() {
		fmt.Printf("e2e: built %s in %v\n", ticketdBin, time.Since(start).Round(time.Millisecond))
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// buildTicketd builds ./cmd/ticketd of the root module into out.
func buildTicketd(out string) error {
	root, err := proc.ModuleRoot()
	if err != nil {
		return err
	}
	return proc.Build(context.Background(), root, out)
}

// binary returns the built ticketd, skipping the test in -short mode.
func binary(t *testing.T) string {
	t.Helper()
	if testing.Short() || ticketdBin == "" {
		t.Skip("e2e: drives the built ticketd binary; skipped in -short mode")
	}
	return ticketdBin
}
