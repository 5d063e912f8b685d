package server

import (
	"bytes"
	"context"
	"encoding/json"
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
	"github.com/ticketd/ticketd/cluster"
)

// testCluster is a real cluster in this process: real Raft over TCP on
// 127.0.0.1, real bolt stores in temp dirs, real HTTP servers.
type testCluster struct {
	t     *testing.T
	net   *faultNet
	tweak func(id string, cfg *Config)
	mu    sync.Mutex
	nodes map[string]*testNode
	peers []cluster.Peer
}

type testNode struct {
	id       string
	dir      string
	raftAddr string
	httpAddr string
	srv      *Server
}

func testLogger(t *testing.T) *slog.Logger {
	if os.Getenv("TICKETD_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func testConfig(t *testing.T, id, dir string, raftLn, httpLn net.Listener) Config {
	cfg := DefaultConfig()
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

func listen(t *testing.T, addr string) net.Listener {
	t.Helper()
	var ln net.Listener
	var err error
	// A port just freed by a killed node may linger briefly.
	for i := 0; i < 50; i++ {
		if ln, err = net.Listen("tcp", addr); err == nil {
			return ln
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("listen %s: %v", addr, err)
	return nil
}

// newTestCluster starts n nodes bootstrapped from one initial cluster; tweak,
// if not nil, adjusts each node's config (also on restart).
func newTestCluster(t *testing.T, n int, tweak func(id string, cfg *Config)) *testCluster {
	t.Helper()
	tc := &testCluster{t: t, nodes: map[string]*testNode{}, net: newFaultNet(), tweak: tweak}
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
		tn := &testNode{id: id, dir: filepath.Join(base, id), raftAddr: raftLns[i].Addr().String(), httpAddr: httpLns[i].Addr().String()}
		tc.nodes[id] = tn
		cfg := testConfig(t, id, tn.dir, raftLns[i], httpLns[i])
		cfg.Cluster.InitialCluster = tc.peers
		tc.net.register(id, tn.raftAddr)
		cfg.Cluster.Dial = tc.net.dialer(id)
		if tweak != nil {
			tweak(id, &cfg)
		}
		srv, err := Start(cfg)
		if err != nil {
			t.Fatalf("start %s: %v", id, err)
		}
		tn.srv = srv
	}
	t.Cleanup(tc.shutdown)
	tc.waitReady(10 * time.Second)
	return tc
}

func (tc *testCluster) shutdown() {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	for _, n := range tc.nodes {
		if n.srv != nil {
			_ = n.srv.Kill()
			n.srv = nil
		}
	}
}

// addNode starts a new empty node that joins through the given URLs.
func (tc *testCluster) addNode(id string, join []string) *testNode {
	tc.t.Helper()
	raftLn := listen(tc.t, "127.0.0.1:0")
	httpLn := listen(tc.t, "127.0.0.1:0")
	tn := &testNode{id: id, dir: filepath.Join(tc.t.TempDir(), id), raftAddr: raftLn.Addr().String(), httpAddr: httpLn.Addr().String()}
	cfg := testConfig(tc.t, id, tn.dir, raftLn, httpLn)
	cfg.Join = join
	tc.net.register(id, tn.raftAddr)
	cfg.Cluster.Dial = tc.net.dialer(id)
	srv, err := Start(cfg)
	if err != nil {
		tc.t.Fatalf("start %s: %v", id, err)
	}
	tn.srv = srv
	tc.mu.Lock()
	tc.nodes[id] = tn
	tc.mu.Unlock()
	return tn
}

// kill stops a node abruptly; its data dir stays.
func (tc *testCluster) kill(id string) {
	tc.t.Helper()
	tc.mu.Lock()
	n := tc.nodes[id]
	srv := n.srv
	n.srv = nil
	tc.mu.Unlock()
	if srv != nil {
		_ = srv.Kill()
	}
}

// restart starts a killed node again from its data dir, on the same
// addresses, with the same flags.
func (tc *testCluster) restart(id string) {
	tc.t.Helper()
	tc.mu.Lock()
	n := tc.nodes[id]
	tc.mu.Unlock()
	cfg := testConfig(tc.t, id, n.dir, listen(tc.t, n.raftAddr), listen(tc.t, n.httpAddr))
	cfg.Cluster.InitialCluster = tc.peers
	cfg.Cluster.Dial = tc.net.dialer(id)
	if tc.tweak != nil {
		tc.tweak(id, &cfg)
	}
	srv, err := Start(cfg)
	if err != nil {
		tc.t.Fatalf("restart %s: %v", id, err)
	}
	tc.mu.Lock()
	n.srv = srv
	tc.mu.Unlock()
}

func (tc *testCluster) running() []*testNode {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	var out []*testNode
	for _, n := range tc.nodes {
		if n.srv != nil {
			out = append(out, n)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// leader waits for a serving leader among the running nodes.
func (tc *testCluster) leader(timeout time.Duration) *testNode {
	tc.t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		for _, n := range tc.running() {
			if _, ok := n.srv.Issuer().Serving(); ok {
				return n
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	tc.t.Fatalf("no serving leader within %v", timeout)
	return nil
}

func (tc *testCluster) waitReady(timeout time.Duration) {
	tc.t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		ready := 0
		nodes := tc.running()
		for _, n := range nodes {
			if resp, err := http.Get("http://" + n.httpAddr + "/readyz"); err == nil {
				_ = resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					ready++
				}
			}
		}
		if ready == len(nodes) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	tc.t.Fatalf("cluster not ready within %v", timeout)
}

// do sends a JSON request and decodes a JSON answer into out (if not nil).
func do(method, url string, body any, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		switch b := body.(type) {
		case string:
			rd = strings.NewReader(b)
		default:
			buf, err := json.Marshal(b)
			if err != nil {
				return 0, err
			}
			rd = bytes.NewReader(buf)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, err
	}
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, fmt.Errorf("decode %s: %w", data, err)
		}
	}
	return resp.StatusCode, nil
}

func (tc *testCluster) createSequence(name string, body any) {
	tc.t.Helper()
	n := tc.running()[0]
	deadline := time.Now().Add(10 * time.Second)
	for {
		var seq api.Sequence
		status, err := do(http.MethodPut, "http://"+n.httpAddr+"/v1/sequences/"+name, body, &seq)
		if err == nil && (status == http.StatusCreated || status == http.StatusOK) {
			return
		}
		if time.Now().After(deadline) {
			tc.t.Fatalf("create %s: status %d err %v", name, status, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// reserve reserves through node n; ok is false on any failure (which the
// caller treats as an unknown outcome: the range was not handed out).
func reserve(n *testNode, seq string, count int64) (api.Range, int, error) {
	var r api.Range
	status, err := do(http.MethodPost, "http://"+n.httpAddr+"/v1/sequences/"+seq+"/ranges", api.ReserveRequest{Count: count}, &r)
	return r, status, err
}

// rangeLog collects acknowledged ranges and checks them.
type rangeLog struct {
	mu     sync.Mutex
	ranges []api.Range
}

func (l *rangeLog) add(r api.Range) {
	l.mu.Lock()
	l.ranges = append(l.ranges, r)
	l.mu.Unlock()
}

// checkDisjoint fails the test if any two acknowledged ranges overlap.
func (l *rangeLog) checkDisjoint(t *testing.T) {
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

func (l *rangeLog) max() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var m int64
	for _, r := range l.ranges {
		m = max(m, r.Last)
	}
	return m
}

func (l *rangeLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.ranges)
}
