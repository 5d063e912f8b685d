package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/api"
)

// TestBinary_JoinAndRemove grows a --bootstrap node to three with --join,
// removes one with `ticketd remove`, and drives the client commands: each
// exits 0 and prints JSON that parses, and a bad invocation exits non-zero
// naming the problem.
func TestBinary_JoinAndRemove(t *testing.T) {
	c := newCluster(t)
	addrs := freeAddrs(t, 6)
	// n1 is told to serve a Snowflake namespace no one has created: its
	// status says it cannot, and why (issue #32).
	n1 := c.newNode("n1", addrs[0], addrs[1], "--bootstrap", "--snowflake-namespaces", "users")
	c.start(n1)
	c.waitReady(15*time.Second, n1)
	n2 := c.newNode("n2", addrs[2], addrs[3], "--join", n1.url())
	n3 := c.newNode("n3", addrs[4], addrs[5], "--join", n1.url())
	c.start(n2)
	c.start(n3)
	nodes := []*node{n1, n2, n3}
	c.waitReady(20*time.Second, nodes...)

	// Every node's view: all three voters, each with its API address (which
	// the joiners register asynchronously).
	waitMembers(t, nodes, nodes)

	addrFlag := "--addr=" + n1.url() + "," + n2.url()
	out, errOut, code := runCLI(t, nil, "remove", "n3", addrFlag)
	if code != 0 {
		t.Fatalf("ticketd remove n3: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if !strings.Contains(out, "n3") {
		t.Fatalf("ticketd remove n3 printed %q, want it to name n3", out)
	}
	waitMembers(t, []*node{n1, n2}, []*node{n1, n2})

	// Client commands, through --addr and through TICKETD_ADDR.
	env := []string{"TICKETD_ADDR=" + n2.url() + "," + n1.url()}
	var st struct {
		api.ClusterStatus
		Capacity struct {
			Sequences  []json.RawMessage `json:"sequences"`
			Namespaces []json.RawMessage `json:"namespaces"`
		} `json:"capacity"`
		Nodes []struct {
			ID           string              `json:"id"`
			API          string              `json:"api"`
			Version      string              `json:"version"`
			FeatureLevel int                 `json:"feature_level"`
			State        string              `json:"state"`
			Ready        bool                `json:"ready"`
			NotReady     string              `json:"not_ready"`
			LagEntries   *uint64             `json:"lag_entries"`
			Storage      api.NodeStorage     `json:"storage"`
			Snowflake    []api.NodeSnowflake `json:"snowflake"`
			Error        string              `json:"error"`
		} `json:"nodes"`
	}
	cliJSON(t, nil, &st, "status", "-o", "json", addrFlag)
	if st.Node == "" || st.Leader == "" || len(st.Members) != 2 || st.Capacity.Sequences == nil || !st.Ready || !st.Storage.Healthy || st.Storage.LogBytes <= 0 {
		t.Fatalf("ticketd status: %+v, want a ready node with healthy storage, a leader and 2 members", st)
	}
	// Every member as it sees itself (issue #19): ready, lag, storage.
	if len(st.Nodes) != 2 {
		t.Fatalf("ticketd status: nodes %+v, want n1 and n2", st.Nodes)
	}
	for _, v := range st.Nodes {
		if v.Error != "" || !v.Ready || v.LagEntries == nil || !v.Storage.Healthy || v.Storage.FreeBytes <= 0 || v.Storage.LogBytes <= 0 {
			t.Fatalf("ticketd status: node %+v, want it ready, with its lag and healthy storage", v)
		}
		// Issue #31: each node's release (stamped by the build) and level.
		if v.Version == "" || v.Version != st.Version || v.FeatureLevel != st.FeatureLevel || v.FeatureLevel < 3 {
			t.Fatalf("ticketd status: node %+v, want release %q and feature level %d", v, st.Version, st.FeatureLevel)
		}
		if sf := v.Snowflake; v.ID == "n1" && (len(sf) != 1 || sf[0].Namespace != "users" || sf[0].Serving || sf[0].Reason == "" || sf[0].WorkerID != -1) {
			t.Fatalf("ticketd status: n1's Snowflake leases %+v, want users, not serving, with why", sf)
		}
	}
	var seq api.Sequence
	cliJSON(t, env, &seq, "create", "SEQ")
	if seq.Name != "SEQ" || seq.Start != 1 || seq.Next == nil || *seq.Next != 1 {
		t.Fatalf("ticketd create SEQ: %+v", seq)
	}
	var r api.Range
	cliJSON(t, env, &r, "reserve", "SEQ", "5")
	if r.Sequence != "SEQ" || r.First < 1 || r.Last-r.First+1 != 5 {
		t.Fatalf("ticketd reserve SEQ 5: %+v", r)
	}
	var r2 api.Range
	cliJSON(t, nil, &r2, "reserve", "SEQ", "5", addrFlag) // flags after the arguments too
	if r2.First <= r.Last || r2.Last-r2.First+1 != 5 {
		t.Fatalf("second reserve %+v is not a 5-ID range above %+v", r2, r)
	}
	var info api.Sequence
	cliJSON(t, env, &info, "sequences", "-o", "json", "SEQ")
	if info.Name != "SEQ" || info.Next == nil || *info.Next <= r2.Last {
		t.Fatalf("ticketd sequences SEQ: %+v, want next above %d", info, r2.Last)
	}
	// raise: above the mark, then again (nothing changes), then a reserve
	// lies above it.
	target := *info.Next + 1_000_000
	var raised api.RaiseSequenceResult
	cliJSON(t, env, &raised, "raise", "SEQ", "--at-least", strconv.FormatInt(target, 10))
	if !raised.Raised || raised.Sequence.Next == nil || *raised.Sequence.Next != target+1 {
		t.Fatalf("ticketd raise SEQ --at-least %d: %+v", target, raised)
	}
	cliJSON(t, env, &raised, "raise", "SEQ", "--at-least", strconv.FormatInt(target, 10))
	if raised.Raised || raised.Skipped != 0 {
		t.Fatalf("the same raise again: %+v, want nothing changed", raised)
	}
	var r3 api.Range
	cliJSON(t, env, &r3, "reserve", "SEQ", "2")
	if r3.First <= target {
		t.Fatalf("reserve after raising to %d: %+v", target, r3)
	}

	var list api.SequenceList
	cliJSON(t, env, &list, "sequences", "-o", "json")
	if len(list.Sequences) != 1 || list.Sequences[0].Name != "SEQ" {
		t.Fatalf("ticketd sequences: %+v", list)
	}

	// Bad invocations: non-zero exit, a message naming the problem, nothing
	// on stdout.
	for _, tc := range []struct {
		args []string
		want []string // substrings of stderr
	}{
		{[]string{"reserve", "SEQ", "notanumber"}, []string{"notanumber", "integer"}},
		{[]string{"reserve", "bad name", "5"}, []string{"sequence name"}},
		{[]string{"reserve", "SEQ", "0"}, []string{"count"}},
		{[]string{"reserve", "NOPE", "5"}, []string{"not found"}},
		{[]string{"reserve", "SEQ"}, []string{"usage"}},
		{[]string{"raise", "SEQ"}, []string{"--at-least"}},
		{[]string{"raise", "SEQ", "--at-least", "-3"}, []string{"--at-least"}},
		{[]string{"raise", "NOPE", "--at-least", "5"}, []string{"not found"}},
		{[]string{"raise", "SEQ", "--at-least", "9223372036854775807", "--addr", "http://127.0.0.1:1"}, []string{"127.0.0.1:1"}},
	} {
		out, errOut, code := runCLI(t, env, tc.args...)
		if code == 0 {
			t.Errorf("ticketd %q: exit 0, want non-zero (stdout %q)", tc.args, out)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(strings.ToLower(errOut), w) {
				t.Errorf("ticketd %q: exit %d, stderr %q does not mention %q", tc.args, code, errOut, w)
			}
		}
		if strings.TrimSpace(out) != "" {
			t.Errorf("ticketd %q: printed %q on stdout on failure", tc.args, out)
		}
	}
}

// waitMembers waits until every node in views reports exactly want as
// voters, each with its own API address.
func waitMembers(t *testing.T, views, want []*node) {
	t.Helper()
	var wantIDs []string
	for _, n := range want {
		wantIDs = append(wantIDs, n.id+"@"+n.httpAddr)
	}
	slices.Sort(wantIDs)
	deadline := time.Now().Add(20 * time.Second)
	for _, v := range views {
		for {
			var st api.ClusterStatus
			code, err := kit.Do(http.MethodGet, v.url()+"/v1/cluster", nil, &st)
			var got []string
			if err == nil && code == http.StatusOK {
				for _, m := range st.Members {
					if m.Voter {
						got = append(got, m.ID+"@"+m.HTTPAddr)
					} else {
						got = append(got, m.ID+"(non-voter)")
					}
				}
				slices.Sort(got)
				if slices.Equal(got, wantIDs) {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s's view of the members: %v (err %v), want voters %v", v.id, got, err, wantIDs)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// cliJSON runs a client command that must exit 0 and decodes its stdout.
func cliJSON(t *testing.T, env []string, out any, args ...string) {
	t.Helper()
	stdout, stderr, code := runCLI(t, env, args...)
	if code != 0 {
		t.Fatalf("ticketd %q: exit %d\nstdout: %s\nstderr: %s", args, code, stdout, stderr)
	}
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		t.Fatalf("ticketd %q printed %q: not the expected JSON: %v", args, stdout, err)
	}
}

// TestBinary_EnvVarsConfigureServe starts a node configured only through
// TICKETD_* environment variables: it serves, under the id, data dir and
// addresses they name.
func TestBinary_EnvVarsConfigureServe(t *testing.T) {
	c := newCluster(t)
	addrs := freeAddrs(t, 2)
	dir := filepath.Join(c.base, "data", "from-env")
	n := &node{id: "from-env", dataDir: dir, httpAddr: addrs[0], raftAddr: addrs[1], args: []string{"serve"}}
	n.env = []string{
		"TICKETD_ID=from-env",
		"TICKETD_DATA_DIR=" + dir,
		"TICKETD_HTTP_ADDR=" + addrs[0],
		"TICKETD_RAFT_ADDR=" + addrs[1],
		"TICKETD_BOOTSTRAP=true",
		"TICKETD_DEV=true",
		"TICKETD_HEARTBEAT_TIMEOUT=300ms",
		"TICKETD_ELECTION_TIMEOUT=300ms",
		"TICKETD_LEADER_LEASE_TIMEOUT=150ms",
		"TICKETD_LOG_FORMAT=json",
	}
	c.track(n)
	c.start(n)
	c.waitReady(15*time.Second, n)

	var st api.ClusterStatus
	if code, err := kit.Do(http.MethodGet, n.url()+"/v1/cluster", nil, &st); err != nil || code != http.StatusOK {
		t.Fatalf("GET /v1/cluster: %d %v", code, err)
	}
	if st.Node != "from-env" || st.Leader != "from-env" || len(st.Members) != 1 || st.Members[0].RaftAddr != addrs[1] {
		t.Fatalf("cluster status %+v, want the single node from-env at raft %s", st, addrs[1])
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("TICKETD_DATA_DIR %s not used: %v", dir, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) == 0 {
		t.Fatalf("TICKETD_DATA_DIR %s is empty", dir)
	}
	createSequence(t, n, "env")
	if r := reserveVia(t, n, "env", 3); r.First != 1 {
		t.Fatalf("first range of a new sequence: %+v, want it to start at 1", r)
	}
	// TICKETD_LOG_FORMAT=json: every log line is a JSON object.
	for _, line := range strings.Split(strings.TrimSpace(n.lastLog()), "\n") {
		if !json.Valid([]byte(line)) {
			t.Fatalf("TICKETD_LOG_FORMAT=json ignored: log line %q", line)
		}
	}
}

// TestBinary_BadFlags checks that `ticketd serve` refuses a bad
// configuration with exit code 2 and a message naming the problem, before
// it opens anything.
func TestBinary_BadFlags(t *testing.T) {
	binary(t) // skips in -short mode
	dir := t.TempDir()
	addrs := []string{"--http-addr", "127.0.0.1:0", "--raft-addr", "127.0.0.1:0"}
	for _, tc := range []struct {
		name string
		args []string
		env  []string
		want []string // substrings of stderr
	}{
		{"no id", append([]string{"serve", "--data-dir", dir + "/a"}, addrs...), nil, []string{"node id"}},
		{"initial cluster without this id", append([]string{"serve", "--id", "n1", "--data-dir", dir + "/b",
			"--initial-cluster", "n2=127.0.0.1:7002,n3=127.0.0.1:7003"}, addrs...), nil, []string{"initial cluster", `"n1"`}},
		{"bootstrap and initial cluster", append([]string{"serve", "--id", "n1", "--data-dir", dir + "/c", "--bootstrap",
			"--initial-cluster", "n1=127.0.0.1:7001"}, addrs...), nil, []string{"bootstrap", "initial cluster"}},
		{"no data dir", append([]string{"serve", "--id", "n1", "--bootstrap"}, addrs...), nil, []string{"data dir"}},
		{"malformed initial cluster", append([]string{"serve", "--id", "n1", "--data-dir", dir + "/d",
			"--initial-cluster", "n1"}, addrs...), nil, []string{"--initial-cluster"}},
		{"bad duration in env", append([]string{"serve", "--id", "n1", "--data-dir", dir + "/e", "--bootstrap"}, addrs...),
			[]string{"TICKETD_ELECTION_TIMEOUT=soon"}, []string{"TICKETD_ELECTION_TIMEOUT"}},
		{"unknown flag", []string{"serve", "--no-such-flag"}, nil, []string{"no-such-flag"}},
		{"no tokens and no --dev", append([]string{"serve", "--id", "n1", "--data-dir", dir + "/f", "--bootstrap"}, addrs...),
			nil, []string{"authentication is on by default", "--tokens-file", "--dev"}},
		{"tokens without an admin token", append([]string{"serve", "--id", "n1", "--data-dir", dir + "/g", "--bootstrap"}, addrs...),
			[]string{"TICKETD_TOKENS=reserve only-a-reserve-token-0123456789"}, []string{"admin token"}},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			out, errOut, code := runCLI(t, tc.env, tc.args...)
			if code != 2 {
				t.Fatalf("ticketd %q: exit %d, want 2\nstdout: %s\nstderr: %s", tc.args, code, out, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("ticketd %q: stderr %q does not mention %q", tc.args, errOut, w)
				}
			}
		})
	}
	// None of them created its data dir.
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("refused configurations still created data dirs: %v", names)
	}
}
