package server_test

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/internal/testcluster"
	"github.com/ticketd/ticketd/internal/testkit"
)

// abandon sends one HTTP request to node n and closes the connection as soon
// as the request is written, as a caller that times out or dies does: the
// server's request context ends while the handler may still be waiting for
// its entry to commit and apply.
func abandon(t *testing.T, n *testcluster.Node, method, path string, body []byte) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", n.HTTPAddr, 2*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", n.HTTPAddr, err)
	}
	var req bytes.Buffer
	fmt.Fprintf(&req, "%s %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", method, path, n.HTTPAddr, len(body))
	req.Write(body)
	if _, err := conn.Write(req.Bytes()); err != nil {
		t.Fatalf("write to %s: %v", n.HTTPAddr, err)
	}
	_ = conn.Close()
}

func sequenceNext(t *testing.T, tc *testcluster.Cluster, n *testcluster.Node, name string) int64 {
	t.Helper()
	var seq api.Sequence
	if st, err := tc.Do(http.MethodGet, tc.URL(n)+"/v1/sequences/"+name, nil, &seq); err != nil || st != http.StatusOK || seq.Next == nil {
		t.Fatalf("read %s: %d %v %+v", name, st, err, seq)
	}
	return *seq.Next
}

// TestRaise_CallerHangsUp_LeaderStillCut: a raise whose caller closes the
// connection before the answer still commits and applies; once a read shows
// the raised mark, the leader must not hand out the IDs it held below the
// raise. Before issue 30's fix the cut was made by the handler after its
// Apply returned, so an abandoned raise moved the mark and left the leader
// serving below it (a read of next=X+1 followed by a reservation of 2).
func TestRaise_CallerHangsUp_LeaderStillCut(t *testing.T) {
	tc := testcluster.New(t, 3, nil)
	tc.CreateSequence("legacy", nil)
	leader := tc.Leader(10 * time.Second)
	r, st, err := testcluster.Reserve(leader, "legacy", 1)
	if err != nil || st != http.StatusOK {
		t.Fatalf("first reservation: %d %v", st, err)
	}
	low := r.Last
	// The raise aims above the leader's block (the mark moves, so a read
	// shows when it applied) while the block still holds IDs below it.
	for attempt := 1; attempt <= 30; attempt++ {
		next := sequenceNext(t, tc, leader, "legacy")
		atLeast := next + 1000
		abandon(t, leader, http.MethodPost, "/v1/sequences/legacy/raise", []byte(`{"at_least":`+strconv.FormatInt(atLeast, 10)+`}`))
		applied := false
		for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if sequenceNext(t, tc, leader, "legacy") > atLeast {
				applied = true
				break
			}
		}
		if !applied {
			continue // the hang-up came before the proposal: nothing applied
		}
		r, st, err := testcluster.Reserve(leader, "legacy", 1)
		if err != nil || st != http.StatusOK {
			t.Fatalf("reservation after the raise: %d %v", st, err)
		}
		if r.First <= atLeast {
			t.Fatalf("attempt %d: a read showed the raise to %d applied, then the leader handed out %d..%d (first reservation ended at %d)", attempt, atLeast, r.First, r.Last, low)
		}
		return
	}
	t.Fatal("no abandoned raise applied in 30 attempts")
}

// TestRestore_CallerHangsUp_RestoredShardRecycled: a restore whose caller
// closes the connection still commits and applies; the worker ids it
// installs as ended must still get their recycle timers, so a chosen
// acquire of a restored shard is granted once the recycle delay has passed.
// Before issue 30's fix only the handler's re-establishing after its Apply
// returned started those timers: an abandoned restore left every restored
// shard answering 409 until some unrelated lease changed.
func TestRestore_CallerHangsUp_RestoredShardRecycled(t *testing.T) {
	old := testcluster.New(t, 1, nil)
	req := api.NamespaceRequest{Preset: api.PresetInstagram, LeaseTTLMs: i64p(1000), RecycleDelayMs: i64p(1000)}
	createNamespace(t, old, "posts", req)
	if _, prob, st := acquireShard(t, old, old.Running()[0], "posts", "db-a", "req-a", 7); st != http.StatusCreated {
		t.Fatalf("acquire shard 7: %d %+v", st, prob)
	}
	var backup []byte
	{
		r, err := old.Client().Call(http.MethodGet, old.URL(old.Running()[0])+"/v1/backup", nil)
		if err != nil || r.Status != http.StatusOK {
			t.Fatalf("backup: %v %+v", err, r)
		}
		backup = r.Body
	}

	fresh := testcluster.New(t, 1, nil)
	n := fresh.Leader(10 * time.Second)
	restored := false
	for attempt := 1; attempt <= 20 && !restored; attempt++ {
		abandon(t, n, http.MethodPost, "/v1/restore?advance=1000", backup)
		for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if st, _ := fresh.Do(http.MethodGet, fresh.URL(n)+"/v1/namespaces/posts", nil, nil); st == http.StatusOK {
				restored = true
				break
			}
		}
	}
	if !restored {
		t.Fatal("no abandoned restore applied in 20 attempts")
	}
	testkit.Eventually(t, 10*time.Second, 50*time.Millisecond, "restored shard 7 granted after its recycle delay", func() bool {
		_, _, st := acquireShard(t, fresh, n, "posts", "db-b", "req-b", 7)
		return st == http.StatusCreated
	})
}
