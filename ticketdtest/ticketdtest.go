// Package ticketdtest starts a real, single-node ticketd inside a test
// process, as net/http/httptest starts an HTTP server and miniredis a Redis:
// code that takes IDs from ticketd is tested against the server itself, not a
// stand-in of it.
//
//	func TestPlaceOrder(t *testing.T) {
//		srv := ticketdtest.New(t, ticketdtest.WithSequence("orders", 1000))
//		book := orders.NewBook(srv.Client, "orders") // or client.New([]string{srv.URL})
//		o, err := book.Place(context.Background(), "alice", "book")
//		...
//	}
//
// New starts the node on 127.0.0.1 with an ephemeral port and its data in
// t.TempDir(), waits until it serves as leader, creates the sequences the
// options ask for, and stops it all with t.Cleanup. Server.URL is its API's
// base URL; Server.Client a ready SDK client (package
// github.com/ticketd/ticketd/client). For TestMain or a program, Start and
// Server.Close do the same without a testing.TB.
//
// # What runs
//
// The node is the one the ticketd binary runs (package server): the state
// machine, hashicorp/raft with its bolt log fsynced on every write, the
// leader's issuer and the HTTP API, over real TCP. Only its timings differ
// from production: a single voter has no quorum to wait for, so the node
// times out as a follower after 10 ms instead of 500 ms and elects itself;
// Start returns in about 30 ms (45 ms with -race), most of it fsyncs, and
// Close takes 1 or 2 ms. Every Server is independent: its own ports,
// directory, Raft group and metrics.
//
// Stop and Restart take the node down and bring it back from its data on
// the same ports, for tests of how code rides out an outage or a restart;
// Close ends it for good.
//
// Authentication is off unless WithAuth or WithTokens turns it on; the Redis
// protocol front is off unless WithRESP asks for it. Logs are discarded
// unless WithLogger gives a logger or TICKETD_TEST_LOG is set in the
// environment (then they go to stderr).
//
// This package lives in a module of its own so that the SDK's module needs
// nothing of the server; only tests import it. The example application in
// examples/orders of the repository is a module that tests with it.
package ticketdtest

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/auth"
	"github.com/ticketd/ticketd/client"
	"github.com/ticketd/ticketd/server"
)

// DefaultStartTimeout bounds how long Start waits for the node to serve as
// leader and to create the sequences the options ask for.
const DefaultStartTimeout = 30 * time.Second

// Server is a running single-node ticketd.
type Server struct {
	// URL is the API's base URL, http://127.0.0.1:PORT: give it to
	// client.New or to the code under test.
	URL string
	// Client is an SDK client of the node, closed by Close. With
	// authentication on it sends AdminToken, so it may create sequences;
	// give the code under test a client with ReserveToken to test what an
	// application may do.
	Client *client.Client
	// AdminToken and ReserveToken are the node's tokens ("" when
	// authentication is off).
	AdminToken   string
	ReserveToken string
	// RESPAddr is the Redis-protocol front's address, 127.0.0.1:PORT, with
	// WithRESP; "" without it.
	RESPAddr string

	dir     string
	ownsDir bool // made by Start, removed by Close
	// cfg is the node's configuration, startTimeout the options'; the
	// addresses are the ports chosen at the first start, taken again by
	// Restart.
	cfg          server.Config
	startTimeout time.Duration
	httpAddr     string
	raftAddr     string
	respAddr     string

	mu      sync.Mutex
	node    *server.Server   // nil while stopped
	clients []*client.Client // made by NewClient; closed by Close
	closed  bool
	once    sync.Once
	err     error
}

// Option configures a Server; pass it to New or Start. A bad option makes
// Start return an error that names it (New fails the test with it).
type Option func(*settings) error

type settings struct {
	sequences    []sequenceSpec
	auth         bool
	admin        string
	reserve      string
	resp         bool
	logger       *slog.Logger
	clientOpts   []client.Option
	startTimeout time.Duration
	dir          string // set by New: t.TempDir()
}

type sequenceSpec struct {
	name       string
	start, max int64
}

// WithSequence creates sequence name, whose first ID is start (0 takes the
// server's default, 1), before New or Start returns.
func WithSequence(name string, start int64) Option {
	return WithSequenceSettings(name, client.SequenceSettings{Start: start})
}

// WithSequenceSettings creates sequence name with the given settings before
// New or Start returns; a small Max lets a test reach client.ErrExhausted. A
// zero field takes the server's default, as with client.CreateSequence.
func WithSequenceSettings(name string, s client.SequenceSettings) Option {
	return func(st *settings) error {
		if err := api.ValidateSequenceName(name); err != nil {
			return fmt.Errorf("WithSequence(%q): %v", name, err)
		}
		start, maxID := api.DefaultStart, api.DefaultMax
		if s.Start != 0 {
			start = s.Start
		}
		if s.Max != 0 {
			maxID = s.Max
		}
		if s.Start < 0 || s.Max < 0 {
			return fmt.Errorf("WithSequence(%q): start (%d) and max (%d) must not be negative; zero takes the default", name, s.Start, s.Max)
		}
		if err := api.ValidateBounds(start, maxID); err != nil {
			return fmt.Errorf("WithSequence(%q): %v", name, err)
		}
		for _, q := range st.sequences {
			if q.name == name && (q.start != start || q.max != maxID) {
				return fmt.Errorf("WithSequence(%q): given twice with different settings (start %d, max %d and start %d, max %d)", name, q.start, q.max, start, maxID)
			}
		}
		st.sequences = append(st.sequences, sequenceSpec{name: name, start: start, max: maxID})
		return nil
	}
}

// WithAuth turns authentication on with a random admin and reserve token,
// found in Server.AdminToken and Server.ReserveToken.
func WithAuth() Option {
	return func(st *settings) error {
		st.auth = true
		return nil
	}
}

// WithTokens turns authentication on with the given tokens (at least 22
// characters each, no white space, different), for code under test whose
// configuration holds fixed tokens.
func WithTokens(admin, reserve string) Option {
	return func(st *settings) error {
		for _, tk := range []struct{ scope, token string }{{"admin", admin}, {"reserve", reserve}} {
			switch {
			case len(tk.token) < auth.MinTokenLength:
				return fmt.Errorf("WithTokens: the %s token is %d characters; at least %d are required", tk.scope, len(tk.token), auth.MinTokenLength)
			case strings.ContainsAny(tk.token, " \t\r\n;#"):
				return fmt.Errorf("WithTokens: the %s token holds white space, ';' or '#'", tk.scope)
			}
		}
		if admin == reserve {
			return errors.New("WithTokens: the admin and the reserve token are the same")
		}
		st.auth, st.admin, st.reserve = true, admin, reserve
		return nil
	}
}

// WithRESP serves the Redis-protocol front too, on 127.0.0.1 with an
// ephemeral port: Server.RESPAddr.
func WithRESP() Option {
	return func(st *settings) error {
		st.resp = true
		return nil
	}
}

// WithLogger sends the node's logs to l (default: discarded, or stderr when
// TICKETD_TEST_LOG is set).
func WithLogger(l *slog.Logger) Option {
	return func(st *settings) error {
		if l == nil {
			return errors.New("WithLogger: the logger is nil")
		}
		st.logger = l
		return nil
	}
}

// WithClientOptions adds options to Server.Client (after the token's); for
// example client.WithCallTimeout, so that a test of an outage fails fast.
func WithClientOptions(opts ...client.Option) Option {
	return func(st *settings) error {
		for i, o := range opts {
			if o == nil {
				return fmt.Errorf("WithClientOptions: option %d is nil", i)
			}
		}
		st.clientOpts = append(st.clientOpts, opts...)
		return nil
	}
}

// WithStartTimeout bounds how long Start waits for the node to serve and the
// sequences to exist (default DefaultStartTimeout).
func WithStartTimeout(d time.Duration) Option {
	return func(st *settings) error {
		if d <= 0 {
			return fmt.Errorf("WithStartTimeout(%v): the timeout must be positive", d)
		}
		st.startTimeout = d
		return nil
	}
}

// New starts a node for the test, as Start does, and stops it with
// t.Cleanup; its data lives in t.TempDir(). It fails the test if the node
// does not start.
func New(t testing.TB, opts ...Option) *Server {
	t.Helper()
	// TempDir first: cleanups run last-in first-out, so the node stops
	// before its directory is removed.
	dir := t.TempDir()
	s, err := start(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("ticketdtest: close: %v", err)
		}
	})
	return s
}

// Start starts a node whose data lives in a new temporary directory, waits
// until it serves as leader and creates the sequences the options ask for.
// Close stops it and removes the directory.
func Start(opts ...Option) (*Server, error) {
	return start("", opts)
}

func start(dir string, opts []Option) (*Server, error) {
	st := settings{startTimeout: DefaultStartTimeout}
	var errs []error
	for i, o := range opts {
		if o == nil {
			errs = append(errs, fmt.Errorf("option %d is nil", i))
			continue
		}
		if err := o(&st); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("ticketdtest: bad option: %w", err)
	}
	s := &Server{dir: dir}
	if dir == "" {
		var err error
		if s.dir, err = os.MkdirTemp("", "ticketdtest-"); err != nil {
			return nil, fmt.Errorf("ticketdtest: %w", err)
		}
		s.ownsDir = true
	}
	if err := s.start(st); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("ticketdtest: %w", err)
	}
	return s, nil
}

func (s *Server) start(st settings) error {
	cfg, err := s.config(st)
	if err != nil {
		return err
	}
	s.cfg, s.startTimeout = cfg, st.startTimeout
	s.httpAddr, s.raftAddr = "127.0.0.1:0", "127.0.0.1:0"
	if st.resp {
		s.respAddr = "127.0.0.1:0"
	}
	ctx, cancel := context.WithTimeout(context.Background(), st.startTimeout)
	defer cancel()
	s.mu.Lock()
	err = s.startNodeLocked(ctx)
	s.mu.Unlock()
	if err != nil {
		return err
	}
	s.URL = "http://" + s.httpAddr
	s.RESPAddr = s.respAddr
	copts := st.clientOpts
	if s.AdminToken != "" {
		copts = append([]client.Option{client.WithBearerToken(s.AdminToken)}, copts...)
	}
	if s.Client, err = client.New([]string{s.URL}, copts...); err != nil {
		return fmt.Errorf("SDK client: %w", err)
	}
	for _, q := range st.sequences {
		if _, _, err := s.Client.CreateSequence(ctx, q.name, client.SequenceSettings{Start: q.start, Max: q.max}); err != nil {
			return fmt.Errorf("create sequence %q: %w", q.name, err)
		}
	}
	return nil
}

// startNodeLocked starts the node on s's addresses (port 0 the first time,
// the ports then chosen on a restart) and waits until it serves.
func (s *Server) startNodeLocked(ctx context.Context) error {
	cfg := s.cfg
	var lns []net.Listener
	closeAll := func() {
		for _, ln := range lns {
			_ = ln.Close()
		}
	}
	for _, addr := range []string{s.httpAddr, s.raftAddr, s.respAddr} {
		if addr == "" {
			continue
		}
		ln, err := listen(ctx, addr)
		if err != nil {
			closeAll()
			return err
		}
		lns = append(lns, ln)
	}
	cfg.HTTPListener = lns[0]
	cfg.Cluster.Listener = lns[1]
	cfg.Cluster.RaftAddr = lns[1].Addr().String()
	if len(lns) > 2 {
		cfg.RESPListener = lns[2]
	}
	node, err := server.Start(cfg)
	if err != nil {
		closeAll() // Start closes them on most errors, not all
		return fmt.Errorf("start the node: %w", err)
	}
	s.node = node
	s.httpAddr, s.raftAddr, s.respAddr = node.HTTPAddr(), node.Node().RaftAddr(), node.RESPAddr()
	return s.waitServing(ctx, node)
}

// listen listens on addr; a port given (a restart's) may still be held
// briefly, so it is tried again until ctx ends.
func listen(ctx context.Context, addr string) (net.Listener, error) {
	for {
		ln, err := net.Listen("tcp", addr)
		if err == nil || strings.HasSuffix(addr, ":0") {
			return ln, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("listen on %s: %w", addr, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// config is the node's configuration: production settings but for the
// addresses, the directory, a single voter's timings and the options'.
func (s *Server) config(st settings) (server.Config, error) {
	cfg := server.DefaultConfig()
	cfg.Cluster.ID = "ticketdtest"
	cfg.Cluster.DataDir = s.dir
	cfg.Cluster.Bootstrap = true // a no-op on a restart: the data dir holds state
	// A single voter waits one randomized heartbeat timeout (here 10 to
	// 20 ms) as a follower, then elects itself. Short timers are safe with
	// one voter: it needs no peer's vote, and as leader it counts only
	// itself for its lease, so it never steps down (hashicorp/raft's
	// checkLeaderLease). At production's 500 ms a fresh node would take
	// half a second or more to serve; at 10 ms it takes about 30 ms (see
	// TestStartupTime). The election timeout stays at its default: the
	// node also bounds its Barrier and the entry recording its address
	// with it, both waits on the fsynced log.
	cfg.Cluster.HeartbeatTimeout = 10 * time.Millisecond
	cfg.Cluster.LeaderLeaseTimeout = 10 * time.Millisecond
	cfg.Cluster.CommitTimeout = 5 * time.Millisecond
	cfg.Cluster.RaftLogLevel = slog.LevelError
	cfg.Version = "ticketdtest"
	log := st.logger
	switch {
	case log != nil:
	case os.Getenv("TICKETD_TEST_LOG") != "":
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
		cfg.Cluster.RaftLogLevel = slog.LevelInfo
	default:
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	cfg.Logger = log
	if st.auth {
		if st.admin == "" {
			st.admin, st.reserve = randomToken(), randomToken()
		}
		tokens, err := auth.Parse(strings.NewReader("admin " + st.admin + "\nreserve " + st.reserve + "\n"))
		if err != nil {
			return cfg, fmt.Errorf("tokens: %w", err)
		}
		cfg.Tokens = tokens
		s.AdminToken, s.ReserveToken = st.admin, st.reserve
	}
	return cfg, nil
}

// waitServing waits until the node serves as leader (its issuer holds the
// leadership, after the Barrier) and its /readyz, as a load balancer asks
// it, answers 200.
func (s *Server) waitServing(ctx context.Context, node *server.Server) error {
	transport := &http.Transport{}
	defer transport.CloseIdleConnections()
	hc := &http.Client{Transport: transport, Timeout: time.Second}
	var last error
	for {
		if _, ok := node.Issuer().Serving(); !ok {
			last = errors.New("the node does not serve as leader yet")
		} else if last = readyz(ctx, hc, "http://"+node.HTTPAddr()); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the node did not become ready: %w (last: %v)", ctx.Err(), last)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func readyz(ctx context.Context, hc *http.Client, base string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/readyz", nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/readyz: %s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

func randomToken() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

// NewClient returns another SDK client of the node, with opts only (no
// token unless opts give one: client.WithBearerToken(s.ReserveToken), say).
// Close closes it.
func (s *Server) NewClient(opts ...client.Option) (*client.Client, error) {
	c, err := client.New([]string{s.URL}, opts...)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = c.Close()
		return nil, errClosed
	}
	s.clients = append(s.clients, c)
	return c, nil
}

// Stop stops the node gracefully and keeps its data and ports' numbers:
// until Restart, calls fail as with a cluster down (the SDK's Sequences serve
// from their caches meanwhile). Stopping a stopped node does nothing.
func (s *Server) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosed
	}
	if err := s.stopLocked(); err != nil {
		return fmt.Errorf("ticketdtest: stop: %w", err)
	}
	return nil
}

// Restart stops the node if it runs and starts it again from its data on the
// same ports, so URL, RESPAddr and the clients stay valid; it returns once the
// node serves again. Sequences and the IDs handed out survive: a restart
// never hands an ID out again.
func (s *Server) Restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosed
	}
	if err := s.stopLocked(); err != nil {
		return fmt.Errorf("ticketdtest: stop: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.startTimeout)
	defer cancel()
	if err := s.startNodeLocked(ctx); err != nil {
		return fmt.Errorf("ticketdtest: restart: %w", err)
	}
	return nil
}

var errClosed = errors.New("ticketdtest: the server is closed")

func (s *Server) stopLocked() error {
	if s.node == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := s.node.Shutdown(ctx)
	s.node = nil
	return err
}

// Close closes the SDK clients, stops the node gracefully and, for a Server
// from Start, removes its directory. Once it returns, the node's goroutines
// have ended and its ports are free. It is idempotent; New's cleanup calls
// it, and a test may call it earlier to see how its code copes with the
// server gone for good.
func (s *Server) Close() error {
	s.once.Do(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.closed = true
		var errs []error
		if s.Client != nil {
			errs = append(errs, s.Client.Close())
		}
		for _, c := range s.clients {
			errs = append(errs, c.Close())
		}
		errs = append(errs, s.stopLocked())
		if s.ownsDir {
			errs = append(errs, os.RemoveAll(s.dir))
		}
		s.err = errors.Join(errs...)
	})
	return s.err
}
