// Command godriver is the conformance driver of the Go SDK
// (github.com/ticketd/ticketd/client): it speaks clients/conformance/PROTOCOL.md
// on stdin/stdout so that the conformance harness can drive the SDK through
// the same faults and checks as every other language's client.
//
// One client is made from the protocol's environment; each lane is a
// goroutine that runs its commands in order. Errors are mapped to the
// protocol's kinds with errors.Is/errors.As on the SDK's sentinels only,
// never by reading a message.
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ticketd/ticketd/client"
)

func main() {
	// The baseline of goroutines before the SDK starts any: close compares
	// against it (plus the lanes' own goroutines) to count what the SDK left.
	baseline := runtime.NumGoroutine()
	d, err := newDriver(baseline, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "godriver:", err)
		os.Exit(2)
	}
	d.say("ready go " + sdkVersion())
	d.run(os.Stdin)
	os.Exit(0)
}

// sdkVersion is the SDK module's version as built into this binary; in the
// repository the SDK is a replaced module, so it reads "(devel)".
func sdkVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == "github.com/ticketd/ticketd/client" {
				if m.Replace != nil {
					return "devel"
				}
				return m.Version
			}
		}
		if bi.Main.Path == "github.com/ticketd/ticketd" {
			return "devel" // the SDK is in the main module's workspace
		}
	}
	return "unknown"
}

func envMs(name string, def time.Duration) (time.Duration, error) {
	v := os.Getenv(name)
	if v == "" {
		return def, nil
	}
	ms, err := strconv.Atoi(v)
	if err != nil || ms <= 0 {
		return 0, fmt.Errorf("%s=%q: want a positive number of milliseconds", name, v)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

type driver struct {
	baseline int
	c        *client.Client
	// plant is the planted bug (plant_faults.go); none in a build without
	// ticketd_faults.
	plant      plants
	descending descendingReserver

	outMu sync.Mutex // one answer is one whole line
	out   *bufio.Writer

	mu     sync.Mutex
	seqs   map[string]*client.Sequence
	flakes map[string]*client.SnowflakeRemote
	lanes  map[string]chan []string
	wg     sync.WaitGroup
}

func newDriver(baseline int, out io.Writer) (*driver, error) {
	attempt, err := envMs("TICKETD_CONFORMANCE_ATTEMPT_TIMEOUT_MS", 5*time.Second)
	if err != nil {
		return nil, err
	}
	call, err := envMs("TICKETD_CONFORMANCE_CALL_TIMEOUT_MS", 30*time.Second)
	if err != nil {
		return nil, err
	}
	// Refusing an unknown plant keeps a misspelt run from passing silently.
	plant, err := plantsFor(os.Getenv("TICKETD_CONFORMANCE_PLANT"))
	if err != nil {
		return nil, err
	}
	// The SDK reads TICKETD_ADDR and TICKETD_TOKEN itself, as the CLI and
	// the other languages' clients do.
	c, err := client.NewFromEnv(client.WithTimeout(attempt), client.WithCallTimeout(call))
	if err != nil {
		return nil, err
	}
	return &driver{
		baseline: baseline,
		c:        c,
		plant:    plant,
		out:      bufio.NewWriter(out),
		seqs:     map[string]*client.Sequence{},
		flakes:   map[string]*client.SnowflakeRemote{},
		lanes:    map[string]chan []string{},
	}, nil
}

// say writes one whole line and flushes it.
func (d *driver) say(line string) {
	d.outMu.Lock()
	defer d.outMu.Unlock()
	d.out.WriteString(strings.ReplaceAll(line, "\n", " "))
	d.out.WriteByte('\n')
	d.out.Flush()
}

// run reads commands until stdin closes, hands each to its lane's goroutine
// (made at the lane's first command), then waits for the lanes to finish.
func (d *driver) run(in io.Reader) {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		f := strings.Split(sc.Text(), " ")
		if len(f) < 2 {
			fmt.Fprintf(os.Stderr, "godriver: malformed command %q\n", sc.Text())
			continue
		}
		d.mu.Lock()
		ch, ok := d.lanes[f[0]]
		if !ok {
			ch = make(chan []string, 16)
			d.lanes[f[0]] = ch
			d.wg.Add(1)
			go d.lane(f[0], ch)
		}
		d.mu.Unlock()
		ch <- f
	}
	d.mu.Lock()
	for _, ch := range d.lanes {
		close(ch)
	}
	d.mu.Unlock()
	d.wg.Wait()
	_ = d.c.Close() // a harness that closed stdin without `close`
}

func (d *driver) lane(name string, cmds <-chan []string) {
	defer d.wg.Done()
	for f := range cmds {
		ans, err := d.do(f[1], f[2:])
		if err != nil {
			kind, msg := classify(err)
			d.say(name + " err " + kind + " " + msg)
			continue
		}
		if ans == "" {
			d.say(name + " ok")
		} else {
			d.say(name + " ok " + ans)
		}
	}
}

var errBadCommand = errors.New("bad command")

// errUnsupported: a mode of open that the SDK does not have, or fork, which
// a Go program cannot do (PROTOCOL.md's "unsupported"); the harness takes it
// as "nothing to judge", not a bug.
var errUnsupported = errors.New("unsupported")

func (d *driver) do(op string, args []string) (string, error) {
	ctx := context.Background() // the client's call timeout bounds every call
	need := func(k int) error {
		if len(args) != k {
			return fmt.Errorf("%w: %s takes %d arguments, got %d", errBadCommand, op, k, len(args))
		}
		return nil
	}
	switch op {
	case "open":
		var opts []client.SequenceOption
		switch {
		case len(args) == 3 && args[2] == "unordered":
			opts = append([]client.SequenceOption{client.Unordered()}, d.plant.unordered...)
		case len(args) == 3:
			return "", fmt.Errorf("%w: open mode %q (the Go SDK has unordered)", errUnsupported, args[2])
		default:
			if err := need(2); err != nil {
				return "", err
			}
		}
		s := d.c.Sequence(args[1], opts...)
		d.mu.Lock()
		d.seqs[args[0]] = s
		d.mu.Unlock()
		return "", nil
	case "next":
		if err := need(1); err != nil {
			return "", err
		}
		s, err := d.seq(args[0])
		if err != nil {
			return "", err
		}
		id, err := s.Next(ctx)
		if err != nil {
			return "", err
		}
		return strconv.FormatInt(id, 10), nil
	case "nextn":
		if err := need(2); err != nil {
			return "", err
		}
		s, err := d.seq(args[0])
		if err != nil {
			return "", err
		}
		n, err := strconv.Atoi(args[1])
		if err != nil {
			return "", fmt.Errorf("%w: n %q", errBadCommand, args[1])
		}
		rs, err := s.NextN(ctx, n)
		if err != nil {
			return "", err
		}
		parts := make([]string, len(rs))
		for i, r := range rs {
			parts[i] = fmt.Sprintf("%d-%d", r.First, r.Last)
		}
		return strings.Join(parts, " "), nil
	case "reserve":
		if err := need(2); err != nil {
			return "", err
		}
		n, err := strconv.ParseInt(args[1], 10, 64)
		if err != nil {
			return "", fmt.Errorf("%w: count %q", errBadCommand, args[1])
		}
		reserve := d.c.Reserve
		if d.plant.reserveDescending {
			reserve = func(ctx context.Context, seq string, n int64) (client.Range, error) {
				return d.descending.reserve(ctx, d.c, seq, n)
			}
		}
		r, err := reserve(ctx, args[0], n)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%d-%d", r.First, r.Last), nil
	case "fork":
		// The Go runtime cannot fork a running process (only fork and
		// exec), so no Go program shares a Client with a forked copy.
		return "", fmt.Errorf("%w: fork (a Go program cannot fork; it only starts new processes)", errUnsupported)
	case "snowflake":
		if err := need(2); err != nil {
			return "", err
		}
		r, err := d.c.SnowflakeRemote(args[1])
		if err != nil {
			return "", err
		}
		d.mu.Lock()
		d.flakes[args[0]] = r
		d.mu.Unlock()
		return "", nil
	case "snext":
		if err := need(1); err != nil {
			return "", err
		}
		r, err := d.flake(args[0])
		if err != nil {
			return "", err
		}
		id, err := r.Next(ctx)
		if err != nil {
			return "", err
		}
		return strconv.FormatInt(id, 10), nil
	case "snextn":
		if err := need(2); err != nil {
			return "", err
		}
		r, err := d.flake(args[0])
		if err != nil {
			return "", err
		}
		n, err := strconv.Atoi(args[1])
		if err != nil {
			return "", fmt.Errorf("%w: n %q", errBadCommand, args[1])
		}
		ids, err := r.NextN(ctx, n)
		if err != nil {
			return "", err
		}
		parts := make([]string, len(ids))
		for i, id := range ids {
			parts[i] = strconv.FormatInt(id, 10)
		}
		return strings.Join(parts, " "), nil
	case "close":
		if err := need(0); err != nil {
			return "", err
		}
		if err := d.c.Close(); err != nil {
			return "", err
		}
		return fmt.Sprintf("threads=%d", d.leftover()), nil
	}
	return "", fmt.Errorf("%w: unknown op %q", errBadCommand, op)
}

// leftover counts the goroutines the SDK still runs after Close: every
// goroutine beyond the baseline and the lanes' own (all parked on their
// channels while close runs, since the harness sends close alone). Close
// waits for the SDK's goroutines, but the transport's connection goroutines
// end asynchronously once their connections are closed, so the count is
// polled for a short while before it is believed.
func (d *driver) leftover() int {
	d.mu.Lock()
	lanes := len(d.lanes)
	d.mu.Unlock()
	want := d.baseline + lanes
	var k int
	for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		k = runtime.NumGoroutine() - want
		if k <= 0 || time.Now().After(deadline) {
			break
		}
	}
	if k > 0 {
		buf := make([]byte, 1<<20)
		n := runtime.Stack(buf, true)
		fmt.Fprintf(os.Stderr, "godriver: %d goroutines left after close:\n%s\n", k, buf[:n])
	}
	return max(k, 0)
}

func (d *driver) seq(h string) (*client.Sequence, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s, ok := d.seqs[h]
	if !ok {
		return nil, fmt.Errorf("%w: no sequence handle %q", errBadCommand, h)
	}
	return s, nil
}

func (d *driver) flake(h string) (*client.SnowflakeRemote, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	r, ok := d.flakes[h]
	if !ok {
		return nil, fmt.Errorf("%w: no snowflake handle %q", errBadCommand, h)
	}
	return r, nil
}

// classify maps an error to the protocol's kind with errors.Is/As on the
// SDK's own errors. Unavailable comes first: it wraps the last failure,
// which may be an *APIError of another kind. A bad command from the harness
// is untyped: it is not the SDK's error, and the harness must fail on it;
// an open mode the SDK lacks is the protocol's "unsupported".
func classify(err error) (kind, msg string) {
	msg = strings.ReplaceAll(err.Error(), "\n", " ")
	var apiErr *client.APIError
	switch {
	case errors.Is(err, errUnsupported):
		return "unsupported", msg
	case errors.Is(err, client.ErrClosed):
		return "closed", msg
	case errors.Is(err, client.ErrUnavailable):
		return "unavailable", msg
	case errors.As(err, &apiErr) && apiErr.StatusCode == 403:
		// ErrUnauthorized covers 401 and 403; the protocol tells them apart.
		return "forbidden", msg
	case errors.Is(err, client.ErrUnauthorized):
		return "unauthorized", msg
	case errors.Is(err, client.ErrNotFound), errors.Is(err, client.ErrNamespaceNotFound):
		return "not_found", msg
	case errors.Is(err, client.ErrExhausted):
		return "exhausted", msg
	case errors.Is(err, client.ErrInvalidArgument):
		return "invalid_argument", msg
	case errors.Is(err, client.ErrConflict):
		return "conflict", msg
	}
	return "untyped", fmt.Sprintf("%T: %s", err, msg)
}
