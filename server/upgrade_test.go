package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/fsm"
	"github.com/ticketd/ticketd/internal/testcluster"
	"github.com/ticketd/ticketd/internal/testkit"
	"github.com/ticketd/ticketd/server"
)

// Rolling upgrades (issue #31). A member held at fsm.LevelBase stands for a
// node still on the older release: it reports level 1 to the leader's
// level probe, so the cluster's level stays 1 and the leader proposes only
// what a level-1 binary applies. (The fault suite's --upgrade runs the real
// older binary.)

// clusterLevels is every running node's applied cluster level.
func clusterLevels(tc *testcluster.Cluster) map[string]fsm.FeatureLevel {
	out := map[string]fsm.FeatureLevel{}
	for _, n := range tc.Running() {
		out[n.ID] = n.Srv.Node().ClusterLevel()
	}
	return out
}

func allAtLevel(tc *testcluster.Cluster, want fsm.FeatureLevel) bool {
	for _, l := range clusterLevels(tc) {
		if l != want {
			return false
		}
	}
	return true
}

// problemOf decodes a problem body.
func problemOf(t *testing.T, body []byte) api.Problem {
	t.Helper()
	var p api.Problem
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatalf("not a problem: %s", body)
	}
	return p
}

// groupedEntries counts the log entries that granted blocks of several
// sequences at once, per the leader's audit (records of one entry share its
// index).
func groupedEntries(t *testing.T, tc *testcluster.Cluster) (grouped, entries int) {
	t.Helper()
	perIndex := map[uint64]int{}
	for _, r := range tc.Leader(5*time.Second).Srv.Node().FSM().Audit(0, 1<<30) {
		if r.Kind == fsm.AuditBlock {
			perIndex[r.Index]++
		}
	}
	for _, n := range perIndex {
		if n > 1 {
			grouped++
		}
	}
	return grouped, len(perIndex)
}

// reserveAcross reserves on many sequences at once, through the leader, so
// that its issuer has requests of several sequences waiting together.
func reserveAcross(t *testing.T, tc *testcluster.Cluster, logs map[string]*testcluster.RangeLog, seqs []string, rounds int) {
	t.Helper()
	l := tc.Leader(5 * time.Second)
	var wg sync.WaitGroup
	var failed atomic.Int64
	for _, s := range seqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				r, code, err := testcluster.Reserve(l, s, 100) // a block each: every request waits on the log
				if err != nil || code != http.StatusOK {
					failed.Add(1)
					continue
				}
				logs[s].Add(r)
			}
		}()
	}
	wg.Wait()
	if f := failed.Load(); f > 0 {
		t.Fatalf("%d reservations failed", f)
	}
}

func TestUpgrade_OlderMemberHoldsTheLevel_GateAndFallback_ThenLevelRises(t *testing.T) {
	var upgraded atomic.Bool
	tc := testcluster.New(t, 3, func(id string, cfg *server.Config) {
		// One entry in flight: requests of other sequences queue behind
		// it and go together, in one grouped entry once the level has it.
		// Blocks of 100 IDs: every reservation below needs a new one.
		cfg.Issuer.BatchesInFlight = 1
		cfg.Issuer.MinBlock, cfg.Issuer.MaxBlock = 100, 100
		if id == "n3" && !upgraded.Load() {
			cfg.Cluster.FeatureLevel = fsm.LevelBase
		}
	})
	// The leader probes every 100 ms here; give it several rounds.
	time.Sleep(500 * time.Millisecond)
	if !allAtLevel(tc, fsm.LevelBase) {
		t.Fatalf("cluster levels %v with a level-1 member, want all %d", clusterLevels(tc), fsm.LevelBase)
	}
	kit := tc.Client()
	for _, n := range tc.Running() {
		if got := scrapeGauge(t, kit, tc.URL(n), "ticketd_cluster_feature_level"); got != float64(fsm.LevelBase) {
			t.Fatalf("%s ticketd_cluster_feature_level = %v, want %d", n.ID, got, fsm.LevelBase)
		}
	}
	if got := scrapeGauge(t, kit, tc.URL(tc.Node("n1")), "ticketd_feature_level"); got != float64(fsm.CurrentLevel) {
		t.Fatalf("n1 ticketd_feature_level = %v, want %d", got, fsm.CurrentLevel)
	}
	if got := scrapeGauge(t, kit, tc.URL(tc.Node("n3")), "ticketd_feature_level"); got != float64(fsm.LevelBase) {
		t.Fatalf("n3 (held at level 1) ticketd_feature_level = %v, want %d", got, fsm.LevelBase)
	}
	seqs := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"}
	for _, s := range seqs {
		tc.CreateSequence(s, nil)
	}

	// A raise needs level 2: 409 cluster-upgrading, naming n3.
	l := tc.Leader(5 * time.Second)
	r := testkit.Client{}.MustCall(t, http.MethodPost, tc.URL(l)+"/v1/sequences/a/raise", api.RaiseSequenceRequest{AtLeast: 1_000_000})
	if r.Status != http.StatusConflict {
		t.Fatalf("raise at level 1: %d %s, want 409", r.Status, r.Body)
	}
	p := problemOf(t, r.Body)
	if p.Type != api.ProblemClusterUpgrading || p.NeedFeatureLevel != int(fsm.LevelRaiseAndShards) || p.ClusterFeatureLevel != int(fsm.LevelBase) {
		t.Fatalf("raise at level 1: problem %+v", p)
	}
	if len(p.Behind) != 1 || p.Behind[0].ID != "n3" || p.Behind[0].FeatureLevel != int(fsm.LevelBase) || !strings.Contains(p.Detail, "n3") {
		t.Fatalf("raise at level 1: behind %+v, detail %q; want n3 at level 1", p.Behind, p.Detail)
	}
	// So does a namespace of shards.
	r = testkit.Client{}.MustCall(t, http.MethodPut, tc.URL(l)+"/v1/namespaces/shards", api.NamespaceRequest{WorkerRole: api.WorkerRoleShard})
	if r.Status != http.StatusConflict || problemOf(t, r.Body).Type != api.ProblemClusterUpgrading {
		t.Fatalf("shard namespace at level 1: %d %s, want 409 cluster-upgrading", r.Status, r.Body)
	}

	// Blocks of several sequences at once go as single entries.
	logs := map[string]*testcluster.RangeLog{}
	for _, s := range seqs {
		logs[s] = new(testcluster.RangeLog)
	}
	reserveAcross(t, tc, logs, seqs, 20)
	for _, l := range logs {
		l.CheckDisjoint(t)
	}
	if g, n := groupedEntries(t, tc); g != 0 || n < len(seqs) {
		t.Fatalf("%d grouped entries of %d block entries at level 1, want none", g, n)
	}

	// n3 comes back on the new release: the level rises on every node.
	upgraded.Store(true)
	tc.Kill("n3")
	tc.Restart("n3")
	testkit.Eventually(t, 15*time.Second, 50*time.Millisecond, "every node at the current level", func() bool {
		return allAtLevel(tc, fsm.CurrentLevel)
	})
	tc.WaitReady(10 * time.Second)
	for _, n := range tc.Running() {
		if got := scrapeGauge(t, kit, tc.URL(n), "ticketd_cluster_feature_level"); got != float64(fsm.CurrentLevel) {
			t.Fatalf("%s ticketd_cluster_feature_level = %v after the rise, want %d", n.ID, got, fsm.CurrentLevel)
		}
	}
	l = tc.Leader(5 * time.Second)
	if code, err := tc.Do(http.MethodPost, tc.URL(l)+"/v1/sequences/a/raise", api.RaiseSequenceRequest{AtLeast: 10_000_000}, nil); err != nil || code != http.StatusOK {
		t.Fatalf("raise at level %d: %d %v", fsm.CurrentLevel, code, err)
	}
	reserveAcross(t, tc, logs, seqs, 20)
	for _, l := range logs {
		l.CheckDisjoint(t)
	}
	if g, n := groupedEntries(t, tc); g == 0 {
		t.Fatalf("no grouped entry of %d block entries after the level rose", n)
	}
	st, err := l.Srv.Node().Status()
	if err != nil {
		t.Fatal(err)
	}
	if st.ClusterFeatureLevel != int(fsm.CurrentLevel) || st.FeatureLevel != int(fsm.CurrentLevel) {
		t.Fatalf("status %+v", st)
	}
	for _, m := range st.Members {
		if m.LevelReport != "reported" || m.FeatureLevel != int(fsm.CurrentLevel) {
			t.Fatalf("member %+v: want reported at level %d", m, fsm.CurrentLevel)
		}
	}
}

// A node whose binary does not know the cluster's level is refused at
// join, with both levels named; once in, a member of a level the cluster
// has passed would stop at the entry that recorded it.
func TestUpgrade_JoinOfAnOlderNode_RefusedNamingBothLevels(t *testing.T) {
	tc := testcluster.New(t, 3, nil)
	testkit.Eventually(t, 15*time.Second, 50*time.Millisecond, "every node at the current level", func() bool {
		return allAtLevel(tc, fsm.CurrentLevel)
	})
	l := tc.Leader(5 * time.Second)
	old := tc.AddNodeWith("n4", []string{"http://" + l.HTTPAddr}, func(cfg *server.Config) {
		cfg.Cluster.FeatureLevel = fsm.LevelBase
	})
	body, _ := json.Marshal(api.JoinRequest{ID: "n4", RaftAddr: old.RaftAddr, HTTPAddr: old.HTTPAddr})
	r := testkit.Client{}.MustCall(t, http.MethodPost, tc.URL(l)+"/v1/cluster/members", json.RawMessage(body))
	if r.Status != http.StatusConflict {
		t.Fatalf("join of a level-1 node: %d %s, want 409", r.Status, r.Body)
	}
	p := problemOf(t, r.Body)
	want := fmt.Sprintf("the cluster is at feature level %d and joining member n4 does not know it", fsm.CurrentLevel)
	if p.Type != api.ProblemClusterUpgrading || !strings.Contains(p.Detail, want) || !strings.Contains(p.Detail, "level 1") ||
		p.ClusterFeatureLevel != int(fsm.CurrentLevel) || len(p.Behind) != 1 || p.Behind[0].ID != "n4" {
		t.Fatalf("join refused with %+v", p)
	}
	st, err := l.Srv.Node().Status()
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Members) != 3 {
		t.Fatalf("members after a refused join: %+v", st.Members)
	}
}

// A restore is validated by each node's own snapshot rules: a backup whose
// data needs format 5 is refused while a member cannot read it, naming the
// levels; one whose data a level-1 binary carries restores (re-encoded).
func TestUpgrade_RestoreIntoAnOlderCluster_RefusedNamingTheLevels(t *testing.T) {
	src := testcluster.New(t, 1, nil)
	testkit.Eventually(t, 10*time.Second, 50*time.Millisecond, "the source at the current level", func() bool {
		return allAtLevel(src, fsm.CurrentLevel)
	})
	src.CreateSequence("orders", nil)
	if _, code, err := testcluster.Reserve(src.Running()[0], "orders", 10); err != nil || code != http.StatusOK {
		t.Fatalf("reserve: %d %v", code, err)
	}
	plain := backupOf(t, src)
	if code, err := src.Do(http.MethodPost, src.URL(src.Running()[0])+"/v1/sequences/orders/raise", api.RaiseSequenceRequest{AtLeast: 5000}, nil); err != nil || code != http.StatusOK {
		t.Fatalf("raise: %d %v", code, err)
	}
	raised := backupOf(t, src)

	dst := testcluster.New(t, 3, func(id string, cfg *server.Config) {
		if id == "n3" {
			cfg.Cluster.FeatureLevel = fsm.LevelBase
		}
	})
	time.Sleep(500 * time.Millisecond) // several level probes
	code, body := restoreInto(t, dst, raised, 1000)
	if code != http.StatusConflict {
		t.Fatalf("restore of a backup with a raise record into a level-1 cluster: %d %s, want 409", code, body)
	}
	p := problemOf(t, []byte(body))
	if p.Type != api.ProblemClusterUpgrading || p.NeedFeatureLevel != int(fsm.LevelRaiseAndShards) || p.ClusterFeatureLevel != int(fsm.LevelBase) ||
		!strings.Contains(p.Detail, "n3") {
		t.Fatalf("refused with %+v", p)
	}
	if code, body := restoreInto(t, dst, plain, 1000); code != http.StatusNoContent {
		t.Fatalf("restore of a level-1 backup: %d %s", code, body)
	}
	var seq api.Sequence
	if code, err := dst.Do(http.MethodGet, dst.URL(dst.Running()[0])+"/v1/sequences/orders", nil, &seq); err != nil || code != http.StatusOK || seq.Next == nil || *seq.Next <= 1000 {
		t.Fatalf("restored sequence %+v (%d %v)", seq, code, err)
	}
}
