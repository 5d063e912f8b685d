package main

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/cluster"
	"github.com/ticketd/ticketd/internal/testcluster"
	"github.com/ticketd/ticketd/server"
)

// chartID is the ID a chart's pod would have for testcluster's node nK:
// r-<K-1>, an ordinal from 0 as a StatefulSet's.
func chartID(id string) string {
	k, _ := strconv.Atoi(strings.TrimPrefix(id, "n"))
	return fmt.Sprintf("r-%d", k-1)
}

// chartCluster starts a real n-node cluster whose members are named as the
// chart's pods are, r-0 .. r-<n-1> (testcluster names them n1 .. nN: the
// tweak renames each node and the initial cluster it bootstraps from), and
// returns the cluster and the nodes' URLs in ordinal order.
func chartCluster(t *testing.T, n int) (*testcluster.Cluster, []string) {
	tc := testcluster.New(t, n, func(id string, cfg *server.Config) {
		cfg.Cluster.ID = chartID(id)
		peers := make([]cluster.Peer, len(cfg.Cluster.InitialCluster))
		for i, p := range cfg.Cluster.InitialCluster {
			peers[i] = cluster.Peer{ID: chartID(p.ID), RaftAddr: p.RaftAddr}
		}
		cfg.Cluster.InitialCluster = peers
	})
	var urls []string
	for _, nd := range tc.Running() { // n1 .. nN: r-0 first, as the hook lists them
		urls = append(urls, tc.URL(nd))
	}
	return tc, urls
}

// voters is the sorted voters of the configuration as the serving leader
// holds it.
func voters(t *testing.T, tc *testcluster.Cluster) []string {
	t.Helper()
	var st api.ClusterStatus
	if code, err := tc.Do(http.MethodGet, tc.URL(tc.Leader(15*time.Second))+"/v1/cluster", nil, &st); err != nil || code != http.StatusOK {
		t.Fatalf("GET /v1/cluster from the leader: %d %v", code, err)
	}
	var ids []string
	for _, m := range st.Members {
		if m.Voter {
			ids = append(ids, m.ID)
		}
	}
	sort.Strings(ids)
	return ids
}

// The chart's scale-down from 5 to 3 with the leader on r-4, the first to
// go: leadership moves to a voter that stays, then r-4 and r-3 are removed
// in that order, and r-0 .. r-2 are left as the voters, with a leader. A
// rerun finds nothing to do, says so and changes nothing.
func TestMembersReconcile_FiveToThree_MovesLeaderThenRemovesHighestFirst(t *testing.T) {
	tc, urls := chartCluster(t, 5)
	addr := "--addr=" + strings.Join(urls, ",")
	if code, out, errs := runCLI(t, "leader", "transfer", "--to", "r-4", addr); code != 0 {
		t.Fatalf("placing leadership on r-4: exit %d\n%s%s", code, out, errs)
	}

	reconcile := []string{"members", "reconcile", "--replicas", "3", "--id-prefix", "r-", addr, "--timeout", "60s"}
	code, out, errs := runCLI(t, reconcile...)
	if code != 0 {
		t.Fatalf("reconcile: exit %d\n%s%s", code, out, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "moved leadership from r-4 to r-") ||
		!strings.Contains("r-0 r-1 r-2", strings.TrimPrefix(lines[0], "moved leadership from r-4 to ")) ||
		lines[1] != "removed r-4" || lines[2] != "removed r-3" || lines[3] != "done: removed 2, 3 voters left" {
		t.Fatalf("reconcile printed:\n%s\nwant leadership moved from r-4 to a kept voter, then r-4 and r-3 removed in that order", out)
	}
	if got := strings.Join(voters(t, tc), " "); got != "r-0 r-1 r-2" {
		t.Fatalf("voters after reconcile: %s, want r-0 r-1 r-2", got)
	}

	code, out, errs = runCLI(t, reconcile...)
	if code != 0 || out != "nothing to do: no voter r-<ordinal> has an ordinal of 3 or more (3 voters)\n" {
		t.Fatalf("rerun: exit %d, %q %s; want 0 and that there is nothing to do", code, out, errs)
	}
	if got := strings.Join(voters(t, tc), " "); got != "r-0 r-1 r-2" {
		t.Fatalf("voters after the rerun: %s, want r-0 r-1 r-2", got)
	}
}

// What reconcile refuses: a bad --replicas or --id-prefix (exit 2, before
// any request) and a prefix that matches no voter (exit 1). More replicas
// than members is a scale-up, whose hook runs before the new pods exist:
// nothing to do, and the missing ordinals named. None removes anyone.
func TestMembersReconcile_Refusals_RemoveNothing(t *testing.T) {
	tc, urls := chartCluster(t, 3)
	addr := "--addr=" + strings.Join(urls, ",")
	for _, c := range []struct {
		args []string
		code int
		errs string
	}{
		{[]string{"--replicas", "0", "--id-prefix", "r-"}, 2, "--replicas 0: want 1 or more"},
		{[]string{"--replicas", "-1", "--id-prefix", "r-"}, 2, "want 1 or more"},
		{[]string{"--replicas", "2"}, 2, "--id-prefix is required"},
		{[]string{"--replicas", "2", "--id-prefix", "r-1"}, 2, "ends in a digit"},
		{[]string{"--replicas", "2", "--id-prefix", "r-", "extra"}, 2, "usage: ticketd members reconcile"},
		{[]string{"--replicas", "1", "--id-prefix", "x-"}, 1, "no voter's ID is x-<ordinal>; is --id-prefix right?"},
		{[]string{"--replicas", "1", "--id-prefix", "r"}, 1, "no voter's ID is r<ordinal>"},
	} {
		args := append([]string{"members", "reconcile", addr, "--timeout", "20s"}, c.args...)
		code, out, errs := runCLI(t, args...)
		if code != c.code || !strings.Contains(errs, c.errs) || strings.Contains(out, "removed") {
			t.Errorf("%q: exit %d, %q %q; want %d and %q, nothing removed", c.args, code, out, errs, c.code, c.errs)
		}
	}
	code, out, _ := runCLI(t, "members", "reconcile", addr, "--replicas", "1", "--id-prefix", "x-")
	if code != 1 || !strings.Contains(out, "left alone: r-0 (its ID is not x-<ordinal>)") {
		t.Errorf("members outside the prefix: exit %d, %q; want them named as left alone", code, out)
	}
	code, out, errs := runCLI(t, "members", "reconcile", addr, "--replicas", "5", "--id-prefix", "r-")
	if want := "not a voter (yet): r-3; a scale-up's pod joins when it starts\n" +
		"not a voter (yet): r-4; a scale-up's pod joins when it starts\n" +
		"nothing to do: no voter r-<ordinal> has an ordinal of 5 or more (3 voters)\n"; code != 0 || out != want {
		t.Errorf("--replicas 5 of 3 (a scale-up): exit %d, %q %s; want 0 and\n%s", code, out, errs, want)
	}
	if code, _, errs := runCLI(t, "members", "shrink"); code != 2 || !strings.Contains(errs, "unknown command") {
		t.Errorf("members shrink: exit %d, %q; want 2 and the usage", code, errs)
	}
	if got := strings.Join(voters(t, tc), " "); got != "r-0 r-1 r-2" {
		t.Fatalf("voters after refused runs: %s, want r-0 r-1 r-2", got)
	}
}
