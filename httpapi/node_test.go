package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/server"
)

// testNode is a real single-node ticketd (Raft over TCP on 127.0.0.1, bolt in
// a temp dir, real HTTP) and a keep-alive client for it.
type testNode struct {
	srv    *server.Server
	base   string // http://127.0.0.1:port
	client *http.Client
}

// startNode bootstraps a single-node cluster and waits until /readyz is 200.
func startNode(tb testing.TB) *testNode {
	tb.Helper()
	raftLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("listen raft: %v", err)
	}
	httpLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = raftLn.Close()
		tb.Fatalf("listen http: %v", err)
	}
	cfg := server.DefaultConfig()
	cfg.Cluster.ID = "n1"
	cfg.Cluster.Bootstrap = true
	cfg.Cluster.DataDir = tb.TempDir()
	cfg.Cluster.Listener = raftLn
	cfg.Cluster.RaftAddr = raftLn.Addr().String()
	// Same timers as the server package's harness: fast, but not twitchy
	// under the race detector on 2 cores.
	cfg.Cluster.HeartbeatTimeout = 300 * time.Millisecond
	cfg.Cluster.ElectionTimeout = 300 * time.Millisecond
	cfg.Cluster.LeaderLeaseTimeout = 150 * time.Millisecond
	cfg.Cluster.CommitTimeout = 5 * time.Millisecond
	cfg.Cluster.ProbeTimeout = 500 * time.Millisecond
	cfg.Cluster.SnapshotInterval = 200 * time.Millisecond
	cfg.Cluster.RaftLogLevel = slog.LevelError
	cfg.HTTPListener = httpLn
	cfg.MetadataInterval = 100 * time.Millisecond
	cfg.RequestTimeout = 5 * time.Second
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))

	srv, err := server.Start(cfg)
	if err != nil {
		tb.Fatalf("start node: %v", err)
	}
	tr := &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256, IdleConnTimeout: 30 * time.Second}
	n := &testNode{srv: srv, base: "http://" + srv.HTTPAddr(), client: &http.Client{Transport: tr, Timeout: 20 * time.Second}}
	tb.Cleanup(func() {
		tr.CloseIdleConnections()
		_ = srv.Kill()
	})

	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := n.client.Get(n.base + "/readyz")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			tb.Fatalf("node not ready within 15s (last: %v)", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// /readyz only says a leader is known; wait until it serves too.
	for {
		if _, ok := srv.Issuer().Serving(); ok {
			return n
		}
		if time.Now().After(deadline) {
			tb.Fatalf("node ready but not serving within 15s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// response is one answer, fully read.
type response struct {
	status int
	header http.Header
	body   []byte
}

// do sends body (a string, sent as is; empty means no body) and reads the
// whole answer. path may hold escapes; it is sent as written.
func (n *testNode) do(tb testing.TB, method, path, body string) response {
	tb.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, n.base+path, rd)
	if err != nil {
		tb.Fatalf("%s %s: new request: %v", method, path, err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := n.client.Do(req)
	if err != nil {
		tb.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: data}
}

// decodeStrict decodes a JSON answer, numbers kept exact.
func decodeStrict(tb testing.TB, data []byte, v any) {
	tb.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		tb.Fatalf("decode %s: %v", data, err)
	}
}

// expectProblem checks that r is a problem details answer with this status
// and type whose detail holds every one of details (case-insensitive).
func expectProblem(tb testing.TB, what string, r response, status int, typ string, details ...string) api.Problem {
	tb.Helper()
	if r.status != status {
		tb.Errorf("%s: status %d, want %d (body %s)", what, r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
		tb.Errorf("%s: Content-Type %q, want application/problem+json", what, ct)
	}
	var p api.Problem
	if err := json.Unmarshal(r.body, &p); err != nil {
		tb.Errorf("%s: body is not a problem: %v: %s", what, err, r.body)
		return p
	}
	if p.Type != typ {
		tb.Errorf("%s: problem type %q, want %q (detail %q)", what, p.Type, typ, p.Detail)
	}
	if p.Status != r.status {
		tb.Errorf("%s: problem status %d, HTTP status %d", what, p.Status, r.status)
	}
	if p.Title == "" {
		tb.Errorf("%s: problem has no title", what)
	}
	for _, d := range details {
		if !strings.Contains(strings.ToLower(p.Detail), strings.ToLower(d)) {
			tb.Errorf("%s: detail %q does not mention %q", what, p.Detail, d)
		}
	}
	if status == http.StatusServiceUnavailable && r.header.Get("Retry-After") == "" {
		tb.Errorf("%s: 503 without Retry-After", what)
	}
	return p
}

func expectJSON(tb testing.TB, what string, r response, status int) {
	tb.Helper()
	if r.status != status {
		tb.Fatalf("%s: status %d, want %d (body %s)", what, r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		tb.Errorf("%s: Content-Type %q, want application/json", what, ct)
	}
}

// reserve reserves count IDs of seq and fails the test unless it gets 200
// with a range of exactly count IDs, which it records in log.
func (n *testNode) reserve(tb testing.TB, log *rangeLog, seq string, count int64) api.Range {
	tb.Helper()
	r := n.do(tb, http.MethodPost, "/v1/sequences/"+seq+"/ranges", `{"count":`+itoa(count)+`}`)
	expectJSON(tb, "reserve "+seq, r, http.StatusOK)
	var rg api.Range
	decodeStrict(tb, r.body, &rg)
	checkRange(tb, rg, seq, count)
	log.add(rg)
	return rg
}

func checkRange(tb testing.TB, rg api.Range, seq string, count int64) {
	tb.Helper()
	if rg.Sequence != seq || rg.First < 1 || rg.Last < rg.First || rg.Last-rg.First+1 != count {
		tb.Fatalf("range %+v: want %d IDs of %q, positive and increasing", rg, count, seq)
	}
}

func itoa(v int64) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// state is what bad input must leave alone: one sequence as GET shows it,
// the list of sequences, and the cluster's members.
type state struct {
	seq     string // raw body of GET /v1/sequences/{name}, or its status
	list    string
	members string
}

func (n *testNode) state(tb testing.TB, seq string) state {
	tb.Helper()
	var st state
	r := n.do(tb, http.MethodGet, "/v1/sequences/"+seq, "")
	switch r.status {
	case http.StatusOK:
		st.seq = string(r.body)
	case http.StatusNotFound:
		st.seq = "404"
	default:
		tb.Fatalf("GET sequence %s: status %d: %s", seq, r.status, r.body)
	}
	r = n.do(tb, http.MethodGet, "/v1/sequences", "")
	expectJSON(tb, "list sequences", r, http.StatusOK)
	st.list = string(r.body)
	r = n.do(tb, http.MethodGet, "/v1/cluster", "")
	expectJSON(tb, "cluster status", r, http.StatusOK)
	var cs api.ClusterStatus
	decodeStrict(tb, r.body, &cs)
	sort.Slice(cs.Members, func(i, j int) bool { return cs.Members[i].ID < cs.Members[j].ID })
	m, _ := json.Marshal(cs.Members)
	st.members = string(m)
	return st
}

// settled waits until the state stops changing (a successful reservation
// may prefetch the next block in the background) and returns it.
func (n *testNode) settled(tb testing.TB, seq string) state {
	tb.Helper()
	prev := n.state(tb, seq)
	deadline := time.Now().Add(10 * time.Second)
	for stable := 0; stable < 3; {
		time.Sleep(30 * time.Millisecond)
		cur := n.state(tb, seq)
		if cur == prev {
			stable++
		} else {
			stable, prev = 0, cur
		}
		if time.Now().After(deadline) {
			tb.Fatalf("state of %s never settled", seq)
		}
	}
	return prev
}

func (n *testNode) sequence(tb testing.TB, name string) api.Sequence {
	tb.Helper()
	r := n.do(tb, http.MethodGet, "/v1/sequences/"+name, "")
	expectJSON(tb, "get "+name, r, http.StatusOK)
	var s api.Sequence
	decodeStrict(tb, r.body, &s)
	return s
}

// rangeLog collects every successful range, per sequence.
type rangeLog struct {
	mu     sync.Mutex
	ranges map[string][]api.Range
}

func newRangeLog() *rangeLog { return &rangeLog{ranges: map[string][]api.Range{}} }

func (l *rangeLog) add(r api.Range) {
	l.mu.Lock()
	l.ranges[r.Sequence] = append(l.ranges[r.Sequence], r)
	l.mu.Unlock()
}

// checkDisjoint fails tb if two ranges of one sequence share an ID.
func (l *rangeLog) checkDisjoint(tb testing.TB) int {
	tb.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	total := 0
	for seq, rs := range l.ranges {
		rs = append([]api.Range(nil), rs...)
		sort.Slice(rs, func(i, j int) bool { return rs[i].First < rs[j].First })
		for i := 1; i < len(rs); i++ {
			if rs[i].First <= rs[i-1].Last {
				tb.Errorf("sequence %s: ranges overlap: %+v and %+v", seq, rs[i-1], rs[i])
			}
		}
		total += len(rs)
	}
	return total
}
