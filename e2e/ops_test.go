package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/api"
)

const (
	e2eAdmin   = "e2e-admin-0123456789abcdef0123"
	e2eReserve = "e2e-reserve-0123456789abcdef0123"
)

// authNode starts a single-node cluster with authentication on (tokens in
// TICKETD_TOKENS, no --dev) and, explicitly, plaintext Raft (TLS has its
// own tests).
func authNode(t *testing.T, c *cluster, id string) *node {
	t.Helper()
	addrs := freeAddrs(t, 2)
	n := c.newNode(id, addrs[0], addrs[1], "--bootstrap")
	var args []string
	for _, a := range n.args {
		if a != "--dev" {
			args = append(args, a)
		}
	}
	n.args = append(args, "--insecure-plaintext-raft")
	n.env = []string{"TICKETD_TOKENS=admin " + e2eAdmin + ";reserve " + e2eReserve}
	c.start(n)
	c.waitReady(20*time.Second, n)
	return n
}

// TestBinary_AuthBackupRestoreInspect drives the operator's commands
// against real processes with authentication on: scopes, backup, restore
// into a new cluster with --advance, inspect, namespaces, audit, status.
func TestBinary_AuthBackupRestoreInspect(t *testing.T) {
	c := newCluster(t)
	old := authNode(t, c, "old")
	admin := []string{"TICKETD_ADDR=" + old.url(), "TICKETD_TOKEN=" + e2eAdmin}
	reserver := []string{"TICKETD_ADDR=" + old.url(), "TICKETD_TOKEN=" + e2eReserve}

	if _, errOut, code := runCLI(t, []string{"TICKETD_ADDR=" + old.url()}, "status"); code == 0 || !strings.Contains(errOut, "401") {
		t.Fatalf("status without a token: exit %d, %s", code, errOut)
	}
	if _, errOut, code := runCLI(t, reserver, "create", "orders"); code == 0 || !strings.Contains(errOut, "403") {
		t.Fatalf("create with a reserve token: exit %d, %s", code, errOut)
	}
	if out, errOut, code := runCLI(t, admin, "create", "orders"); code != 0 {
		t.Fatalf("create: %d %s %s", code, out, errOut)
	}
	if out, errOut, code := runCLI(t, admin, "namespaces", "users", "--create"); code != 0 || !strings.Contains(out, `"worker_bits":10`) {
		t.Fatalf("namespaces --create: %d %q %s", code, out, errOut)
	}
	var last int64
	for i := 0; i < 5; i++ {
		out, errOut, code := runCLI(t, reserver, "reserve", "orders", "100")
		if code != 0 {
			t.Fatalf("reserve: %d %s", code, errOut)
		}
		var r api.Range
		if err := json.Unmarshal([]byte(out), &r); err != nil || r.First <= last {
			t.Fatalf("reserve printed %q (%v)", out, err)
		}
		last = r.Last
	}

	backup := filepath.Join(t.TempDir(), "ticketd.backup")
	if _, errOut, code := runCLI(t, reserver, "backup", "--out", backup); code == 0 {
		t.Fatalf("backup with a reserve token succeeded: %s", errOut)
	}
	if _, errOut, code := runCLI(t, admin, "backup", "--out", backup); code != 0 {
		t.Fatalf("backup: %d %s", code, errOut)
	}
	if fi, err := os.Stat(backup); err != nil || fi.Size() == 0 {
		t.Fatalf("backup file: %v", err)
	}
	// Keep reserving after the backup: the restore must stay above these.
	for i := 0; i < 5; i++ {
		out, _, code := runCLI(t, reserver, "reserve", "orders", "1000")
		var r api.Range
		if code != 0 || json.Unmarshal([]byte(out), &r) != nil {
			t.Fatalf("reserve after backup: %d %q", code, out)
		}
		last = r.Last
	}

	// Inspect an ID handed out above: its block, log index and leader.
	out, errOut, code := runCLI(t, reserver, "inspect", "--sequence", "orders", "150")
	var ri api.RangeInspection
	if code != 0 || json.Unmarshal([]byte(out), &ri) != nil || ri.Block == nil || ri.Block.Leader != "old" || !ri.Issued {
		t.Fatalf("inspect: %d %q %s", code, out, errOut)
	}
	if out, errOut, code := runCLI(t, admin, "audit"); code != 0 || !strings.Contains(out, `"violations": []`) {
		t.Fatalf("audit: %d %q %s", code, out, errOut)
	}
	out, errOut, code = runCLI(t, reserver, "status", "-o", "json")
	if code != 0 || !strings.Contains(out, `"fraction_left"`) || !strings.Contains(out, `"years_left"`) {
		t.Fatalf("status: %d %q %s", code, out, errOut)
	}

	fresh := authNode(t, c, "fresh")
	freshAdmin := []string{"TICKETD_ADDR=" + fresh.url(), "TICKETD_TOKEN=" + e2eAdmin}
	if _, errOut, code := runCLI(t, freshAdmin, "restore", "--in", backup); code != 2 || !strings.Contains(errOut, "--advance") {
		t.Fatalf("restore without --advance: exit %d, %s", code, errOut)
	}
	if _, errOut, code := runCLI(t, freshAdmin, "restore", "--in", backup, "--advance", "1000000"); code != 0 {
		t.Fatalf("restore: %d %s", code, errOut)
	}
	out, errOut, code = runCLI(t, freshAdmin, "reserve", "orders", "1")
	var r api.Range
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil {
		t.Fatalf("reserve after restore: %d %q %s", code, out, errOut)
	}
	if r.First <= last {
		t.Fatalf("first range after restore %+v is not above %d, reserved after the backup", r, last)
	}
	// The namespace came along.
	if out, _, code := runCLI(t, freshAdmin, "namespaces", "users"); code != 0 || !strings.Contains(out, `"name": "users"`) {
		t.Fatalf("namespace after restore: %d %q", code, out)
	}
}
