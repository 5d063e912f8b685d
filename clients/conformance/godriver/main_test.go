package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/client"
)

func TestClassify_SDKErrors_ProtocolKinds(t *testing.T) {
	cases := []struct {
		err  error
		kind string
	}{
		{fmt.Errorf("next: %w", client.ErrUnavailable), "unavailable"},
		// Unavailable wraps the last failure, which may be a 403: the call's
		// outcome is still "unavailable".
		{fmt.Errorf("%w: %w", client.ErrUnavailable, &client.APIError{StatusCode: 403}), "unavailable"},
		{&client.APIError{StatusCode: 403}, "forbidden"},
		{&client.APIError{StatusCode: 401}, "unauthorized"},
		{fmt.Errorf("x: %w", client.ErrNotFound), "not_found"},
		{fmt.Errorf("x: %w", client.ErrNamespaceNotFound), "not_found"},
		{fmt.Errorf("x: %w", client.ErrExhausted), "exhausted"},
		{fmt.Errorf("x: %w", client.ErrInvalidArgument), "invalid_argument"},
		{fmt.Errorf("x: %w", client.ErrConflict), "conflict"},
		{fmt.Errorf("x: %w", client.ErrClosed), "closed"},
		{fmt.Errorf("%w: open mode %q", errUnsupported, "sideways"), "unsupported"},
		{errors.New("ticketd: unavailable"), "untyped"}, // a message is not a type
		{io.ErrUnexpectedEOF, "untyped"},
	}
	for _, c := range cases {
		if got, _ := classify(c.err); got != c.kind {
			t.Errorf("classify(%v) = %s, want %s", c.err, got, c.kind)
		}
	}
}

// The driver over its stdin/stdout with no cluster behind it (a port that
// refuses): answers are whole lines per lane, errors typed, close leaves no
// goroutine, and a call after close is "closed".
func TestDriver_NoCluster_TypedAnswersAndCleanClose(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	t.Setenv("TICKETD_ADDR", "http://"+addr)
	t.Setenv("TICKETD_TOKEN", "t0k3n-of-the-test-0000000")
	t.Setenv("TICKETD_CONFORMANCE_CALL_TIMEOUT_MS", "300")
	t.Setenv("TICKETD_CONFORMANCE_ATTEMPT_TIMEOUT_MS", "100")
	t.Setenv("TICKETD_CONFORMANCE_PLANT", "")

	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	// The baseline counts the goroutine that runs d.run below, as main's
	// baseline counts the main goroutine that runs it there.
	d, err := newDriver(runtime.NumGoroutine()+1, outW)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { d.run(inR); close(done) }()
	out := bufio.NewScanner(outR)
	// One command at a time: every lane's goroutine is parked when close
	// counts what is left.
	for _, c := range []struct{ cmd, want string }{
		{"1 open h1 orders", "1 ok"},
		{"2 next h1", "2 err unavailable "},
		{"3 nextn h1 0", "3 err invalid_argument "},
		{"7 open h3 orders unordered", "7 ok"},
		{"7 next h3", "7 err unavailable "},
		{"7 nextn h3 0", "7 err invalid_argument "},
		{"7 open h4 orders sideways", "7 err unsupported "},
		{"4 reserve orders 5", "4 err unavailable "},
		{"5 snowflake s1 ns", "5 ok"},
		{"5 snext s1", "5 err unavailable "},
		{"6 bogus", "6 err untyped "},
		{"0 close", "0 ok threads=0"},
		{"2 next h1", "2 err closed "},
	} {
		if _, err := io.WriteString(inW, c.cmd+"\n"); err != nil {
			t.Fatal(err)
		}
		if !out.Scan() {
			t.Fatalf("%q: no answer", c.cmd)
		}
		if got := out.Text(); !strings.HasPrefix(got, c.want) || (strings.HasSuffix(c.want, "ok") && got != c.want) {
			t.Errorf("%q answered %q, want %q…", c.cmd, got, c.want)
		}
	}
	inW.Close()
	<-done
}

// A plant the binary cannot switch on is refused at start (the harness then
// has no verdict), so that a misspelt planted run never passes as VALID.
func TestNewDriver_UnknownPlant_Refused(t *testing.T) {
	t.Setenv("TICKETD_ADDR", "http://127.0.0.1:1")
	t.Setenv("TICKETD_CONFORMANCE_PLANT", "no-such-plant")
	if _, err := newDriver(0, io.Discard); err == nil || !strings.Contains(err.Error(), "no-such-plant") {
		t.Fatalf("newDriver with an unknown plant: %v, want it refused", err)
	}
}
