package ticketdtest_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ticketd/ticketd/client"
	"github.com/ticketd/ticketd/ticketdtest"
)

// TestNew_IDsUniqueAndPositive takes IDs as applications do, through many
// goroutines' Sequence.Next and single reservations at once, and finds each
// ID once, positive, and at or above the sequence's start.
func TestNew_IDsUniqueAndPositive(t *testing.T) {
	const start = 1000
	srv := ticketdtest.New(t, ticketdtest.WithSequence("orders", start))
	ctx := context.Background()
	seq := srv.Client.Sequence("orders")

	var mu sync.Mutex
	seen := map[int64]bool{}
	take := func(id int64) error {
		mu.Lock()
		defer mu.Unlock()
		if id < start {
			return fmt.Errorf("ID %d is below the start %d", id, start)
		}
		if seen[id] {
			return fmt.Errorf("ID %d handed out twice", id)
		}
		seen[id] = true
		return nil
	}
	const workers, each = 8, 500
	errs := make(chan error, 2*workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range each {
				id, err := seq.Next(ctx)
				if err == nil {
					err = take(id)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
		wg.Go(func() {
			for range 20 {
				r, err := srv.Client.Reserve(ctx, "orders", 7)
				if err != nil {
					errs <- err
					return
				}
				for id := range r.All() {
					if err := take(id); err != nil {
						errs <- err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if want := workers * (each + 20*7); len(seen) != want {
		t.Fatalf("got %d distinct IDs, want %d", len(seen), want)
	}
}

// TestNew_TwoServersIndependent starts two nodes in one test: each has its
// own URL, state and numbering, and stopping one leaves the other serving.
func TestNew_TwoServersIndependent(t *testing.T) {
	a := ticketdtest.New(t, ticketdtest.WithSequence("shared", 1), ticketdtest.WithSequence("only-a", 1))
	b := ticketdtest.New(t, ticketdtest.WithSequence("shared", 1))
	if a.URL == b.URL {
		t.Fatalf("both servers at %s", a.URL)
	}
	ctx := context.Background()
	// The same sequence on two nodes: each numbers from its start.
	for _, s := range []*ticketdtest.Server{a, b} {
		r, err := s.Client.Reserve(ctx, "shared", 10)
		if err != nil {
			t.Fatal(err)
		}
		if r.First != 1 || r.Last != 10 {
			t.Errorf("%s: first range %d..%d, want 1..10 on a fresh node", s.URL, r.First, r.Last)
		}
	}
	if _, err := b.Client.SequenceInfo(ctx, "only-a"); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("only-a on b: err %v, want ErrNotFound", err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if r, err := b.Client.Reserve(ctx, "shared", 1); err != nil || r.First != 11 {
		t.Errorf("b after a closed: range %+v, err %v; want 11", r, err)
	}
}

// TestClose_StopsNodeFreesPortsNoLeak starts and closes a node from Start:
// afterwards no goroutine of it is left, its API, Raft and RESP ports take a
// new listener, nothing answers at its URL, its directory is gone, and its
// client says it is closed.
func TestClose_StopsNodeFreesPortsNoLeak(t *testing.T) {
	before := goleak.IgnoreCurrent()
	srv, err := ticketdtest.Start(ticketdtest.WithRESP(), ticketdtest.WithSequence("s", 1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Client.Reserve(context.Background(), "s", 1); err != nil {
		t.Fatal(err)
	}
	ports := []string{strings.TrimPrefix(srv.URL, "http://"), ticketdtest.RaftAddr(srv), srv.RESPAddr}
	dir := ticketdtest.DataDir(srv)
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	goleak.VerifyNone(t, before)
	for _, addr := range ports {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			_ = c.Close()
			t.Errorf("%s still accepts connections", addr)
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Errorf("%s not free: %v", addr, err)
			continue
		}
		_ = ln.Close()
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("data dir %s: %v, want it removed", dir, err)
	}
	if _, err := srv.Client.Reserve(context.Background(), "s", 1); !errors.Is(err, client.ErrClosed) {
		t.Errorf("Reserve after Close: %v, want ErrClosed", err)
	}
}

// TestNew_CleanupStopsNode checks New's own cleanup: once the subtest that
// started a node has ended, the node's goroutines are gone and its port is
// free, with no Close in the test.
func TestNew_CleanupStopsNode(t *testing.T) {
	before := goleak.IgnoreCurrent()
	var url, dir string
	t.Run("uses a node", func(t *testing.T) {
		srv := ticketdtest.New(t)
		url, dir = srv.URL, ticketdtest.DataDir(srv)
		if _, _, err := srv.Client.CreateSequence(context.Background(), "x", client.SequenceSettings{}); err != nil {
			t.Fatal(err)
		}
	})
	goleak.VerifyNone(t, before)
	hc := &http.Client{Transport: &http.Transport{}, Timeout: time.Second}
	if resp, err := hc.Get(url + "/livez"); err == nil {
		resp.Body.Close()
		t.Errorf("%s still answers after the test's cleanup", url)
	}
	ln, err := net.Listen("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatalf("port not free: %v", err)
	}
	_ = ln.Close()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("t.TempDir data dir %s: %v, want it removed", dir, err)
	}
}

// TestStart_BadOption: each bad option is refused before anything starts,
// with an error naming the option and what is wrong; several at once are all
// reported.
func TestStart_BadOption(t *testing.T) {
	long := strings.Repeat("a", 30)
	cases := []struct {
		name string
		opts []ticketdtest.Option
		want []string
	}{
		{"empty sequence name", []ticketdtest.Option{ticketdtest.WithSequence("", 1)}, []string{`WithSequence("")`}},
		{"bad sequence name", []ticketdtest.Option{ticketdtest.WithSequence("no spaces", 1)}, []string{`WithSequence("no spaces")`}},
		{"negative start", []ticketdtest.Option{ticketdtest.WithSequence("s", -5)}, []string{`WithSequence("s")`, "negative"}},
		{"max below start", []ticketdtest.Option{ticketdtest.WithSequenceSettings("s", client.SequenceSettings{Start: 10, Max: 5})}, []string{`WithSequence("s")`}},
		{"sequence twice, different start", []ticketdtest.Option{ticketdtest.WithSequence("s", 1), ticketdtest.WithSequence("s", 2)}, []string{"given twice"}},
		{"short token", []ticketdtest.Option{ticketdtest.WithTokens("short", long)}, []string{"WithTokens", "admin token is 5 characters"}},
		{"same tokens", []ticketdtest.Option{ticketdtest.WithTokens(long, long)}, []string{"WithTokens", "the same"}},
		{"token with a space", []ticketdtest.Option{ticketdtest.WithTokens(long, long+" x")}, []string{"reserve token holds white space"}},
		{"nil option", []ticketdtest.Option{nil}, []string{"option 0 is nil"}},
		{"nil logger", []ticketdtest.Option{ticketdtest.WithLogger(nil)}, []string{"WithLogger"}},
		{"zero start timeout", []ticketdtest.Option{ticketdtest.WithStartTimeout(0)}, []string{"WithStartTimeout(0s)"}},
		{"nil client option", []ticketdtest.Option{ticketdtest.WithClientOptions(nil)}, []string{"WithClientOptions"}},
		{"two bad options", []ticketdtest.Option{ticketdtest.WithSequence("", 1), ticketdtest.WithStartTimeout(-1)}, []string{`WithSequence("")`, "WithStartTimeout"}},
	}
	before := goleak.IgnoreCurrent()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := ticketdtest.Start(tc.opts...)
			if err == nil {
				_ = srv.Close()
				t.Fatal("Start succeeded")
			}
			msg := err.Error()
			for _, w := range append([]string{"ticketdtest: bad option"}, tc.want...) {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not say %q", msg, w)
				}
			}
		})
	}
	goleak.VerifyNone(t, before)
}

// TestWithAuth: with authentication on, Server.Client holds the admin
// token; a client with the reserve token reserves but cannot create a
// sequence, and one without a token is refused.
func TestWithAuth(t *testing.T) {
	srv := ticketdtest.New(t, ticketdtest.WithAuth(), ticketdtest.WithSequence("orders", 1))
	if len(srv.AdminToken) < 22 || len(srv.ReserveToken) < 22 || srv.AdminToken == srv.ReserveToken {
		t.Fatalf("tokens %q and %q", srv.AdminToken, srv.ReserveToken)
	}
	ctx := context.Background()
	if _, _, err := srv.Client.CreateSequence(ctx, "more", client.SequenceSettings{}); err != nil {
		t.Fatalf("admin client: %v", err)
	}
	app, err := srv.NewClient(client.WithBearerToken(srv.ReserveToken))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := app.Sequence("orders").Next(ctx); err != nil {
		t.Errorf("reserve token: Next: %v", err)
	}
	if _, _, err := app.CreateSequence(ctx, "nope", client.SequenceSettings{}); !errors.Is(err, client.ErrUnauthorized) {
		t.Errorf("reserve token: CreateSequence: %v, want ErrUnauthorized", err)
	}
	anon, err := srv.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := anon.Reserve(ctx, "orders", 1); !errors.Is(err, client.ErrUnauthorized) {
		t.Errorf("no token: Reserve: %v, want ErrUnauthorized", err)
	}
}

// TestWithTokens: the node takes the tokens given, and a second New with
// the same tokens is a node of its own.
func TestWithTokens(t *testing.T) {
	admin, reserve := "admin-token-0123456789abcdef", "reserve-token-0123456789abcdef"
	srv := ticketdtest.New(t, ticketdtest.WithTokens(admin, reserve), ticketdtest.WithSequence("s", 5))
	if srv.AdminToken != admin || srv.ReserveToken != reserve {
		t.Fatalf("tokens %q, %q", srv.AdminToken, srv.ReserveToken)
	}
	c, err := srv.NewClient(client.WithBearerToken(reserve))
	if err != nil {
		t.Fatal(err)
	}
	if r, err := c.Reserve(context.Background(), "s", 1); err != nil || r.First != 5 {
		t.Fatalf("range %+v, err %v", r, err)
	}
}

// TestWithSequenceSettings_Exhausted: a small Max lets a test reach the end
// of a sequence.
func TestWithSequenceSettings_Exhausted(t *testing.T) {
	srv := ticketdtest.New(t, ticketdtest.WithSequenceSettings("tiny", client.SequenceSettings{Start: 1, Max: 3}))
	ctx := context.Background()
	r, err := srv.Client.Reserve(ctx, "tiny", 3)
	if err != nil || r.First != 1 || r.Last != 3 {
		t.Fatalf("range %+v, err %v", r, err)
	}
	if _, err := srv.Client.Reserve(ctx, "tiny", 1); !errors.Is(err, client.ErrExhausted) {
		t.Fatalf("past Max: %v, want ErrExhausted", err)
	}
}

// TestWithRESP speaks the Redis protocol to the front: INCR hands out IDs of
// the sequence.
func TestWithRESP(t *testing.T) {
	srv := ticketdtest.New(t, ticketdtest.WithRESP(), ticketdtest.WithSequence("orders", 100))
	if srv.RESPAddr == "" {
		t.Fatal("no RESP address")
	}
	conn, err := net.DialTimeout("tcp", srv.RESPAddr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	rd := bufio.NewReader(conn)
	var ids []int64
	for range 3 {
		if _, err := conn.Write([]byte("*2\r\n$4\r\nINCR\r\n$6\r\norders\r\n")); err != nil {
			t.Fatal(err)
		}
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(line, ":") {
			t.Fatalf("INCR answered %q", line)
		}
		id, err := strconv.ParseInt(strings.TrimSpace(line[1:]), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if !slices.IsSorted(ids) || ids[0] < 100 || ids[0] == ids[1] || ids[1] == ids[2] {
		t.Fatalf("INCR IDs %v: want distinct, increasing, from 100", ids)
	}
}

// TestClose_EarlyShowsOutage closes the node in the middle of a test, as a
// test of an application's error handling would: the SDK then reports the
// cluster unavailable within its call timeout.
func TestClose_EarlyShowsOutage(t *testing.T) {
	srv := ticketdtest.New(t, ticketdtest.WithSequence("s", 1))
	app, err := client.New([]string{srv.URL}, client.WithCallTimeout(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	if _, err := app.Reserve(context.Background(), "s", 1); err != nil {
		t.Fatal(err)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := app.Reserve(context.Background(), "s", 1); !errors.Is(err, client.ErrUnavailable) {
		t.Fatalf("Reserve with the node gone: %v, want ErrUnavailable", err)
	}
}

// TestStartupTime reports how long New takes, as startup of a test that
// uses it costs; docs/clients.md quotes it. It fails only beyond a bound far
// above what it takes on a loaded CI machine.
func TestStartupTime(t *testing.T) {
	var times []time.Duration
	for range 5 {
		begin := time.Now()
		srv, err := ticketdtest.Start(ticketdtest.WithSequence("s", 1))
		took := time.Since(begin)
		if err != nil {
			t.Fatal(err)
		}
		begin = time.Now()
		if err := srv.Close(); err != nil {
			t.Fatal(err)
		}
		t.Logf("Start (node serving, sequence created) %v, Close %v", took.Round(time.Millisecond), time.Since(begin).Round(time.Millisecond))
		times = append(times, took)
	}
	slices.Sort(times)
	t.Logf("median Start %v", times[len(times)/2].Round(time.Millisecond))
	if m := times[len(times)/2]; m > 5*time.Second {
		t.Errorf("median Start %v", m)
	}
}

// BenchmarkStartClose is a whole node's life as a test sees it: Start with
// one sequence, one reservation, Close.
func BenchmarkStartClose(b *testing.B) {
	for b.Loop() {
		srv, err := ticketdtest.Start(ticketdtest.WithSequence("s", 1))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := srv.Client.Reserve(context.Background(), "s", 1); err != nil {
			b.Fatal(err)
		}
		if err := srv.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestRestart_NoIDReissued restarts the node from its data: the URL stays,
// the sequences are still there, and every ID after the restart is above
// every ID before it, for single reservations and for a Sequence's cache
// alike.
func TestRestart_NoIDReissued(t *testing.T) {
	srv := ticketdtest.New(t, ticketdtest.WithRESP(), ticketdtest.WithSequence("orders", 1))
	url, resp := srv.URL, srv.RESPAddr
	ctx := context.Background()
	before, err := srv.Client.Reserve(ctx, "orders", 10)
	if err != nil {
		t.Fatal(err)
	}
	seq := srv.Client.Sequence("orders")
	cached, err := seq.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	if srv.URL != url || srv.RESPAddr != resp {
		t.Fatalf("addresses %s, %s after the restart; were %s, %s", srv.URL, srv.RESPAddr, url, resp)
	}
	after, err := srv.Client.Reserve(ctx, "orders", 10)
	if err != nil {
		t.Fatal(err)
	}
	if after.First <= max(before.Last, cached) {
		t.Fatalf("after the restart %d..%d, before %d..%d and %d from a Sequence", after.First, after.Last, before.First, before.Last, cached)
	}
	next, err := seq.Next(ctx)
	if err != nil || next <= cached {
		t.Fatalf("Sequence after the restart: %d, %v; before %d", next, err, cached)
	}
}

// TestStop_OutageUntilRestart stops the node: calls fail as unavailable
// until Restart, then succeed through the same client.
func TestStop_OutageUntilRestart(t *testing.T) {
	srv := ticketdtest.New(t, ticketdtest.WithSequence("s", 1), ticketdtest.WithClientOptions(client.WithCallTimeout(300*time.Millisecond)))
	ctx := context.Background()
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if _, err := srv.Client.Reserve(ctx, "s", 1); !errors.Is(err, client.ErrUnavailable) {
		t.Fatalf("Reserve while stopped: %v, want ErrUnavailable", err)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	if r, err := srv.Client.Reserve(ctx, "s", 1); err != nil || r.First < 1 {
		t.Fatalf("Reserve after Restart: %+v, %v", r, err)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Restart(); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("Restart after Close: %v, want an error saying it is closed", err)
	}
}
