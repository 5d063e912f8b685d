package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Issue 43, G1 and G3, as a StatefulSet runs ticketd: every pod gets the
// same flags, whatever its ordinal. The seed list names the first three;
// --join names their API URLs.

// startStatefulSet declares k nodes n1..nk that all take the same
// --initial-cluster (n1..n3) and the same --join (the seeds' URLs), and
// starts them all before waiting for any to be ready: the nodes beyond the
// seeds first, so that they ask to join while no leader exists yet.
func startStatefulSet(t *testing.T, c *cluster, k int) []*node {
	t.Helper()
	addrs := freeAddrs(t, 2*k)
	var seeds, join []string
	for i := 0; i < 3; i++ {
		seeds = append(seeds, fmt.Sprintf("n%d=%s", i+1, addrs[2*i+1]))
		join = append(join, "http://"+addrs[2*i])
	}
	flags := []string{"--initial-cluster", strings.Join(seeds, ","), "--join", strings.Join(join, ",")}
	var nodes []*node
	for i := 0; i < k; i++ {
		nodes = append(nodes, c.newNode(fmt.Sprintf("n%d", i+1), addrs[2*i], addrs[2*i+1], flags...))
	}
	for i := k - 1; i >= 0; i-- {
		c.start(nodes[i])
	}
	c.waitReady(30*time.Second, nodes...)
	waitMembers(t, nodes, nodes)
	return nodes
}

// TestBinary_OneSeedListForEveryNode_SeedsBootstrapTheOthersJoin: five
// processes with identical flags become one cluster of five voters; only
// the three seeds bootstrap, and the two others, started first, join once the
// seeds elect a leader.
func TestBinary_OneSeedListForEveryNode_SeedsBootstrapTheOthersJoin(t *testing.T) {
	c := newCluster(t)
	nodes := startStatefulSet(t, c, 5)
	for i, n := range nodes {
		bootstrapped := strings.Contains(n.lastLog(), "bootstrapping a new cluster")
		if seed := i < 3; bootstrapped != seed {
			t.Fatalf("%s: bootstrapped %v, want %v (only the seeds bootstrap)", n.id, bootstrapped, seed)
		}
	}
	createSequence(t, nodes[4], "orders")
	a := reserveVia(t, nodes[4], "orders", 10)
	b := reserveVia(t, nodes[3], "orders", 10)
	if b.First <= a.Last {
		t.Fatalf("reserve through n4 %+v is not above the one through n5 %+v", b, a)
	}
}

// TestBinary_RetainedDataDir_RemovedMemberRejoinsOnRestart: a scale-down
// removes a member and deletes its pod, and the volume is kept; when the
// pod returns on it, with the same flags, it joins again. Once with the
// member stopped before its removal (its own Raft configuration still names
// it), once removed while it runs (it stays out while it runs), then
// stopped and restarted.
func TestBinary_RetainedDataDir_RemovedMemberRejoinsOnRestart(t *testing.T) {
	c := newCluster(t)
	nodes := startStatefulSet(t, c, 5)
	n1, n4, n5 := nodes[0], nodes[3], nodes[4]
	createSequence(t, n1, "orders")
	before := reserveVia(t, n1, "orders", 100)
	addr := "--addr=" + n1.url() + "," + nodes[1].url()
	remove := func(id string) {
		t.Helper()
		if out, errOut, code := runCLI(t, nil, "remove", id, addr); code != 0 {
			t.Fatalf("ticketd remove %s: exit %d\nstdout: %s\nstderr: %s", id, code, out, errOut)
		}
	}

	// Stopped, then removed: its data dir still names it a member.
	c.kill9(n5)
	remove("n5")
	waitMembers(t, nodes[:4], nodes[:4])
	c.restart(n5)
	waitMembers(t, nodes, nodes)
	c.waitReady(30*time.Second, nodes...)
	if r := reserveVia(t, n5, "orders", 1); r.First <= before.Last {
		t.Fatalf("reserve through the returned n5: %+v, want above %d", r, before.Last)
	}

	// Removed while it runs: it stays out, not ready, until its pod is
	// deleted; back on its data dir, it joins again.
	remove("n4")
	kept := []*node{nodes[0], nodes[1], nodes[2], n5}
	waitMembers(t, kept, kept)
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, _ := kit.Do(http.MethodGet, n4.url()+"/readyz", nil, nil)
		if code == http.StatusServiceUnavailable {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the removed n4 still answers /readyz %d", code)
		}
		time.Sleep(20 * time.Millisecond)
	}
	waitMembers(t, kept, kept) // and it did not bring itself back
	c.kill9(n4)
	c.restart(n4)
	waitMembers(t, nodes, nodes)
	c.waitReady(30*time.Second, nodes...)
}
