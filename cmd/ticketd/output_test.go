package main

import (
	"bytes"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/fsm"
	"github.com/ticketd/ticketd/internal/testcluster"
	"github.com/ticketd/ticketd/internal/testkit"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files under testdata/ from this run's output")

// runCLI runs the command line in this process and returns its exit code
// and what it wrote.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// volatile matches the JSON values that differ from run to run (ports,
// terms, indexes, clocks, disk sizes, who leads, which build), so that what is left of
// an output (its fields, their order, indentation and the stable values)
// can be compared byte for byte with a golden file.
var volatile = []*regexp.Regexp{
	regexp.MustCompile(`("(?:node|state|leader|term|commit_index|applied_index|raft_addr|http_addr|api|last_contact_ms|free_bytes|log_bytes|snapshot_bytes|lag_entries|years_left|granted_ms|expires_ms|time_ms|index|token|version|go_version)": )("[^"]*"|[-0-9.e+]+)`),
}

// leaderChanges is the top-level array of leadership changes (it closes at
// the top level's indentation).
var leaderChanges = regexp.MustCompile(`(?s)"leader_changes": \[.*?\n  \]`)

// memberProbe is what the leader's level probe learned of a member: only
// the leader shows it (a follower answers without), and which node answers
// the command varies.
var memberProbe = regexp.MustCompile(`,\n\s*"version": <volatile>,\n\s*"feature_level": \d+,\n\s*"level_report": "[a-z-]+"`)

func normalize(s string) string {
	s = leaderChanges.ReplaceAllString(s, `"leader_changes": [<volatile>]`)
	for _, re := range volatile {
		s = re.ReplaceAllString(s, `${1}<volatile>`)
	}
	return memberProbe.ReplaceAllString(s, "")
}

// checkGolden compares got with testdata/name, or writes it there with -update.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *updateGolden {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("%s: output differs from the golden file\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// outputCluster is a 3-node cluster holding two sequences, a namespace with
// one lease and their audit records: the data every output test reads.
func outputCluster(t *testing.T) (tc *testcluster.Cluster, addr string) {
	t.Helper()
	tc = testcluster.New(t, 3, nil)
	tc.CreateSequence("orders", nil)
	tc.CreateSequence("invoices", api.CreateSequenceRequest{Start: ptr(int64(1000)), Max: ptr(int64(1999))})
	leader := tc.Leader(10e9)
	if code, err := tc.Do(http.MethodPut, tc.URL(leader)+"/v1/namespaces/photos", nil, nil); err != nil || code/100 != 2 {
		t.Fatalf("create namespace: %d %v", code, err)
	}
	var lease api.Lease
	if code, err := tc.Do(http.MethodPost, tc.URL(leader)+"/v1/namespaces/photos/leases", api.LeaseRequest{Holder: "worker-a"}, &lease); err != nil || code/100 != 2 {
		t.Fatalf("lease: %d %v", code, err)
	}
	if _, code, err := testcluster.Reserve(leader, "orders", 5); err != nil || code != http.StatusOK {
		t.Fatalf("reserve: %d %v", code, err)
	}
	// The leader raises the cluster's feature level once it has heard
	// every member's, and the reservation above may have the leader commit
	// its next block: wait for every member to have applied the same
	// commit index at this binary's level, so that what the outputs show
	// (the level, and every node ready with no lag) does not depend on
	// timing. A follower that had yet to apply the last entry showed
	// "ready": false in status.json in CI.
	testkit.Eventually(t, 15*time.Second, 50*time.Millisecond, "every member at the cluster feature level of this binary, ready, with the same entries applied", func() bool {
		applied := map[uint64]bool{}
		for _, u := range tc.URLs() {
			var st api.ClusterStatus
			if code, err := tc.Do(http.MethodGet, u+"/v1/cluster", nil, &st); err != nil || code != http.StatusOK ||
				st.ClusterFeatureLevel != int(fsm.CurrentLevel) || !st.Ready || st.AppliedIndex != st.CommitIndex {
				return false
			}
			applied[st.AppliedIndex] = true
		}
		return len(applied) == 1
	})
	return tc, "--addr=" + strings.Join(tc.URLs(), ",")
}

func ptr[T any](v T) *T { return &v }

// jsonFlag asks for JSON output. The golden files were written by the
// commands before they had -o (when JSON was all they printed), so this test
// holds -o json to today's output byte for byte, volatile values aside.
var jsonFlag = []string{"-o", "json"}

func TestJSONOutput_SameAsBeforeTables(t *testing.T) {
	_, addr := outputCluster(t)
	for _, c := range []struct {
		golden string
		args   []string
	}{
		{"status.json", []string{"status", addr}},
		{"sequences.json", []string{"sequences", addr}},
		{"sequences-one.json", []string{"sequences", "invoices", addr}},
		{"leases.json", []string{"namespaces", "photos", "--leases", addr}},
		{"audit-list.json", []string{"audit", "--list", addr}},
	} {
		code, out, errs := runCLI(t, append(c.args, jsonFlag...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", c.args, code, out, errs)
		}
		t.Logf("%v:\n%s", c.args, out)
		checkGolden(t, c.golden, normalize(out))
	}
}
