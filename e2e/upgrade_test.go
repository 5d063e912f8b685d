package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/ticketd/ticketd/fsm"
)

// A node starting into a cluster whose feature level its binary does not
// know (issue #31) stops at the entry that recorded the level, with a
// message naming both levels, rather than serve a log it may not read. The
// cluster of a newer release is stood for by one entry appended to the
// node's own log: a SetFeatureLevel one level above this binary's.
func TestBinary_StartIntoAClusterOfAnUnknownLevel_StopsNamingBothLevels(t *testing.T) {
	c := newCluster(t)
	n := c.startStatic(1)[0]
	createSequence(t, n, "orders")
	reserveVia(t, n, "orders", 10)
	deadline := time.Now().Add(15 * time.Second)
	for !strings.Contains(n.lastLog(), "raised the cluster's feature level") {
		if time.Now().After(deadline) {
			t.Fatalf("n1 never raised the cluster's level:\n%s", n.lastLog())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code, _ := c.sigterm(n, 10*time.Second); code != 0 {
		t.Fatalf("n1 exited %d on SIGTERM", code)
	}

	store, err := raftboltdb.NewBoltStore(filepath.Join(n.dataDir, "raft.db"))
	if err != nil {
		t.Fatal(err)
	}
	last, err := store.LastIndex()
	if err != nil {
		t.Fatal(err)
	}
	var prev raft.Log
	if err := store.GetLog(last, &prev); err != nil {
		t.Fatal(err)
	}
	future := fsm.CurrentLevel + 1
	if err := store.StoreLog(&raft.Log{Index: last + 1, Term: prev.Term, Type: raft.LogCommand,
		Data: fsm.EncodeSetFeatureLevel(fsm.SetFeatureLevel{Level: future})}); err != nil {
		t.Fatal(err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}

	c.spawn(n)
	if err := waitExit(n, 20*time.Second); err != nil {
		_ = n.signal(syscall.SIGKILL)
		t.Fatalf("n1 kept running on a log of level %d: %v\n%s", future, err, n.lastLog())
	}
	log := n.lastLog()
	for _, want := range []string{fmt.Sprintf("the cluster's feature level is %d", future), fmt.Sprintf("this binary knows levels up to %d", fsm.CurrentLevel)} {
		if !strings.Contains(log, want) {
			t.Fatalf("n1's log does not say %q:\n%s", want, log)
		}
	}
}
