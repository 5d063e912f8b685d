package cluster

import (
	"fmt"
	"syscall"
	"testing"
	"time"
)

// On a full disk some writes still succeed (bolt reuses freed pages), so a
// health that followed the latest write flapped: the fault suite's
// disk-full-leader saw a leader go 503, 200 and 503 again within a second
// while its disk stayed full. A run of failures ends only when a write has
// succeeded and none has failed for storageQuiet; an idle node recovers
// without another write.
func TestStorageHealth_OneSuccessAmidFailures_DoesNotEndTheRun(t *testing.T) {
	now := time.Unix(1000, 0)
	var cleared []time.Duration
	h := &storageHealth{now: func() time.Time { return now }, onClear: func(d time.Duration) { cleared = append(cleared, d) }}
	enospc := fmt.Errorf("write raft.db: %w", syscall.ENOSPC)
	failing := func() bool { err, _, _ := h.problem(); return err != nil }

	h.observe("append", time.Millisecond, enospc)
	if err, kind, since := h.problem(); err == nil || kind != "no_space" || !since.Equal(now) {
		t.Fatalf("after a failed append: %v %q %v", err, kind, since)
	}
	// Writes that land in reused pages succeed between failures.
	for i := 0; i < 10; i++ {
		now = now.Add(300 * time.Millisecond)
		if i%2 == 0 {
			h.observe("append", time.Millisecond, nil)
		} else {
			h.observe("append", time.Millisecond, enospc)
		}
		if !failing() {
			t.Fatalf("step %d: healthy again while writes still fail", i)
		}
	}
	// Space is back: the next write succeeds, and the run ends once
	// storageQuiet has passed since the last failure, with no further
	// write (an idle cluster) needed.
	now = now.Add(100 * time.Millisecond)
	h.observe("append", time.Millisecond, nil)
	now = now.Add(storageQuiet - 200*time.Millisecond)
	if !failing() {
		t.Fatal("healthy before storageQuiet had passed since the last failure")
	}
	now = now.Add(200 * time.Millisecond)
	if failing() {
		t.Fatal("still failing storageQuiet after the last failure, with a success since")
	}
	if len(cleared) != 1 {
		t.Fatalf("the run ended %d times, want once", len(cleared))
	}
	// Quiet without a success since the last failure is not recovery.
	h.observe("append", time.Millisecond, enospc)
	now = now.Add(10 * storageQuiet)
	if !failing() {
		t.Fatal("healthy with no successful write since the last failure")
	}
}
