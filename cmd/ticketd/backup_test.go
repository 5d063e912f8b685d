package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/internal/testcluster"
)

// dirNames lists the names in dir, sorted.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	return names
}

// `backup --out-dir DIR --keep N`, run again and again: each run adds a
// backup named by a number one above the last and the UTC time, holding
// what --out writes, and then removes the lowest numbers beyond N. Only
// files of that naming are touched, and the numbers, not the times in the
// names, say which are oldest.
func TestBackupOutDir_NumberedFiles_KeepsTheNewestN(t *testing.T) {
	tc := testcluster.New(t, 1, nil)
	tc.CreateSequence("orders", nil)
	addr := "--addr=" + strings.Join(tc.URLs(), ",")
	dir := t.TempDir()

	// Someone else's files, and names close to the pattern: never touched.
	// A backup from a clock far ahead (year 2099) with a low number is
	// older than every backup this test makes, whatever its time says.
	others := []string{"notes.txt", "ticketd.backup", "ticketd-000009-20990101T000000Z.backup.bak",
		"ticketd-9-20990101T000000Z.backup", "xticketd-000001-20990101T000000Z.backup"}
	for _, n := range append(slices.Clone(others), "ticketd-000002-20990101T000000Z.backup") {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("not ours to prune"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "ticketd-000001-20990101T000000Z.backup"), 0o700); err != nil {
		t.Fatal(err) // a directory of the pattern's name: not a backup
	}
	others = append(others, "ticketd-000001-20990101T000000Z.backup")

	one := filepath.Join(t.TempDir(), "one.backup")
	if code, _, errs := runCLI(t, "backup", "--out", one, addr); code != 0 {
		t.Fatalf("backup --out: exit %d: %s", code, errs)
	}
	want, err := os.ReadFile(one)
	if err != nil || len(want) == 0 {
		t.Fatalf("backup --out wrote %d bytes: %v", len(want), err)
	}

	name := regexp.MustCompile(`^ticketd-(0000(0[3-9]|10))-[0-9]{8}T[0-9]{6}Z\.backup$`)
	for run := 3; run <= 7; run++ {
		code, out, errs := runCLI(t, "backup", "--out-dir", dir, "--keep", "3", addr)
		if code != 0 {
			t.Fatalf("run %d: exit %d: %s", run, code, errs)
		}
		if !strings.HasPrefix(out, "wrote ") {
			t.Fatalf("run %d printed %q", run, out)
		}
	}
	var ours []string
	for _, n := range dirNames(t, dir) {
		if !slices.Contains(others, n) {
			ours = append(ours, n)
		}
	}
	for _, o := range others {
		if _, err := os.Lstat(filepath.Join(dir, o)); err != nil {
			t.Errorf("%s, not a backup of this command, was touched: %v", o, err)
		}
	}
	if len(ours) != 3 {
		t.Fatalf("after five runs with --keep 3 the directory holds %q besides the others, want 3 backups", ours)
	}
	for i, n := range ours {
		m := name.FindStringSubmatch(n)
		if m == nil || m[1] != []string{"000005", "000006", "000007"}[i] {
			t.Errorf("backup %d is %q, want number %d (the highest three; 2 was the 2099 one)", i, n, 5+i)
		}
		got, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s holds %d bytes (%v), want what --out wrote (%d bytes)", n, len(got), err, len(want))
		}
		if st, err := os.Stat(filepath.Join(dir, n)); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v (%v), want 0600", n, st.Mode().Perm(), err)
		}
	}

	// A failed backup writes nothing and prunes nothing.
	before := dirNames(t, dir)
	if code, _, _ := runCLI(t, "backup", "--out-dir", dir, "--keep", "1", "--addr=http://127.0.0.1:1"); code == 0 {
		t.Fatal("backup from an address nothing listens on succeeded")
	}
	if after := dirNames(t, dir); !slices.Equal(after, before) {
		t.Fatalf("a failed backup changed the directory:\nbefore %q\nafter  %q", before, after)
	}
}

// Flags that cannot go together, and directories that cannot take a
// backup, are refused before anything is asked of the cluster, naming the
// problem.
func TestBackupOutDir_BadFlagsNamed(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// Nothing listens here: a command that got as far as asking would
	// fail differently.
	addr := "--addr=http://127.0.0.1:1"
	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"backup", "--out", file, "--out-dir", dir, addr}, 2, "--out and --out-dir are exclusive"},
		{[]string{"backup", addr}, 2, "usage: ticketd backup (--out FILE | --out-dir DIR [--keep N])"},
		{[]string{"backup", "--out", file, "--keep", "3", addr}, 2, "--keep needs --out-dir"},
		{[]string{"backup", "--out-dir", dir, "--keep", "-1", addr}, 2, "--keep -1: want 0"},
		{[]string{"backup", "--out-dir", filepath.Join(dir, "missing"), addr}, 1, "missing does not exist"},
		{[]string{"backup", "--out-dir", file, addr}, 1, "is not a directory"},
	} {
		code, _, errs := runCLI(t, c.args...)
		if code != c.code || !strings.Contains(errs, c.says) {
			t.Errorf("%q: exit %d, %q; want %d saying %q", c.args, code, errs, c.code, c.says)
		}
	}
	if names := dirNames(t, dir); !slices.Equal(names, []string{"f"}) {
		t.Fatalf("refused commands left %q", names)
	}
}
