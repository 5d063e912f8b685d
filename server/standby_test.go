package server_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/cluster"
	"github.com/ticketd/ticketd/fsm"
	"github.com/ticketd/ticketd/internal/testcluster"
	"github.com/ticketd/ticketd/internal/testkit"
	"github.com/ticketd/ticketd/server"
)

// Issue #34: a disaster-recovery standby that cannot reissue.

const standbyTimeout = time.Second

func addStandby(t *testing.T, tc *testcluster.Cluster, id string) *testcluster.Node {
	t.Helper()
	l := tc.Leader(10 * time.Second)
	return tc.AddNodeWith(id, []string{tc.URL(l)}, func(cfg *server.Config) {
		cfg.Standby = &server.StandbySettings{Timeout: standbyTimeout}
	})
}

// standbyState is the standby's state as the current leader records it.
func standbyState(tc *testcluster.Cluster) string {
	l := tc.Leader(5 * time.Second)
	if l == nil {
		return ""
	}
	st, err := l.Srv.Node().Status()
	if err != nil || st.Standby == nil {
		return ""
	}
	return st.Standby.State
}

func waitStandbyState(t *testing.T, tc *testcluster.Cluster, want string, timeout time.Duration) {
	t.Helper()
	testkit.EventuallyErr(t, timeout, 20*time.Millisecond, "standby "+want, func() error {
		if got := standbyState(tc); got != want {
			return fmt.Errorf("state %q", got)
		}
		return nil
	})
}

// waitFenced waits until every node of ids has recorded the fence that a
// promoted standby's refusal makes its old cluster write.
func waitFenced(t *testing.T, tc *testcluster.Cluster, ids []string) {
	t.Helper()
	testkit.EventuallyErr(t, 20*time.Second, 50*time.Millisecond, "the old cluster to be fenced", func() error {
		for _, id := range ids {
			st, err := tc.Node(id).Srv.Node().Status()
			if err != nil {
				return err
			}
			if st.Fence == nil {
				return fmt.Errorf("%s not fenced (state %s)", id, st.State)
			}
		}
		return nil
	})
}

// waitCertified waits until the standby dr holds a certificate of the
// in-sync record its leader has applied, valid past now: the horizon a
// --primary-lost-at of now is weighed against (cluster/standbycert.go).
func waitCertified(t *testing.T, tc *testcluster.Cluster, dr *testcluster.Node) {
	t.Helper()
	testkit.EventuallyErr(t, 10*time.Second, 10*time.Millisecond, "the standby to hold a certificate of its in-sync record", func() error {
		sb, ok := tc.Leader(5 * time.Second).Srv.Node().FSM().StandbyInfo()
		if !ok || !sb.InSync() {
			return fmt.Errorf("standby %+v", sb)
		}
		index, until, ok, err := cluster.StandbyCertificate(dr.Dir)
		if err != nil || !ok || index != sb.SinceIndex || !until.After(time.Now()) {
			return fmt.Errorf("certificate of index %d until %s (%v, %v); the in-sync record is at %d", index, until, ok, err, sb.SinceIndex)
		}
		return nil
	})
}

// startPrimaryLoad reserves through the given nodes only (never the
// standby) until halted.
func startPrimaryLoad(nodes []*testcluster.Node, seq string, workers int, count int64) *loadGen {
	return startLoadOn(func() []*testcluster.Node { return nodes }, seq, workers, count)
}

// TestStandby_LinkCut_OutOfSyncAndBack_PrimaryLost_PromotedNothingReissued
// is the scenario in process: a 3-node primary and a standby, load
// through the primary, the standby's link cut (the primary goes on, the
// state flips to out of sync and back), the whole primary killed mid-load,
// the standby promoted and serving: no acknowledged ID is handed out again.
// Then the old primary comes back and is fenced by the promoted node.
func TestStandby_LinkCut_OutOfSyncAndBack_PrimaryLost_PromotedNothingReissued(t *testing.T) {
	tc := testcluster.New(t, 3, nil)
	tc.CreateSequence("orders", nil)
	primary := tc.Running()
	dr := addStandby(t, tc, "dr")
	waitStandbyState(t, tc, api.StandbyInSync, 15*time.Second)

	// The standby issues nothing and forwards nothing.
	if _, status, _ := testcluster.Reserve(dr, "orders", 1); status != http.StatusServiceUnavailable {
		t.Fatalf("reserve on the standby: %d, want 503", status)
	}

	g := startPrimaryLoad(primary, "orders", 4, 1000)
	defer g.halt()
	g.waitProgress(t, 200, 15*time.Second)

	// Cut the standby's link: the primary records it out of sync after
	// its timeout and goes on.
	tc.Net.Isolate("dr")
	waitStandbyState(t, tc, api.StandbyOutOfSync, 10*time.Second)
	g.waitProgress(t, 200, 15*time.Second)
	tc.Net.Heal("dr")
	waitStandbyState(t, tc, api.StandbyInSync, 15*time.Second)
	g.waitProgress(t, 200, 15*time.Second)

	waitCertified(t, tc, dr)

	// The whole primary dies at once, mid-load.
	lostAt := time.Now()
	for _, n := range primary {
		tc.Kill(n.ID)
	}
	g.halt()
	acked := g.log.Max()
	t.Logf("primary acknowledged %d ranges up to %d (%d failed attempts)", g.log.Len(), acked, g.failures.Load())

	tc.Kill("dr")
	// Without the time the primary was lost, the standby's in-sync
	// record cannot be weighed; a time after its horizon is refused.
	if _, err := cluster.Promote(cluster.PromoteOptions{DataDir: dr.Dir}); !errors.Is(err, cluster.ErrPrimaryLostAt) {
		t.Fatalf("promote without --primary-lost-at: %v", err)
	}
	if _, err := cluster.Promote(cluster.PromoteOptions{DataDir: dr.Dir, PrimaryLostAt: lostAt.Add(10 * time.Second)}); !errors.Is(err, fsm.ErrStandbyNotInSync) {
		t.Fatalf("promote with the primary lost after the horizon: %v", err)
	}
	rep, err := cluster.Promote(cluster.PromoteOptions{DataDir: dr.Dir, PrimaryLostAt: lostAt, MaxClockSkew: 100 * time.Millisecond, Now: time.Now()})
	if err != nil {
		t.Fatalf("promote: %v", err)
	}
	if rep.Result.Promotion.State != fsm.StandbyStateInSync || rep.Result.Promotion.Advance != fsm.DefaultStandbyBound {
		t.Fatalf("promotion %+v", rep.Result.Promotion)
	}
	// A second promotion of the same data is refused, and changes nothing.
	if _, err := cluster.Promote(cluster.PromoteOptions{DataDir: dr.Dir, PrimaryLostAt: lostAt, MaxClockSkew: 100 * time.Millisecond, Now: time.Now()}); !errors.Is(err, fsm.ErrAlreadyPromoted) {
		t.Fatalf("second promotion: %v", err)
	}

	tc.RestartWith("dr", func(cfg *server.Config) { cfg.Cluster.InitialCluster = nil })
	testkit.EventuallyErr(t, 15*time.Second, 20*time.Millisecond, "the promoted node to serve", func() error {
		r, status, err := testcluster.Reserve(dr, "orders", 1000)
		if err != nil || status != http.StatusOK {
			return fmt.Errorf("status %d err %v", status, err)
		}
		g.log.Add(r)
		return nil
	})
	for range 50 {
		r, status, err := testcluster.Reserve(dr, "orders", 1000)
		if err != nil || status != http.StatusOK {
			t.Fatalf("reserve on the promoted node: %d %v", status, err)
		}
		if r.First <= acked {
			t.Fatalf("the promoted node handed out %+v, at or below %d that the primary acknowledged", r, acked)
		}
		g.log.Add(r)
	}
	g.log.CheckDisjoint(t)

	// The old primary comes back: its leader's standby answers that it
	// was promoted, the old cluster records a fence and serves nothing.
	for _, n := range primary {
		tc.Restart(n.ID)
	}
	ids := []string{}
	for _, n := range primary {
		ids = append(ids, n.ID)
	}
	waitFenced(t, tc, ids)
	for _, n := range primary {
		if _, status, _ := testcluster.Reserve(tc.Node(n.ID), "orders", 1); status == http.StatusOK {
			t.Fatalf("fenced %s served a reservation", n.ID)
		}
	}
	// The promoted node was not made a follower of the old cluster.
	r, status, err := testcluster.Reserve(dr, "orders", 1)
	if err != nil || status != http.StatusOK || r.First <= acked {
		t.Fatalf("promoted node after the old primary came back: %+v %d %v", r, status, err)
	}
	g.log.Add(r)

	// It is a working cluster that others join: a new node becomes a
	// voter, and reservations through it come from the promoted state.
	n4 := tc.AddNode("n4", []string{tc.URL(dr)})
	testkit.EventuallyErr(t, 15*time.Second, 20*time.Millisecond, "n4 to join the promoted cluster and serve through it", func() error {
		st, err := dr.Srv.Node().Status()
		if err != nil {
			return err
		}
		voters := 0
		for _, m := range st.Members {
			if m.Voter {
				voters++
			}
		}
		if voters != 2 {
			return fmt.Errorf("%d voters", voters)
		}
		r, status, err := testcluster.Reserve(n4, "orders", 1000)
		if err != nil || status != http.StatusOK {
			return fmt.Errorf("reserve through n4: %d %v", status, err)
		}
		if r.First <= acked {
			return fmt.Errorf("n4 handed out %+v, at or below %d", r, acked)
		}
		g.log.Add(r)
		return nil
	})
	g.log.CheckDisjoint(t)
}

// TestStandby_PausedAcrossItsOutOfSync_ResumedAfterThePrimarysLoss_NotTrusted
// is issue 42's first part in process. The standby stalls as a paused
// process does (what is sent to it queues, it answers nothing); the leader
// records it out of sync and serves on; the whole primary dies; only then
// does the standby resume, read what was queued (AppendEntries sent before
// the out-of-sync record, certificates computed before it) and stop. Its
// log says in sync, and it read those messages after the primary's loss:
// the receive-time rule (standby-contact) trusted its in-sync record for a
// --primary-lost-at of the loss, and the promoted node handed out IDs the
// primary had acknowledged. A certificate is valid until a time its leader
// fixed before it could record the standby out of sync, so its delivery
// late changes nothing: the promotion is refused without --advance.
func TestStandby_PausedAcrossItsOutOfSync_ResumedAfterThePrimarysLoss_NotTrusted(t *testing.T) {
	tc := testcluster.New(t, 3, nil)
	tc.CreateSequence("orders", nil)
	primary := tc.Running()
	dr := addStandby(t, tc, "dr")
	waitStandbyState(t, tc, api.StandbyInSync, 15*time.Second)
	g := startPrimaryLoad(primary, "orders", 4, 100_000) // past the 10 M bound in a few hundred ranges
	defer g.halt()
	g.waitProgress(t, 200, 15*time.Second)
	waitCertified(t, tc, dr)

	tc.Net.Stall("dr")
	stalledAt := time.Now()
	waitStandbyState(t, tc, api.StandbyOutOfSync, 10*time.Second)
	t.Logf("standby stalled: recorded out of sync %v later", time.Since(stalledAt).Round(time.Millisecond))
	g.waitProgress(t, 500, 15*time.Second) // served on without it

	lostAt := time.Now()
	for _, n := range primary {
		tc.Kill(n.ID)
	}
	g.halt()
	acked := g.log.Max()
	t.Logf("primary acknowledged %d ranges up to %d", g.log.Len(), acked)

	// The standby resumes after the loss and reads its queue.
	time.Sleep(200 * time.Millisecond)
	tc.Net.Resume("dr")
	time.Sleep(500 * time.Millisecond)
	tc.Kill("dr")

	_, err := cluster.Promote(cluster.PromoteOptions{DataDir: dr.Dir, PrimaryLostAt: lostAt, MaxClockSkew: 100 * time.Millisecond, Now: time.Now()})
	if err == nil {
		r := firstRangeOfPromoted(t, tc, dr)
		t.Fatalf("a standby that was recorded out of sync while it was paused was promoted with its recorded bound for a --primary-lost-at of the loss; its first range %d..%d (the primary acknowledged up to %d)", r.First, r.Last, acked)
	}
	if !errors.Is(err, fsm.ErrStandbyNotInSync) {
		t.Fatalf("promote: %v, want a refusal (standby not in sync)", err)
	}
	t.Logf("refused: %v", err)

	// With --advance past what the primary served, it is promoted and
	// hands out nothing the primary acknowledged.
	if _, err := cluster.Promote(cluster.PromoteOptions{DataDir: dr.Dir, Advance: 1 << 40, Now: time.Now()}); err != nil {
		t.Fatalf("promote with --advance: %v", err)
	}
	if r := firstRangeOfPromoted(t, tc, dr); r.First <= acked {
		t.Fatalf("the promoted node handed out %d..%d, at or below %d that the primary acknowledged", r.First, r.Last, acked)
	}
}

// firstRangeOfPromoted starts the promoted standby dr as a one-node cluster
// and returns the first range of "orders" it hands out.
func firstRangeOfPromoted(t *testing.T, tc *testcluster.Cluster, dr *testcluster.Node) api.Range {
	t.Helper()
	tc.RestartWith(dr.ID, func(cfg *server.Config) { cfg.Cluster.InitialCluster = nil })
	var first api.Range
	testkit.EventuallyErr(t, 15*time.Second, 20*time.Millisecond, "the promoted node to serve", func() error {
		r, status, err := testcluster.Reserve(dr, "orders", 1000)
		if err != nil || status != http.StatusOK {
			return fmt.Errorf("status %d err %v", status, err)
		}
		first = r
		return nil
	})
	return first
}

// TestPromote_Refusals: a running standby, a voter, a node that never was a
// standby, an out-of-sync standby without --advance, an advance below the
// bound: each refused with its reason, nothing changed.
func TestPromote_Refusals(t *testing.T) {
	tc := testcluster.New(t, 3, func(_ string, cfg *server.Config) { cfg.Cluster.HoldStandbyOutOfSync = true })
	tc.CreateSequence("orders", nil)
	dr := addStandby(t, tc, "dr")
	waitStandbyState(t, tc, api.StandbyInSync, 15*time.Second)
	if _, status, _ := testcluster.Reserve(tc.Leader(5*time.Second), "orders", 10); status != http.StatusOK {
		t.Fatalf("reserve %d", status)
	}

	// Running: the log is locked.
	if _, err := cluster.Promote(cluster.PromoteOptions{DataDir: dr.Dir}); !errors.Is(err, cluster.ErrPromote) {
		t.Fatalf("promote a running standby: %v", err)
	}
	// A voter (stopped).
	voter := tc.Running()[0]
	if voter.ID == "dr" {
		voter = tc.Running()[1]
	}
	tc.Kill(voter.ID)
	_, err := cluster.Promote(cluster.PromoteOptions{DataDir: voter.Dir})
	if !errors.Is(err, cluster.ErrPromote) || !containsAll(err.Error(), "is a voter") {
		t.Fatalf("promote a voter: %v", err)
	}
	tc.Restart(voter.ID)
	tc.WaitReady(10 * time.Second)

	// Out of sync: cut it, let the primary record it, stop it.
	// A standby that holds every entry is not out of sync, however long
	// it is cut off: a new sequence gives it something to miss.
	tc.Net.Isolate("dr")
	if status, err := tc.Do(http.MethodPut, tc.URL(tc.Leader(5*time.Second))+"/v1/sequences/other", nil, nil); err != nil || status != http.StatusCreated {
		t.Fatalf("create: %d %v", status, err)
	}
	waitStandbyState(t, tc, api.StandbyOutOfSync, 10*time.Second)
	tc.Net.Heal("dr")
	// HoldStandbyOutOfSync keeps the leader from recording it in sync
	// again, so that its own log ends on the record.
	testkit.EventuallyErr(t, 10*time.Second, 10*time.Millisecond, "the standby to store the out-of-sync record", func() error {
		sb, ok := tc.Node("dr").Srv.Node().FSM().StandbyInfo()
		if !ok || sb.State != fsm.StandbyStateOutOfSync {
			return fmt.Errorf("standby's own record %+v", sb)
		}
		return nil
	})
	tc.Kill("dr")
	_, err = cluster.Promote(cluster.PromoteOptions{DataDir: dr.Dir})
	if !errors.Is(err, fsm.ErrStandbyNotInSync) || !containsAll(err.Error(), "out of sync at index", "--advance") {
		t.Fatalf("promote out of sync without --advance: %v", err)
	}
	_, err = cluster.Promote(cluster.PromoteOptions{DataDir: dr.Dir, Advance: fsm.DefaultStandbyBound - 1})
	if !errors.Is(err, fsm.ErrAdvanceTooSmall) {
		t.Fatalf("promote with an advance below the bound: %v", err)
	}
	// Wrong --id.
	if _, err := cluster.Promote(cluster.PromoteOptions{DataDir: dr.Dir, ID: "n1"}); !errors.Is(err, cluster.ErrPromote) {
		t.Fatalf("promote with another node's id: %v", err)
	}
	// Nothing changed: the standby rejoins as it was.
	tc.RestartWith("dr", func(cfg *server.Config) { cfg.Cluster.InitialCluster = nil })
	testkit.Eventually(t, 10*time.Second, 20*time.Millisecond, "the standby to answer again", func() bool {
		st, err := tc.Node("dr").Srv.Node().Status()
		return err == nil && st.ThisNodeStandby && st.Standby.State == api.StandbyOutOfSync
	})

	// The primary is lost while its standby is recorded out of sync: the
	// operator promotes with an advance. When the old primary comes back,
	// nothing waits for a standby it recorded out of sync, so its new
	// leader first gives the standby a moment to answer: the promoted
	// node's answer fences it before it serves anything.
	primary := []string{}
	for _, n := range tc.Running() {
		if n.ID != "dr" {
			primary = append(primary, n.ID)
		}
	}
	for _, id := range primary {
		tc.Kill(id)
	}
	tc.Kill("dr")
	if _, err := cluster.Promote(cluster.PromoteOptions{DataDir: dr.Dir, Advance: 10 * fsm.DefaultStandbyBound}); err != nil {
		t.Fatalf("promote with an advance: %v", err)
	}
	firstRangeOfPromoted(t, tc, dr)
	for _, id := range primary {
		tc.Restart(id)
	}
	deadline := time.Now().Add(20 * time.Second)
	for fenced := false; !fenced; {
		if time.Now().After(deadline) {
			t.Fatal("the old primary was not fenced within 20 s")
		}
		fenced = true
		for _, id := range primary {
			if _, status, _ := testcluster.Reserve(tc.Node(id), "orders", 1); status == http.StatusOK {
				t.Fatalf("old primary node %s served a reservation after its standby was promoted", id)
			}
			st, err := tc.Node(id).Srv.Node().Status()
			fenced = fenced && err == nil && st.Fence != nil
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestStandby_LostItsDisk_RecordedOutOfSync_NoPromotionWithoutAdvance: a
// standby that lost its data and rejoined under the same id answers that
// its log ends below what it had acknowledged. The leader must not count
// the old acknowledgement: it records the standby out of sync, and in sync
// only once it has caught up again; until the standby holds an in-sync
// record made after it came back, promoting it needs --advance.
func TestStandby_LostItsDisk_RecordedOutOfSync_NoPromotionWithoutAdvance(t *testing.T) {
	tc := testcluster.New(t, 3, nil)
	tc.CreateSequence("orders", nil)
	l := tc.Leader(5 * time.Second)
	dr := addStandby(t, tc, "dr")
	waitStandbyState(t, tc, api.StandbyInSync, 15*time.Second)
	g := startPrimaryLoad([]*testcluster.Node{l}, "orders", 2, 1000)
	defer g.halt()
	g.waitProgress(t, 100, 15*time.Second)

	tc.Kill("dr")
	if err := os.RemoveAll(dr.Dir); err != nil {
		t.Fatal(err)
	}
	tc.RestartWith("dr", func(cfg *server.Config) {
		cfg.Cluster.InitialCluster = nil
		cfg.Join = []string{tc.URL(l)}
		cfg.Standby = &server.StandbySettings{Timeout: standbyTimeout}
	})
	testkit.EventuallyErr(t, 15*time.Second, 10*time.Millisecond, "the leader to record the regression", func() error {
		st, err := l.Srv.Node().Status()
		if err != nil || st.Standby == nil || st.Standby.State != api.StandbyOutOfSync || !strings.Contains(st.Standby.Reason, "lost entries") {
			return fmt.Errorf("standby %+v %v", st.Standby, err)
		}
		return nil
	})
	waitStandbyState(t, tc, api.StandbyInSync, 15*time.Second)
	g.waitProgress(t, 100, 15*time.Second)
	g.halt()
	// Recorded in sync after it came back: its marker is gone, and it
	// promotes with the bound.
	testkit.Eventually(t, 10*time.Second, 20*time.Millisecond, "the fresh-start marker to go", func() bool {
		_, err := os.Stat(filepath.Join(dr.Dir, "fresh-start"))
		return errors.Is(err, os.ErrNotExist)
	})
}

// TestStandby_JoinRules: one standby per cluster; the standby's id cannot
// join as a voter; bad settings are refused before anything changes.
func TestStandby_JoinRules(t *testing.T) {
	tc := testcluster.New(t, 3, nil)
	dr := addStandby(t, tc, "dr")
	waitStandbyState(t, tc, api.StandbyInSync, 15*time.Second)
	l := tc.Leader(5 * time.Second)
	for _, tc2 := range []struct {
		name string
		req  api.JoinRequest
		want int
	}{
		{"second standby", api.JoinRequest{ID: "dr2", RaftAddr: "127.0.0.1:1", HTTPAddr: "127.0.0.1:2", Standby: true}, http.StatusConflict},
		{"standby as voter", api.JoinRequest{ID: "dr", RaftAddr: dr.RaftAddr, HTTPAddr: dr.HTTPAddr}, http.StatusConflict},
		{"bound too small", api.JoinRequest{ID: "dr", RaftAddr: dr.RaftAddr, HTTPAddr: dr.HTTPAddr, Standby: true, StandbyBound: 5}, http.StatusBadRequest},
		{"settings without standby", api.JoinRequest{ID: "x", RaftAddr: "127.0.0.1:1", HTTPAddr: "127.0.0.1:2", StandbyTimeoutMs: 10}, http.StatusBadRequest},
	} {
		var p api.Problem
		status, err := tc.Do(http.MethodPost, tc.URL(l)+"/v1/cluster/members", tc2.req, &p)
		if err != nil || status != tc2.want {
			t.Errorf("%s: %d %v (%+v), want %d", tc2.name, status, err, p, tc2.want)
		}
	}
	if got := standbyState(tc); got != api.StandbyInSync {
		t.Fatalf("after refused joins the standby is %q", got)
	}
	// Removing the standby drops its record (and the bound with it).
	if status, err := tc.Do(http.MethodDelete, tc.URL(l)+"/v1/cluster/members/dr", nil, nil); err != nil || status != http.StatusNoContent {
		t.Fatalf("remove the standby: %d %v", status, err)
	}
	testkit.Eventually(t, 10*time.Second, 20*time.Millisecond, "the standby's record to go", func() bool {
		_, ok := tc.Leader(5 * time.Second).Srv.Node().FSM().StandbyInfo()
		return !ok
	})
}

// TestStandby_JoinFailsAfterItsRecord_RecordTakenBack_RemoveClearsALoneRecord
// (issue 42, 4): a standby join that fails once its record was applied left
// the record: another standby was refused, every new leader waited for it,
// and remove answered 404. A join now probes first and takes the record back
// when the add fails after it (here: a member answering at an older feature
// level), and remove clears a record that has no member.
func TestStandby_JoinFailsAfterItsRecord_RecordTakenBack_RemoveClearsALoneRecord(t *testing.T) {
	tc := testcluster.New(t, 3, nil)
	l := tc.Leader(10 * time.Second)
	noRecord := func(what string) {
		t.Helper()
		if sb, ok := tc.Leader(5 * time.Second).Srv.Node().FSM().StandbyInfo(); ok {
			t.Fatalf("%s: the standby record %+v was left", what, sb)
		}
	}
	join := func(req api.JoinRequest) int {
		t.Helper()
		var p api.Problem
		status, err := tc.Do(http.MethodPost, tc.URL(l)+"/v1/cluster/members", req, &p)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("join %s at %s: %d %s", req.ID, req.RaftAddr, status, p.Detail)
		return status
	}

	// An unreachable Raft address.
	if status := join(api.JoinRequest{ID: "ghost", RaftAddr: "127.0.0.1:1", HTTPAddr: "127.0.0.1:2", Standby: true}); status < 400 {
		t.Fatalf("a standby at an unreachable address joined: %d", status)
	}
	noRecord("unreachable address")

	// A node that answers the probe but reports an older feature level:
	// the add fails after the record. Its own join goes nowhere (a URL
	// nothing listens on), so only this test's request touches the cluster.
	old := tc.AddNodeWith("old", []string{"http://127.0.0.1:1"}, func(cfg *server.Config) {
		cfg.Cluster.FeatureLevel = fsm.LevelBase
	})
	if status := join(api.JoinRequest{ID: "old", RaftAddr: old.RaftAddr, HTTPAddr: old.HTTPAddr, Standby: true}); status < 400 {
		t.Fatalf("a standby of an older level joined: %d", status)
	}
	noRecord("older level")
	tc.Kill("old")

	// A record with no member (a join whose leader was lost between its
	// steps): remove clears it.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := l.Srv.Node().Apply(ctx, fsm.EncodeStandbyOp(fsm.StandbyOp{Op: fsm.StandbyAdd, ID: "lost", Bound: fsm.DefaultStandbyBound, TimeoutMs: 1000, Stamp: l.Srv.Node().Stamp()})); err != nil {
		t.Fatal(err)
	}
	if status, err := tc.Do(http.MethodDelete, tc.URL(l)+"/v1/cluster/members/lost", nil, nil); err != nil || status != http.StatusNoContent {
		t.Fatalf("remove a standby record with no member: %d %v", status, err)
	}
	noRecord("after remove")

	// And a real standby joins and gets in sync.
	addStandby(t, tc, "dr")
	waitStandbyState(t, tc, api.StandbyInSync, 15*time.Second)
}

// TestPromote_MemberJoinedAfterTheCut_OldRegionBackWithItLeading_Refused
// (issue 42, 3): a voter the primary took in after its standby was cut off
// is in no record the promoted node holds. When the old region came back
// with that voter leading, the promoted node took it for a member, followed
// it and truncated what it had done since the promotion; no fence was
// recorded. The promoted node refuses every server not in its own
// configuration: the old region is fenced, the promoted node goes on.
func TestPromote_MemberJoinedAfterTheCut_OldRegionBackWithItLeading_Refused(t *testing.T) {
	tc := testcluster.New(t, 3, nil)
	tc.CreateSequence("orders", nil)
	dr := addStandby(t, tc, "dr")
	waitStandbyState(t, tc, api.StandbyInSync, 15*time.Second)

	// The standby is cut off; the primary records it out of sync and
	// takes in a fourth voter, which the standby never hears of.
	tc.Net.Isolate("dr")
	l := tc.Leader(5 * time.Second)
	if status, err := tc.Do(http.MethodPut, tc.URL(l)+"/v1/sequences/other", nil, nil); err != nil || status != http.StatusCreated {
		t.Fatalf("create: %d %v", status, err)
	}
	waitStandbyState(t, tc, api.StandbyOutOfSync, 10*time.Second)
	tc.AddNode("n4", []string{tc.URL(l)})
	testkit.EventuallyErr(t, 15*time.Second, 20*time.Millisecond, "n4 to be a voter of the primary", func() error {
		st, err := tc.Leader(5 * time.Second).Srv.Node().Status()
		if err != nil {
			return err
		}
		for _, m := range st.Members {
			if m.ID == "n4" && m.Voter {
				return nil
			}
		}
		return fmt.Errorf("members %+v", st.Members)
	})
	var acked int64
	for range 20 {
		r, status, err := testcluster.Reserve(tc.Leader(5*time.Second), "orders", 1000)
		if err != nil || status != http.StatusOK {
			t.Fatalf("reserve on the primary: %d %v", status, err)
		}
		acked = max(acked, r.Last)
	}

	// The primary region is lost; the standby is promoted with an advance.
	old := []string{}
	for _, n := range tc.Running() {
		if n.ID != "dr" {
			old = append(old, n.ID)
		}
	}
	for _, id := range old {
		tc.Kill(id)
	}
	tc.Kill("dr")
	if _, err := cluster.Promote(cluster.PromoteOptions{DataDir: dr.Dir, Advance: 1 << 40}); err != nil {
		t.Fatalf("promote with an advance: %v", err)
	}
	tc.Net.Heal("dr")
	firstRangeOfPromoted(t, tc, dr)

	// The old region returns with n4 leading: its other nodes wait ten
	// times longer before they campaign.
	for _, id := range old {
		tc.RestartWith(id, func(cfg *server.Config) {
			if id == "n4" {
				cfg.Cluster.InitialCluster = nil // it joined
				return
			}
			cfg.Cluster.HeartbeatTimeout = 3 * time.Second
			cfg.Cluster.ElectionTimeout = 3 * time.Second
		})
	}
	testkit.EventuallyErr(t, 30*time.Second, 50*time.Millisecond, "n4 to lead the old region", func() error {
		st, err := tc.Node("n4").Srv.Node().Status()
		if err != nil || st.State != "Leader" {
			return fmt.Errorf("n4: %+v %v", st.State, err)
		}
		return nil
	})
	waitFenced(t, tc, old)
	// The promoted node still leads its own cluster and serves above
	// everything the primary acknowledged.
	for range 10 {
		r, status, err := testcluster.Reserve(dr, "orders", 1000)
		if err != nil || status != http.StatusOK || r.First <= acked {
			t.Fatalf("the promoted node after the old region came back with n4 leading: %+v %d %v", r, status, err)
		}
	}
	st, err := dr.Srv.Node().Status()
	if err != nil || st.State != "Leader" || st.Fence != nil {
		t.Fatalf("promoted node: %+v %v", st, err)
	}
}

// TestPromote_WithAdvance_LeasesOfTheOldRegion_NotGrantedAgain_OldTokensLost
// is issue 42's second part in process. A lease of worker 0 is on the
// standby; its link is cut, the primary records it out of sync and grants
// worker 1, which the standby never learns of; the whole primary dies. The
// standby, promoted with --advance, granted worker 1 at once to another
// holder, and renewed worker 0's old token. Now every held lease ended
// ("promoted": the old token is lost), no worker id is granted until the
// promoted leader has served for the TTL plus the recycle delay, and the
// first grant's timestamp floor is above the promotion's time plus the TTL.
func TestPromote_WithAdvance_LeasesOfTheOldRegion_NotGrantedAgain_OldTokensLost(t *testing.T) {
	const ttl, recycle = 1000, 1500 // ms: the smallest a namespace takes
	tc := testcluster.New(t, 3, nil)
	primary := tc.Running()
	leader := tc.Leader(10 * time.Second)
	if code, err := tc.Do(http.MethodPut, tc.URL(leader)+"/v1/namespaces/flakes", api.NamespaceRequest{
		LeaseTTLMs: i64(ttl), RecycleDelayMs: i64(recycle), MaxWorkers: i64(4)}, nil); err != nil || code/100 != 2 {
		t.Fatalf("create namespace: %d %v", code, err)
	}
	dr := addStandby(t, tc, "dr")
	waitStandbyState(t, tc, api.StandbyInSync, 15*time.Second)
	acquire := func(n *testcluster.Node, holder string) (api.Lease, int, error) {
		var l api.Lease
		code, err := tc.Do(http.MethodPost, tc.URL(n)+"/v1/namespaces/flakes/leases", api.LeaseRequest{Holder: holder, ClientTimeMs: time.Now().UnixMilli()}, &l)
		return l, code, err
	}
	a, code, err := acquire(tc.Leader(5*time.Second), "old-a")
	if err != nil || code != http.StatusCreated {
		t.Fatalf("acquire old-a: %d %v", code, err)
	}

	tc.Net.Isolate("dr")
	waitStandbyState(t, tc, api.StandbyOutOfSync, 10*time.Second)
	b, code, err := acquire(tc.Leader(5*time.Second), "old-b")
	if err != nil || code != http.StatusCreated || b.WorkerID == a.WorkerID {
		t.Fatalf("acquire old-b: %+v %d %v", b, code, err)
	}
	t.Logf("the primary holds worker %d (old-a, on the standby) and worker %d (old-b, granted after the cut)", a.WorkerID, b.WorkerID)
	lostAt := time.Now()
	for _, n := range primary {
		tc.Kill(n.ID)
	}
	tc.Kill("dr")
	tc.Net.Heal("dr")

	rep, err := cluster.Promote(cluster.PromoteOptions{DataDir: dr.Dir, Advance: 1 << 40, Now: lostAt.Add(100 * time.Millisecond)})
	if err != nil {
		t.Fatalf("promote --advance: %v", err)
	}
	t.Logf("promoted: %+v", rep.Result)
	tc.RestartWith("dr", func(cfg *server.Config) { cfg.Cluster.InitialCluster = nil })
	var servedAt time.Time
	// Serving, not only elected: it answers 503 until its Barrier, and
	// its lessor (which times the rest) starts then.
	testkit.EventuallyErr(t, 15*time.Second, 10*time.Millisecond, "the promoted node to serve as leader", func() error {
		if _, ok := dr.Srv.Node().Leadership(); !ok {
			return errors.New("not serving as leader yet")
		}
		servedAt = time.Now()
		return nil
	})

	// The old token is lost.
	if code, err := tc.Do(http.MethodPut, tc.URL(dr)+fmt.Sprintf("/v1/namespaces/flakes/leases/%d", a.WorkerID), api.LeaseTokenRequest{Token: a.Token}, nil); err != nil || code != http.StatusConflict {
		t.Errorf("renewing old-a's token on the promoted node: %d %v, want 409 (lease lost)", code, err)
	}
	// Nothing is granted before the rest is over; then the first grant
	// carries a floor above what old-b may have used.
	var granted api.Lease
	testkit.EventuallyErr(t, 15*time.Second, 20*time.Millisecond, "a grant on the promoted node", func() error {
		l, code, err := acquire(dr, "new")
		if err != nil || code != http.StatusCreated {
			return fmt.Errorf("%d %v", code, err)
		}
		granted = l
		return nil
	})
	rested := time.Since(servedAt)
	t.Logf("first grant %v after the promoted node led: worker %d, floor %d", rested.Round(time.Millisecond), granted.WorkerID, granted.TimestampFloorMs)
	if rested < (ttl+recycle)*time.Millisecond-50*time.Millisecond {
		t.Errorf("worker %d was granted %v after the promoted node led, before the TTL plus the recycle delay (%d ms): a holder of the old region may still use it", granted.WorkerID, rested, ttl+recycle)
	}
	if floor := lostAt.Add(ttl * time.Millisecond).UnixMilli(); granted.TimestampFloorMs < floor {
		t.Errorf("first grant's timestamp floor %d, below %d (the loss plus the TTL): old-b may have used timestamps up to it", granted.TimestampFloorMs, floor)
	}
}
