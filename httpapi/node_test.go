package httpapi_test

import (
	"encoding/json"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/internal/testcluster"
	"github.com/ticketd/ticketd/internal/testkit"
)

// node is a real single-node ticketd (internal/testcluster: Raft over TCP
// on 127.0.0.1, bolt in a temp dir, real HTTP) and a kit client for it whose
// Base is the node's URL, so tests write paths as the server sees them. The
// client keeps connections alive: the fuzz and bench tests make many
// requests.
type node struct {
	testkit.Client
}

// startNode bootstraps a single-node cluster and waits until it serves.
func startNode(tb testing.TB) *node {
	tb.Helper()
	tr := &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256, IdleConnTimeout: 30 * time.Second}
	hc := &http.Client{Transport: tr, Timeout: 20 * time.Second}
	tc := testcluster.NewWithOptions(tb, 1, testcluster.Options{Client: hc})
	tb.Cleanup(tr.CloseIdleConnections) // runs before the cluster's shutdown
	// /readyz only says a leader is known; wait until it serves too.
	l := tc.Leader(15 * time.Second)
	return &node{Client: testkit.Client{HTTP: hc, Base: tc.URL(l), Timeout: 20 * time.Second}}
}

// expectProblem checks that r is a problem details answer with this status
// and type whose detail holds every one of details (case-insensitive).
func expectProblem(tb testing.TB, what string, r testkit.Response, status int, typ string, details ...string) api.Problem {
	tb.Helper()
	if r.Status != status {
		tb.Errorf("%s: status %d, want %d (body %s)", what, r.Status, status, r.Body)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/problem+json" {
		tb.Errorf("%s: Content-Type %q, want application/problem+json", what, ct)
	}
	var p api.Problem
	if err := json.Unmarshal(r.Body, &p); err != nil {
		tb.Errorf("%s: body is not a problem: %v: %s", what, err, r.Body)
		return p
	}
	if p.Type != typ {
		tb.Errorf("%s: problem type %q, want %q (detail %q)", what, p.Type, typ, p.Detail)
	}
	if p.Status != r.Status {
		tb.Errorf("%s: problem status %d, HTTP status %d", what, p.Status, r.Status)
	}
	if p.Title == "" {
		tb.Errorf("%s: problem has no title", what)
	}
	for _, d := range details {
		if !strings.Contains(strings.ToLower(p.Detail), strings.ToLower(d)) {
			tb.Errorf("%s: detail %q does not mention %q", what, p.Detail, d)
		}
	}
	if status == http.StatusServiceUnavailable && r.Header.Get("Retry-After") == "" {
		tb.Errorf("%s: 503 without Retry-After", what)
	}
	return p
}

func expectJSON(tb testing.TB, what string, r testkit.Response, status int) {
	tb.Helper()
	if r.Status != status {
		tb.Fatalf("%s: status %d, want %d (body %s)", what, r.Status, status, r.Body)
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		tb.Errorf("%s: Content-Type %q, want application/json", what, ct)
	}
}

// reserve reserves count IDs of seq and fails the test unless it gets 200
// with a range of exactly count IDs, which it records in log.
func (n *node) reserve(tb testing.TB, log *rangeLog, seq string, count int64) api.Range {
	tb.Helper()
	r := n.MustCall(tb, http.MethodPost, "/v1/sequences/"+seq+"/ranges", `{"count":`+itoa(count)+`}`)
	expectJSON(tb, "reserve "+seq, r, http.StatusOK)
	var rg api.Range
	testkit.DecodeStrict(tb, r.Body, &rg)
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

func (n *node) state(tb testing.TB, seq string) state {
	tb.Helper()
	var st state
	r := n.MustCall(tb, http.MethodGet, "/v1/sequences/"+seq, nil)
	switch r.Status {
	case http.StatusOK:
		st.seq = string(r.Body)
	case http.StatusNotFound:
		st.seq = "404"
	default:
		tb.Fatalf("GET sequence %s: status %d: %s", seq, r.Status, r.Body)
	}
	r = n.MustCall(tb, http.MethodGet, "/v1/sequences", nil)
	expectJSON(tb, "list sequences", r, http.StatusOK)
	st.list = string(r.Body)
	r = n.MustCall(tb, http.MethodGet, "/v1/cluster", nil)
	expectJSON(tb, "cluster status", r, http.StatusOK)
	var cs api.ClusterStatus
	testkit.DecodeStrict(tb, r.Body, &cs)
	sort.Slice(cs.Members, func(i, j int) bool { return cs.Members[i].ID < cs.Members[j].ID })
	m, _ := json.Marshal(cs.Members)
	st.members = string(m)
	return st
}

// settled waits until the state stops changing (a successful reservation
// may prefetch the next block in the background) and returns it.
func (n *node) settled(tb testing.TB, seq string) state {
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

func (n *node) sequence(tb testing.TB, name string) api.Sequence {
	tb.Helper()
	r := n.MustCall(tb, http.MethodGet, "/v1/sequences/"+name, nil)
	expectJSON(tb, "get "+name, r, http.StatusOK)
	var s api.Sequence
	testkit.DecodeStrict(tb, r.Body, &s)
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
