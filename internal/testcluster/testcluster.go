// Package testcluster runs real ticketd clusters inside a test process: Raft
// over TCP on 127.0.0.1, bolt stores in temp dirs, real HTTP servers, and a
// fault network that cuts Raft links for real. Server, SDK and fault tests
// share it.
package testcluster

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/auth"
	"github.com/ticketd/ticketd/cluster"
	"github.com/ticketd/ticketd/internal/testkit"
	"github.com/ticketd/ticketd/server"
)

// Cluster is a real cluster in this process: real Raft over TCP on
// 127.0.0.1, real bolt stores in temp dirs, real HTTP servers.
type Cluster struct {
	t     testing.TB
	Net   *FaultNet
	tweak func(id string, cfg *server.Config)
	opts  Options
	mu    sync.Mutex
	nodes map[string]*Node
	peers []cluster.Peer
}

type Node struct {
	ID       string
	Dir      string
	RaftAddr string
	HTTPAddr string
	// Srv is nil while the node is killed.
	Srv *server.Server
}

func testLogger(t testing.TB) *slog.Logger {
	if os.Getenv("TICKETD_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func testConfig(t testing.TB, id, dir string, raftLn, httpLn net.Listener) server.Config {
	cfg := server.DefaultConfig()
	cfg.Cluster.ID = id
	cfg.Cluster.DataDir = dir
	cfg.Cluster.Listener = raftLn
	cfg.Cluster.RaftAddr = raftLn.Addr().String()
	// Fast but not twitchy timers: the race detector on 2 cores is slow.
	cfg.Cluster.HeartbeatTimeout = 300 * time.Millisecond
	cfg.Cluster.ElectionTimeout = 300 * time.Millisecond
	cfg.Cluster.LeaderLeaseTimeout = 150 * time.Millisecond
	cfg.Cluster.CommitTimeout = 5 * time.Millisecond
	cfg.Cluster.ProbeTimeout = 500 * time.Millisecond
	cfg.Cluster.SnapshotInterval = 200 * time.Millisecond
	cfg.Cluster.LevelProbeInterval = 100 * time.Millisecond
	cfg.Cluster.RaftLogLevel = slog.LevelError
	if os.Getenv("TICKETD_TEST_LOG") != "" {
		cfg.Cluster.RaftLogLevel = slog.LevelInfo
	}
	cfg.HTTPListener = httpLn
	cfg.MetadataInterval = 100 * time.Millisecond
	cfg.RequestTimeout = 5 * time.Second
	cfg.Logger = testLogger(t).With("node", id)
	return cfg
}

func listen(t testing.TB, addr string) net.Listener {
	t.Helper()
	var ln net.Listener
	// A port just freed by a killed node may linger briefly.
	testkit.EventuallyErr(t, 5*time.Second, 100*time.Millisecond, "listen "+addr, func() (err error) {
		ln, err = net.Listen("tcp", addr)
		return err
	})
	return ln
}

// newTestCluster starts n nodes bootstrapped from one initial cluster; tweak,
// if not nil, adjusts each node's config (also on restart).
func New(t testing.TB, n int, tweak func(id string, cfg *server.Config)) *Cluster {
	t.Helper()
	return NewWithOptions(t, n, Options{Tweak: tweak})
}

// Options configure a test cluster beyond its size.
type Options struct {
	// Tweak adjusts each node's config (also on restart).
	Tweak func(id string, cfg *server.Config)
	// Token is sent by the cluster's own requests (readiness, creating
	// sequences) when the nodes require authentication.
	Token string
	// Client, with Scheme "https", reaches nodes that serve HTTPS.
	Client *http.Client
	Scheme string
}

// NewWithOptions starts n nodes bootstrapped from one initial cluster.
func NewWithOptions(t testing.TB, n int, o Options) *Cluster {
	t.Helper()
	tweak := o.Tweak
	tc := &Cluster{t: t, nodes: map[string]*Node{}, Net: newFaultNet(), tweak: tweak, opts: o}
	if tc.opts.Client == nil {
		tc.opts.Client = http.DefaultClient
	}
	if tc.opts.Scheme == "" {
		tc.opts.Scheme = "http"
	}
	raftLns := make([]net.Listener, n)
	httpLns := make([]net.Listener, n)
	for i := 0; i < n; i++ {
		raftLns[i] = listen(t, "127.0.0.1:0")
		httpLns[i] = listen(t, "127.0.0.1:0")
		tc.peers = append(tc.peers, cluster.Peer{ID: fmt.Sprintf("n%d", i+1), RaftAddr: raftLns[i].Addr().String()})
	}
	base := t.TempDir()
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("n%d", i+1)
		tn := &Node{ID: id, Dir: filepath.Join(base, id), RaftAddr: raftLns[i].Addr().String(), HTTPAddr: httpLns[i].Addr().String()}
		tc.nodes[id] = tn
		cfg := testConfig(t, id, tn.Dir, raftLns[i], httpLns[i])
		cfg.Cluster.InitialCluster = tc.peers
		tc.Net.register(id, tn.RaftAddr)
		cfg.Cluster.Dial = tc.Net.dialer(id)
		if tweak != nil {
			tweak(id, &cfg)
		}
		srv, err := server.Start(cfg)
		if err != nil {
			t.Fatalf("start %s: %v", id, err)
		}
		tn.Srv = srv
	}
	t.Cleanup(tc.Shutdown)
	tc.WaitReady(10 * time.Second)
	return tc
}

func (tc *Cluster) Shutdown() {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	for _, n := range tc.nodes {
		if n.Srv != nil {
			_ = n.Srv.Kill()
			n.Srv = nil
		}
	}
}

// AddNode starts a new empty node that joins through the given URLs.
func (tc *Cluster) AddNode(id string, join []string) *Node {
	tc.t.Helper()
	return tc.AddNodeWith(id, join, nil)
}

// AddNodeWith is AddNode with a config tweak for the new node.
func (tc *Cluster) AddNodeWith(id string, join []string, tweak func(cfg *server.Config)) *Node {
	tc.t.Helper()
	raftLn := listen(tc.t, "127.0.0.1:0")
	httpLn := listen(tc.t, "127.0.0.1:0")
	tn := &Node{ID: id, Dir: filepath.Join(tc.t.TempDir(), id), RaftAddr: raftLn.Addr().String(), HTTPAddr: httpLn.Addr().String()}
	cfg := testConfig(tc.t, id, tn.Dir, raftLn, httpLn)
	cfg.Join = join
	tc.Net.register(id, tn.RaftAddr)
	cfg.Cluster.Dial = tc.Net.dialer(id)
	if tc.tweak != nil {
		tc.tweak(id, &cfg)
	}
	if tweak != nil {
		tweak(&cfg)
	}
	srv, err := server.Start(cfg)
	if err != nil {
		tc.t.Fatalf("start %s: %v", id, err)
	}
	tn.Srv = srv
	tc.mu.Lock()
	tc.nodes[id] = tn
	tc.mu.Unlock()
	return tn
}

// kill stops a node abruptly; its data dir stays.
func (tc *Cluster) Kill(id string) {
	tc.t.Helper()
	tc.mu.Lock()
	n := tc.nodes[id]
	srv := n.Srv
	n.Srv = nil
	tc.mu.Unlock()
	if srv != nil {
		_ = srv.Kill()
	}
}

// restart starts a killed node again from its data dir, on the same
// addresses, with the same flags.
func (tc *Cluster) Restart(id string) {
	tc.t.Helper()
	tc.RestartWith(id, nil)
}

// RestartWith is Restart with a config tweak applied last (a promoted
// standby, say, has no initial cluster).
func (tc *Cluster) RestartWith(id string, tweak func(cfg *server.Config)) {
	tc.t.Helper()
	tc.mu.Lock()
	n := tc.nodes[id]
	tc.mu.Unlock()
	cfg := testConfig(tc.t, id, n.Dir, listen(tc.t, n.RaftAddr), listen(tc.t, n.HTTPAddr))
	cfg.Cluster.InitialCluster = tc.peers
	cfg.Cluster.Dial = tc.Net.dialer(id)
	if tc.tweak != nil {
		tc.tweak(id, &cfg)
	}
	if tweak != nil {
		tweak(&cfg)
	}
	srv, err := server.Start(cfg)
	if err != nil {
		tc.t.Fatalf("restart %s: %v", id, err)
	}
	tc.mu.Lock()
	n.Srv = srv
	tc.mu.Unlock()
}

func (tc *Cluster) Running() []*Node {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	var out []*Node
	for _, n := range tc.nodes {
		if n.Srv != nil {
			out = append(out, n)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// leader waits for a serving leader among the running nodes.
func (tc *Cluster) Leader(timeout time.Duration) *Node {
	tc.t.Helper()
	var leader *Node
	testkit.Eventually(tc.t, timeout, 20*time.Millisecond, "a serving leader", func() bool {
		for _, n := range tc.Running() {
			if _, ok := n.Srv.Issuer().Serving(); ok {
				leader = n
				return true
			}
		}
		return false
	})
	return leader
}

func (tc *Cluster) WaitReady(timeout time.Duration) {
	tc.t.Helper()
	testkit.EventuallyErr(tc.t, timeout, 20*time.Millisecond, "every running node ready", func() error {
		for _, n := range tc.Running() {
			// /readyz is open: no token, as a load balancer asks.
			r, err := testkit.Client{HTTP: tc.opts.Client}.Call(http.MethodGet, tc.URL(n)+"/readyz", nil)
			if err != nil {
				return fmt.Errorf("%s: %w", n.ID, err)
			}
			if r.Status != http.StatusOK {
				return fmt.Errorf("%s: /readyz %d", n.ID, r.Status)
			}
		}
		return nil
	})
}

// URL is node n's API base URL.
func (tc *Cluster) URL(n *Node) string { return tc.opts.Scheme + "://" + n.HTTPAddr }

// Client is a testkit client with the cluster's HTTP client and token.
func (tc *Cluster) Client() testkit.Client {
	return testkit.Client{HTTP: tc.opts.Client, Token: tc.opts.Token}
}

// Do is testkit's Client.Do with the cluster's HTTP client and token.
func (tc *Cluster) Do(method, url string, body any, out any) (int, error) {
	return tc.Client().Do(method, url, body, out)
}

func (tc *Cluster) CreateSequence(name string, body any) {
	tc.t.Helper()
	n := tc.Running()[0]
	testkit.EventuallyErr(tc.t, 10*time.Second, 50*time.Millisecond, "sequence "+name+" created", func() error {
		var seq api.Sequence
		status, err := tc.Do(http.MethodPut, tc.URL(n)+"/v1/sequences/"+name, body, &seq)
		if err == nil && (status == http.StatusCreated || status == http.StatusOK) {
			return nil
		}
		return fmt.Errorf("status %d err %v", status, err)
	})
}

// reserve reserves through node n; ok is false on any failure (which the
// caller treats as an unknown outcome: the range was not handed out).
func Reserve(n *Node, seq string, count int64) (api.Range, int, error) {
	var r api.Range
	status, err := testkit.Client{}.Do(http.MethodPost, "http://"+n.HTTPAddr+"/v1/sequences/"+seq+"/ranges", api.ReserveRequest{Count: count}, &r)
	return r, status, err
}

// RangeLog collects acknowledged ranges and checks them.
type RangeLog struct {
	mu     sync.Mutex
	ranges []api.Range
}

func (l *RangeLog) Add(r api.Range) {
	l.mu.Lock()
	l.ranges = append(l.ranges, r)
	l.mu.Unlock()
}

// checkDisjoint fails the test if any two acknowledged ranges overlap.
func (l *RangeLog) CheckDisjoint(t testing.TB) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	rs := append([]api.Range(nil), l.ranges...)
	sort.Slice(rs, func(i, j int) bool { return rs[i].First < rs[j].First })
	for i := 1; i < len(rs); i++ {
		if rs[i].First <= rs[i-1].Last {
			t.Fatalf("ranges overlap: %+v and %+v", rs[i-1], rs[i])
		}
	}
}

func (l *RangeLog) Max() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var m int64
	for _, r := range l.ranges {
		m = max(m, r.Last)
	}
	return m
}

func (l *RangeLog) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.ranges)
}

// Node returns the node with the given id (running or killed).
func (tc *Cluster) Node(id string) *Node {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	return tc.nodes[id]
}

// URLs returns the API base URLs of the running nodes.
func (tc *Cluster) URLs() []string {
	var out []string
	for _, n := range tc.Running() {
		out = append(out, tc.URL(n))
	}
	return out
}

// Tokens is an admin and a reserve token as a tokens file holds them, for a
// cluster (or a handler) with authentication on.
func Tokens(tb testing.TB, admin, reserve string) *auth.Tokens {
	tb.Helper()
	tk, err := auth.Parse(strings.NewReader("admin " + admin + "\nreserve " + reserve + "\n"))
	if err != nil {
		tb.Fatal(err)
	}
	return tk
}
