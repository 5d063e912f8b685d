package e2e

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

// buildTicketd builds ./cmd/ticketd from the module root into out.
func buildTicketd(out string) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	cmd := exec.Command("go", "build", "-o", out, "./cmd/ticketd")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build in %s: %v\n%s", root, err, b)
	}
	return nil
}

// moduleRoot is the directory of go.mod, or the parent of this package's
// directory if the go command cannot say.
func moduleRoot() (string, error) {
	if out, err := exec.Command("go", "env", "GOMOD").Output(); err == nil {
		if p := strings.TrimSpace(string(out)); p != "" && p != os.DevNull {
			return filepath.Dir(p), nil
		}
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	return filepath.Dir(wd), nil
}

// binary returns the built ticketd, skipping the test in -short mode.
func binary(t *testing.T) string {
	t.Helper()
	if testing.Short() || ticketdBin == "" {
		t.Skip("e2e: drives the built ticketd binary; skipped in -short mode")
	}
	return ticketdBin
}
