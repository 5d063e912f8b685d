package client_test

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/client"
)

// newClient makes a client with fast retries and closes it when the test
// ends.
func newClient(t *testing.T, endpoints []string, opts ...client.Option) *client.Client {
	t.Helper()
	opts = append([]client.Option{client.WithBackoff(5*time.Millisecond, 50*time.Millisecond)}, opts...)
	c, err := client.New(endpoints, opts...)
	if err != nil {
		t.Fatalf("New(%q): %v", endpoints, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// logRecorder is a slog handler that keeps every record.
type logRecorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.records = append(l.records, r.Clone())
	return nil
}
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRecorder) WithGroup(string) slog.Handler      { return l }

// waits returns the "wait" attribute of every retry record.
func (l *logRecorder) waits() []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []time.Duration
	for _, r := range l.records {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "wait" {
				out = append(out, a.Value.Duration())
			}
			return true
		})
	}
	return out
}

// has reports whether a record's message contains msg.
func (l *logRecorder) has(msg string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.records {
		if strings.Contains(r.Message, msg) {
			return true
		}
	}
	return false
}

func TestNew_BadArguments_ClearErrors(t *testing.T) {
	noLeak(t)
	hc := &http.Client{}
	cases := []struct {
		name      string
		endpoints []string
		opts      []client.Option
		want      string
	}{
		{"nil endpoints", nil, nil, "no endpoints"},
		{"empty endpoints", []string{}, nil, "no endpoints"},
		{"empty string", []string{""}, nil, "want an http"},
		{"no scheme", []string{"127.0.0.1:8080"}, nil, "127.0.0.1:8080"},
		{"wrong scheme", []string{"ftp://h:1"}, nil, "want an http"},
		{"no host", []string{"http://"}, nil, "no host"},
		{"path", []string{"http://h:1/v1"}, nil, "without path"},
		{"user info", []string{"http://u:p@h:1"}, nil, "without path"},
		{"bad port", []string{"http://h:99999"}, nil, "invalid port"},
		{"one bad among good", []string{"http://h:1", "h2:80:1"}, nil, "h2:80:1"},
		{"nil option", []string{"http://h:1"}, []client.Option{nil}, "option 0 is nil"},
		{"zero attempt timeout", []string{"http://h:1"}, []client.Option{client.WithTimeout(0)}, "attempt timeout"},
		{"negative call timeout", []string{"http://h:1"}, []client.Option{client.WithCallTimeout(-time.Second)}, "negative"},
		{"zero backoff", []string{"http://h:1"}, []client.Option{client.WithBackoff(0, time.Second)}, "min <= max"},
		{"backoff max < min", []string{"http://h:1"}, []client.Option{client.WithBackoff(time.Second, time.Millisecond)}, "min <= max"},
		{"nil http client", []string{"http://h:1"}, []client.Option{client.WithHTTPClient(nil)}, "nil *http.Client"},
		{"nil tls", []string{"http://h:1"}, []client.Option{client.WithTLSConfig(nil)}, "nil *tls.Config"},
		{"http client and tls", []string{"http://h:1"}, []client.Option{client.WithHTTPClient(hc), client.WithTLSConfig(&tls.Config{})}, "exclusive"},
		{"empty token", []string{"http://h:1"}, []client.Option{client.WithBearerToken("")}, "empty token"},
		{"token with newline", []string{"http://h:1"}, []client.Option{client.WithBearerToken("a\nb")}, "visible ASCII"},
		{"nil logger", []string{"http://h:1"}, []client.Option{client.WithLogger(nil)}, "nil *slog.Logger"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := client.New(tc.endpoints, tc.opts...)
			if err == nil {
				_ = c.Close()
				t.Fatalf("New succeeded; want an error")
			}
			if !errors.Is(err, client.ErrInvalidArgument) {
				t.Fatalf("error %v is not ErrInvalidArgument", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not mention %q", err, tc.want)
			}
		})
	}
}

func TestNew_GoodEndpoints_SendsNothing(t *testing.T) {
	noLeak(t)
	for _, eps := range [][]string{
		{"http://127.0.0.1:8080"},
		{"http://127.0.0.1:8080/", " https://ticketd-1.example:8443 ", "http://[::1]:9000"},
		{"http://h:1", "http://h:1"}, // duplicates are folded
	} {
		c, err := client.New(eps, client.WithTLSConfig(&tls.Config{MinVersion: tls.VersionTLS12}), client.WithBearerToken("s3cr3t"))
		if err != nil {
			t.Fatalf("New(%q): %v", eps, err)
		}
		_ = c.Close()
	}
}

// Every bad call is refused before anything is sent.
func TestClient_BadCalls_InvalidArgumentNothingSent(t *testing.T) {
	noLeak(t)
	f := newFake()
	defer f.Close()
	f.addSequence("s", 1, api.DefaultMax)
	c := newClient(t, []string{f.URL()})
	ctx := ctxFor(t, 5*time.Second)
	var nilCtx context.Context

	calls := map[string]error{}
	_, calls["reserve count 0"] = c.Reserve(ctx, "s", 0)
	_, calls["reserve count -1"] = c.Reserve(ctx, "s", -1)
	_, calls["reserve count too large"] = c.Reserve(ctx, "s", api.MaxReserveCount+1)
	_, calls["reserve empty name"] = c.Reserve(ctx, "", 1)
	_, calls["reserve bad name"] = c.Reserve(ctx, "a/b", 1)
	_, calls["reserve nil ctx"] = c.Reserve(nilCtx, "s", 1)
	_, _, calls["create negative start"] = c.CreateSequence(ctx, "t", client.SequenceSettings{Start: -1})
	_, _, calls["create max < start"] = c.CreateSequence(ctx, "t", client.SequenceSettings{Start: 10, Max: 5})
	_, _, calls["create bad name"] = c.CreateSequence(ctx, strings.Repeat("x", 65), client.SequenceSettings{})
	_, calls["info bad name"] = c.SequenceInfo(ctx, "a b")
	_, calls["raise bad name"] = c.RaiseSequence(ctx, "a b", 5)
	_, calls["raise to 0"] = c.RaiseSequence(ctx, "s", 0)
	_, calls["raise to -1"] = c.RaiseSequence(ctx, "s", -1)
	_, calls["page limit -1"] = c.SequencesPage(ctx, "", -1)
	_, calls["page limit too large"] = c.SequencesPage(ctx, "", api.MaxSequencePage+1)
	_, calls["page bad after"] = c.SequencesPage(ctx, "a/b", 10)
	calls["add member missing fields"] = c.AddMember(ctx, api.JoinRequest{ID: "n4"})
	calls["remove empty id"] = c.RemoveMember(ctx, "")
	_, calls["next bad name"] = c.Sequence("a b").Next(ctx)
	_, calls["next bad range size"] = c.Sequence("s", client.WithRangeSize(0, 10)).Next(ctx)
	_, calls["next range size too large"] = c.Sequence("s", client.WithRangeSize(1, api.MaxReserveCount+1)).Next(ctx)
	_, calls["next bad coverage"] = c.Sequence("s", client.WithCoverage(0)).Next(ctx)
	_, calls["next nil option"] = c.Sequence("s", nil).Next(ctx)
	_, calls["next nil ctx"] = c.Sequence("s").Next(nilCtx)
	_, calls["nextn 0"] = c.Sequence("s").NextN(ctx, 0)
	_, calls["nextn -5"] = c.Sequence("s").NextN(ctx, -5)
	_, calls["nextn too large"] = c.Sequence("s").NextN(ctx, int(api.MaxReserveCount)+1)
	var nilClient *client.Client
	_, calls["nil client"] = nilClient.Reserve(ctx, "s", 1)
	_, calls["nil client sequence"] = nilClient.Sequence("s").Next(ctx)
	_, calls["zero client"] = (&client.Client{}).Cluster(ctx)

	for name, err := range calls {
		if !errors.Is(err, client.ErrInvalidArgument) {
			t.Errorf("%s: got %v, want ErrInvalidArgument", name, err)
		}
	}
	if req, _, _ := f.stats(); req != 0 {
		t.Fatalf("the server saw %d requests; bad calls must send nothing", req)
	}
	if err := nilClient.Close(); err != nil {
		t.Fatalf("Close on a nil client: %v", err)
	}
}

func TestClient_UseAfterClose_ErrClosed(t *testing.T) {
	noLeak(t)
	f := newFake()
	defer f.Close()
	f.addSequence("s", 1, api.DefaultMax)
	c, err := client.New([]string{f.URL()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxFor(t, 5*time.Second)
	before := c.Sequence("s")
	if _, err := before.Next(ctx); err != nil {
		t.Fatal(err)
	}

	var wg sync.WaitGroup
	for range 4 { // concurrent and repeated Close calls are fine
		wg.Go(func() {
			if err := c.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
	}
	wg.Wait()
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}

	calls := map[string]error{}
	_, calls["reserve"] = c.Reserve(ctx, "s", 1)
	_, _, calls["create"] = c.CreateSequence(ctx, "t", client.SequenceSettings{})
	_, calls["info"] = c.SequenceInfo(ctx, "s")
	_, calls["list"] = c.Sequences(ctx)
	_, calls["cluster"] = c.Cluster(ctx)
	calls["add"] = c.AddMember(ctx, api.JoinRequest{ID: "n4", RaftAddr: "h:1", HTTPAddr: "h:2"})
	calls["remove"] = c.RemoveMember(ctx, "n4")
	_, calls["next of a sequence made before close"] = before.Next(ctx)
	_, calls["nextn of a sequence made before close"] = before.NextN(ctx, 3)
	_, calls["next of a sequence made after close"] = c.Sequence("s").Next(ctx)
	for name, err := range calls {
		if !errors.Is(err, client.ErrClosed) {
			t.Errorf("%s after Close: got %v, want ErrClosed", name, err)
		}
	}
}

func TestReserve_FollowerOrDeadEndpoint_MovesOnAndRemembersTheOneThatAnswered(t *testing.T) {
	noLeak(t)
	busy := newFake() // a node that cannot serve: always 503, no Retry-After
	defer busy.Close()
	busy.failNext(-1, http.StatusServiceUnavailable, api.ProblemUnavailable, "")
	good := newFake()
	defer good.Close()
	good.addSequence("s", 1, api.DefaultMax)
	c := newClient(t, []string{deadURL(), busy.URL(), good.URL()})
	ctx := ctxFor(t, 10*time.Second)

	r, err := c.Reserve(ctx, "s", 10)
	if err != nil || r != (client.Range{First: 1, Last: 10}) {
		t.Fatalf("Reserve = %+v, %v; want 1..10", r, err)
	}
	busyReqs, _, _ := busy.stats()
	if busyReqs != 1 {
		t.Fatalf("busy endpoint saw %d requests, want 1", busyReqs)
	}
	for i := 0; i < 5; i++ {
		if _, err := c.Reserve(ctx, "s", 1); err != nil {
			t.Fatal(err)
		}
	}
	if n, _, _ := busy.stats(); n != busyReqs {
		t.Fatalf("after the good endpoint answered, the busy one still got %d more requests", n-busyReqs)
	}
}

func TestReserve_Unavailable_RetriedHonouringRetryAfter(t *testing.T) {
	noLeak(t)
	for _, status := range []int{http.StatusServiceUnavailable, http.StatusTooManyRequests} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			f := newFake()
			defer f.Close()
			f.addSequence("s", 1, api.DefaultMax)
			f.failNext(1, status, api.ProblemUnavailable, "1")
			logs := &logRecorder{}
			c := newClient(t, []string{f.URL()}, client.WithLogger(slog.New(logs)))
			r, err := c.Reserve(ctxFor(t, 10*time.Second), "s", 5)
			if err != nil || r.Len() != 5 {
				t.Fatalf("Reserve = %+v, %v", r, err)
			}
			if req, _, _ := f.stats(); req != 2 {
				t.Fatalf("server saw %d requests, want 2 (one refused, one served)", req)
			}
			waits := logs.waits()
			if len(waits) != 1 || waits[0] < time.Second {
				t.Fatalf("retry waits %v; want one wait of at least the 1 s Retry-After asked for", waits)
			}
		})
	}
}

func TestReserve_5xxRetried_BackoffBoundedAndJittered(t *testing.T) {
	noLeak(t)
	f := newFake()
	defer f.Close()
	f.addSequence("s", 1, api.DefaultMax)
	f.failNext(6, http.StatusBadGateway, "", "")
	logs := &logRecorder{}
	c := newClient(t, []string{f.URL()}, client.WithLogger(slog.New(logs)), client.WithBackoff(2*time.Millisecond, 8*time.Millisecond))
	if _, err := c.Reserve(ctxFor(t, 10*time.Second), "s", 1); err != nil {
		t.Fatal(err)
	}
	waits := logs.waits()
	if len(waits) != 6 {
		t.Fatalf("got %d retry waits, want 6: %v", len(waits), waits)
	}
	for k, w := range waits {
		bound := min(8*time.Millisecond, (2*time.Millisecond)<<k)
		if w < 0 || w > bound+time.Millisecond {
			t.Fatalf("wait %d = %v, want within [0, %v] (full jitter, capped)", k+1, w, bound)
		}
	}
}

func TestReserve_4xx_NeverRetried_TypedErrors(t *testing.T) {
	noLeak(t)
	cases := []struct {
		status int
		typ    string
		want   error
	}{
		{http.StatusBadRequest, api.ProblemBadRequest, client.ErrInvalidArgument},
		{http.StatusRequestEntityTooLarge, api.ProblemTooLarge, client.ErrInvalidArgument},
		{http.StatusUnauthorized, "about:blank", client.ErrUnauthorized},
		{http.StatusForbidden, "about:blank", client.ErrUnauthorized},
		{http.StatusNotFound, api.ProblemNotFound, client.ErrNotFound},
		{http.StatusConflict, api.ProblemExhausted, client.ErrExhausted},
		{http.StatusConflict, api.ProblemConflict, client.ErrConflict},
		{http.StatusConflict, api.ProblemClusterUpgrading, client.ErrClusterUpgrading},
		{http.StatusTeapot, "about:blank", nil},
	}
	for _, tc := range cases {
		t.Run(http.StatusText(tc.status)+"/"+tc.typ, func(t *testing.T) {
			first := newFake()
			defer first.Close()
			first.failNext(-1, tc.status, tc.typ, "")
			second := newFake()
			defer second.Close()
			c := newClient(t, []string{first.URL(), second.URL()})
			_, err := c.Reserve(ctxFor(t, 10*time.Second), "s", 1)
			var apiErr *client.APIError
			if !errors.As(err, &apiErr) || apiErr.StatusCode != tc.status || apiErr.Problem.Type != tc.typ {
				t.Fatalf("error %v: want an *APIError with status %d and type %s", err, tc.status, tc.typ)
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("error %v is not %v", err, tc.want)
			}
			for _, other := range []error{client.ErrUnavailable, client.ErrClosed} {
				if errors.Is(err, other) {
					t.Fatalf("error %v must not be %v", err, other)
				}
			}
			a, _, _ := first.stats()
			b, _, _ := second.stats()
			if a != 1 || b != 0 {
				t.Fatalf("requests: %d to the first endpoint, %d to the second; want 1 and 0 (a %d is final)", a, b, tc.status)
			}
		})
	}
}

func TestReserve_NoEndpointServesBeforeCtxEnds_Unavailable(t *testing.T) {
	noLeak(t)
	busy := newFake()
	defer busy.Close()
	busy.failNext(-1, http.StatusServiceUnavailable, api.ProblemUnavailable, "")
	c := newClient(t, []string{deadURL(), busy.URL()})

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := c.Reserve(ctx, "s", 1)
	if !errors.Is(err, client.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v; want ErrUnavailable wrapping context.DeadlineExceeded", err)
	}
	// The last failure is wrapped too; which one it is (the dead endpoint's
	// or the busy one's 503) depends on where the deadline fell.
	if req, _, _ := busy.stats(); req < 2 {
		t.Fatalf("the busy endpoint saw %d requests; want retries until the context ended", req)
	}

	// The call timeout bounds a call whose context has none.
	c2 := newClient(t, []string{deadURL()}, client.WithCallTimeout(100*time.Millisecond))
	if _, err := c2.Reserve(context.Background(), "s", 1); !errors.Is(err, client.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("with a call timeout: got %v; want ErrUnavailable", err)
	}
}

func TestReserve_HungEndpoint_AttemptTimeoutMovesOn(t *testing.T) {
	noLeak(t)
	hung := newFake()
	defer hung.Close()
	hung.addSequence("s", 1, api.DefaultMax)
	hung.set(func(f *fakeServer) { f.hang = true })
	good := newFake()
	defer good.Close()
	good.addSequence("s", 1000, api.DefaultMax)
	c := newClient(t, []string{hung.URL(), good.URL()}, client.WithTimeout(100*time.Millisecond))
	r, err := c.Reserve(ctxFor(t, 10*time.Second), "s", 3)
	if err != nil || r.First != 1000 {
		t.Fatalf("Reserve = %+v, %v; want the good endpoint's 1000..1002", r, err)
	}
}

func TestClient_BearerToken_SentOr401IsUnauthorized(t *testing.T) {
	noLeak(t)
	f := newFake()
	defer f.Close()
	f.addSequence("s", 1, api.DefaultMax)
	f.set(func(f *fakeServer) { f.token = "t0ken" })
	ctx := ctxFor(t, 10*time.Second)

	if _, err := newClient(t, []string{f.URL()}).Reserve(ctx, "s", 1); !errors.Is(err, client.ErrUnauthorized) {
		t.Fatalf("without a token: %v, want ErrUnauthorized", err)
	}
	if _, err := newClient(t, []string{f.URL()}, client.WithBearerToken("wrong")).Sequence("s").Next(ctx); !errors.Is(err, client.ErrUnauthorized) {
		t.Fatalf("Next with a wrong token: %v, want ErrUnauthorized", err)
	}
	if _, err := newClient(t, []string{f.URL()}, client.WithBearerToken("t0ken")).Reserve(ctx, "s", 1); err != nil {
		t.Fatalf("with the token: %v", err)
	}
}

func TestClient_SequencesClusterAndMembers(t *testing.T) {
	noLeak(t)
	f := newFake()
	defer f.Close()
	c := newClient(t, []string{f.URL()})
	ctx := ctxFor(t, 10*time.Second)

	info, created, err := c.CreateSequence(ctx, "orders", client.SequenceSettings{Start: 100, Max: 1000})
	if err != nil || !created || info.Start != 100 || info.Max != 1000 || info.Next == nil || *info.Next != 100 {
		t.Fatalf("CreateSequence = %+v, %v, %v", info, created, err)
	}
	if _, created, err := c.CreateSequence(ctx, "orders", client.SequenceSettings{Start: 100, Max: 1000}); err != nil || created {
		t.Fatalf("CreateSequence again = %v, %v; want it to exist already", created, err)
	}
	if _, _, err := c.CreateSequence(ctx, "orders", client.SequenceSettings{}); !errors.Is(err, client.ErrConflict) {
		t.Fatalf("CreateSequence with other settings: %v, want ErrConflict", err)
	}
	if _, err := c.Reserve(ctx, "orders", 10); err != nil {
		t.Fatal(err)
	}
	info, err = c.SequenceInfo(ctx, "orders")
	if err != nil || *info.Next != 110 || info.Remaining != 891 {
		t.Fatalf("SequenceInfo = %+v, %v", info, err)
	}
	if _, err := c.SequenceInfo(ctx, "missing"); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("SequenceInfo(missing) = %v, want ErrNotFound", err)
	}
	if _, err := c.Reserve(ctx, "missing", 1); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("Reserve(missing) = %v, want ErrNotFound", err)
	}
	if _, err := c.Reserve(ctx, "orders", 1000); !errors.Is(err, client.ErrExhausted) {
		t.Fatalf("Reserve past max = %v, want ErrExhausted", err)
	}
	list, err := c.Sequences(ctx)
	if err != nil || len(list) != 1 || list[0].Name != "orders" {
		t.Fatalf("Sequences = %+v, %v", list, err)
	}
	st, err := c.Cluster(ctx)
	if err != nil || st.Leader != "fake1" || len(st.Members) != 1 {
		t.Fatalf("Cluster = %+v, %v", st, err)
	}
	m := api.JoinRequest{ID: "n4", RaftAddr: "127.0.0.1:9004", HTTPAddr: "127.0.0.1:8004"}
	if err := c.AddMember(ctx, m); err != nil {
		t.Fatal(err)
	}
	if err := c.RemoveMember(ctx, "n4"); err != nil {
		t.Fatal(err)
	}
	if err := c.RemoveMember(ctx, "n4"); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("RemoveMember of a removed member = %v, want ErrNotFound", err)
	}
}

func TestClient_NonProblemAnswers_ReadableErrors(t *testing.T) {
	noLeak(t)
	f := newFake()
	defer f.Close()
	f.set(func(f *fakeServer) {
		f.fail = &injected{status: http.StatusTeapot, times: 1, rawBody: "<html>I'm a teapot</html>"}
	})
	c := newClient(t, []string{f.URL()})
	_, err := c.Reserve(ctxFor(t, 5*time.Second), "s", 1)
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusTeapot || !strings.Contains(err.Error(), "teapot") {
		t.Fatalf("got %v; want an *APIError 418 quoting the body", err)
	}

	// A 200 whose body is not the expected JSON is a protocol error, not
	// retried.
	f.set(func(f *fakeServer) {
		f.fail = &injected{status: http.StatusOK, times: -1, rawBody: "not json"}
	})
	_, err = c.Reserve(ctxFor(t, 5*time.Second), "s", 1)
	if err == nil || !strings.Contains(err.Error(), "not the expected JSON") {
		t.Fatalf("got %v; want a protocol error", err)
	}
	if req, _, _ := f.stats(); req != 2 {
		t.Fatalf("server saw %d requests; want 2 (no retry of a protocol error)", req)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"":      0,
		"1":     time.Second,
		" 3 ":   3 * time.Second,
		"0":     0,
		"-4":    0,
		"86400": 30 * time.Second, // capped
		"soon":  0,
		now.Add(2 * time.Second).Format(http.TimeFormat):  2 * time.Second,
		now.Add(-time.Minute).Format(http.TimeFormat):     0,
		now.Add(10 * time.Minute).Format(http.TimeFormat): 30 * time.Second,
	} {
		if got := client.ParseRetryAfter(v, now); got != want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", v, got, want)
		}
	}
}

func TestRange(t *testing.T) {
	r := client.Range{First: 5, Last: 8}
	var ids []int64
	for id := range r.All() {
		ids = append(ids, id)
	}
	if r.Len() != 4 || len(ids) != 4 || ids[0] != 5 || ids[3] != 8 || !r.Contains(8) || r.Contains(9) {
		t.Fatalf("Range %+v: Len %d, All %v", r, r.Len(), ids)
	}
	top := client.Range{First: api.DefaultMax - 1, Last: api.DefaultMax}
	n := 0
	for range top.All() {
		n++
	}
	if n != 2 {
		t.Fatalf("a range ending at 2^63-1 yielded %d IDs, want 2", n)
	}
}
