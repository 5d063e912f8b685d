//go:build linux

package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The lines are what the older release printed in an upgrade run against a
// leader without the level gate (jepsen-results/up2, n3 and n5).
func TestLogFindings_PanicAndRefusedSnapshot_OneLineEachWithCounts(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	snap := `time=2026-11-26T23:18:13.037Z level=ERROR msg="failed to restore snapshot" component=raft node=n3 module=raft error="failed to restore snapshot 5-9301-1795735092983: fsm: snapshot format version 5 is newer than this binary knows (4)"` + "\n"
	write("n3.run2.log", "# ticketd serve\n"+snap+snap)
	write("n5.run1.log", "level=INFO msg=hello\npanic: fsm: unknown command type 11 at index 3012\n\ngoroutine 1 [running]:\n")
	// The leader's side of the same refusal names the follower's error but
	// is not the follower's finding.
	write("n2.run2.log", `level=ERROR msg="failed to send snapshot to" error="failed to restore snapshot 5-9301-1: fsm: snapshot format version 5 is newer than this binary knows (4)"`+"\n")
	write("n1.run1.log", "level=INFO msg=\"recovered: no panic here\"\n")
	got, counts := logFindings(dir)
	want := []string{
		"n3 could not install the leader's snapshot: fsm: snapshot format version 5 is newer than this binary knows (4)",
		"n5: panic: fsm: unknown command type 11 at index 3012",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("findings %q, want %q", got, want)
	}
	if counts[want[0]] != 2 || counts[want[1]] != 1 {
		t.Fatalf("counts %v", counts)
	}
}

func TestLastLines_PanicFirst(t *testing.T) {
	got := lastLines([]string{"a", "b", "panic: fsm: unknown command type 11 at index 7", "", "goroutine 1 [running]:", "x"}, 3)
	want := []string{"panic: fsm: unknown command type 11 at index 7"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	if got := lastLines([]string{"a", "", "b", "c", "c"}, 2); !slices.Equal(got, []string{"b", "c"}) {
		t.Fatalf("got %q", got)
	}
}

func TestReadUpgradeFrom_TheRepositoryFileNamesOneCommit(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	c, err := readUpgradeFrom(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(c) != 40 {
		t.Fatalf("commit %q: want a full id", c)
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "jepsen"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"# only a comment\n", "abc\n", "9c31607\n9c31608\n"} {
		if err := os.WriteFile(filepath.Join(dir, upgradeFromFile), []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if c, err := readUpgradeFrom(dir); err == nil {
			t.Errorf("%q: read %q, want an error", bad, c)
		}
	}
}
