//go:build linux

package main

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/jepsen/checker"
)

func TestParseKinds(t *testing.T) {
	all, err := parseKinds("all")
	if err != nil || len(all) != len(nemesisKinds) {
		t.Fatalf("all: %v %v", all, err)
	}
	none, err := parseKinds("none")
	if err != nil || len(none) != 0 {
		t.Fatalf("none: %v %v", none, err)
	}
	got, err := parseKinds("kill,pause-leader,kill-leader")
	if err != nil || !slices.Equal(got, []string{"kill-all", "kill-leader", "kill-random", "pause-leader"}) {
		t.Fatalf("groups: %v %v", got, err)
	}
	if _, err := parseKinds("kill-everything"); err == nil {
		t.Fatal("unknown kind accepted")
	}
}

func TestRingOfMajorities(t *testing.T) {
	for _, n := range []int{4, 5, 6, 7, 9} {
		views := map[string]bool{}
		for i := 0; i < n; i++ {
			var view []int
			for j := 0; j < n; j++ {
				if ringConnected(i, j, n) != ringConnected(j, i, n) {
					t.Fatalf("n=%d: not symmetric for %d,%d", n, i, j)
				}
				if ringConnected(i, j, n) {
					view = append(view, j)
				}
			}
			if len(view) < n/2+1 {
				t.Fatalf("n=%d: node %d sees %v, not a majority", n, i, view)
			}
			if len(view) == n {
				t.Fatalf("n=%d: node %d sees everyone", n, i)
			}
			key := ""
			for _, v := range view {
				key += string(rune('a' + v))
			}
			if views[key] {
				t.Fatalf("n=%d: two nodes see the same majority %v", n, view)
			}
			views[key] = true
		}
	}
}

func TestBridge(t *testing.T) {
	for _, n := range []int{3, 5} {
		half := (n - 1) / 2
		for i := 0; i < n; i++ {
			if !bridgeConnected(0, i, n) {
				t.Fatalf("n=%d: the bridge does not see %d", n, i)
			}
		}
		if bridgeConnected(1, 1+half, n) {
			t.Fatalf("n=%d: the halves see each other", n)
		}
		if n == 5 && !bridgeConnected(1, 2, n) {
			t.Fatal("a half is split")
		}
	}
}

func TestClassify(t *testing.T) {
	cases := []struct {
		r    httpResult
		want string
	}{
		{httpResult{err: errors.New("dial tcp: connection refused")}, checker.Fail},
		{httpResult{err: errors.New("context deadline exceeded"), sent: true}, checker.Unknown},
		{httpResult{status: http.StatusServiceUnavailable, sent: true, body: []byte(`{"type":"urn:ticketd:problem:unavailable"}`)}, checker.Unknown},
		{httpResult{status: http.StatusConflict, sent: true}, checker.Fail},
		{httpResult{status: http.StatusTooManyRequests, sent: true}, checker.Fail},
		{httpResult{status: http.StatusBadGateway, sent: true}, checker.Unknown},
	}
	for i, c := range cases {
		var o checker.Op
		classify(&o, c.r)
		if o.Outcome != c.want {
			t.Errorf("case %d: %+v → %s, want %s", i, c.r, o.Outcome, c.want)
		}
	}
}

func TestVerdict(t *testing.T) {
	valid := runResults{}
	valid.Valid, valid.Lost.Checked = true, true
	valid.WellFormed.Valid, valid.Uniqueness.Valid, valid.Linearizable.Valid, valid.Reads.Valid = true, true, true, true
	valid.Leases.Valid, valid.Snowflake.Valid, valid.Migration.Valid, valid.Raises.Valid = true, true, true, true
	valid.UnknownRaises.Valid, valid.NodeSnowflake.Valid = true, true
	if v := verdict(&valid); v != exitValid {
		t.Fatalf("valid → %d", v)
	}
	for name, broken := range map[string]func(*runResults){
		"lease":                 func(r *runResults) { r.Leases.Valid = false },
		"snowflake":             func(r *runResults) { r.Snowflake.Valid = false },
		"migration":             func(r *runResults) { r.Migration.Valid = false },
		"raise":                 func(r *runResults) { r.Raises.Valid = false },
		"unknown raise":         func(r *runResults) { r.UnknownRaises.Valid = false },
		"server-made snowflake": func(r *runResults) { r.NodeSnowflake.Valid = false },
	} {
		b := valid
		b.Valid = false
		broken(&b)
		if v := verdict(&b); v != exitInvalid {
			t.Fatalf("%s violation → %d, want invalid", name, v)
		}
	}
	noMigration := valid
	noMigration.Run.MigrationWanted = true
	noMigration.Run.Migrations = []migration{{Name: "B1", Note: "restore failed"}}
	if v := verdict(&noMigration); v != exitInconclusive {
		t.Fatalf("no migration made → %d, want inconclusive", v)
	}
	noMigration.Run.Migrations[0].Restored = true
	if v := verdict(&noMigration); v != exitValid {
		t.Fatalf("migration made → %d, want valid", v)
	}
	dup := valid
	dup.Valid, dup.Uniqueness.Valid = false, false
	dup.Run.Interrupted = true
	if v := verdict(&dup); v != exitInvalid {
		t.Fatalf("duplicate in an interrupted run → %d, want invalid", v)
	}
	unread := valid
	unread.Valid, unread.Lost.Checked = false, false
	if v := verdict(&unread); v != exitInconclusive {
		t.Fatalf("no final read → %d, want inconclusive", v)
	}
}

func TestTimingArgsBecomeEnv(t *testing.T) {
	c := &config{Faults: "skip-verify", LeaseReads: true, LeaseDuration: 4 * time.Second}
	args := c.timingArgs()
	if !slices.Contains(args, "--unsafe-fault") {
		t.Fatalf("args %v", args)
	}
	env := flagsEnv(args)
	for _, want := range []string{"TICKETD_UNSAFE_FAULT=skip-verify", "TICKETD_LEASE_READS=true", "TICKETD_LEASE_DURATION=4s",
		"TICKETD_ELECTION_TIMEOUT=0s", "TICKETD_RAFT_LOG_LEVEL=info"} {
		if !slices.Contains(env, want) {
			t.Errorf("env %v lacks %s", env, want)
		}
	}
	if len(env) != (len(args)-1)/2+1 { // --lease-reads=true is one argument, every other flag two
		t.Errorf("%d variables from %d arguments: %v", len(env), len(args), env)
	}
}

func TestTimingArgs_LeaseFlagsOnlyWithLeaseReads(t *testing.T) {
	on := &config{LeaseReads: true}
	args := strings.Join(on.timingArgs(), " ")
	if !strings.Contains(args, "--lease-reads=true --lease-duration 2s") {
		t.Errorf("leases on, default duration: %s", args)
	}
	on.LeaseDuration = 4 * time.Second
	if args := strings.Join(on.timingArgs(), " "); !strings.Contains(args, "--lease-duration 4s") {
		t.Errorf("--lease-duration 4s: %s", args)
	}
	// An older release knows neither flag; leases off passes neither.
	for name, args := range map[string][]string{"legacy": on.legacyTimingArgs(), "off": (&config{LeaseDuration: time.Second}).timingArgs()} {
		if strings.Contains(strings.Join(args, " "), "--lease-") {
			t.Errorf("%s: %v", name, args)
		}
	}
}

func TestLeasePauseFor_StraddlesTheLeaseEnd(t *testing.T) {
	for _, d := range []time.Duration{0, time.Second, 4 * time.Second} {
		cfg := &config{LeaseDuration: d, Election: 300 * time.Millisecond}
		m := newNemesis(cfg, nil, nil, nil, 1, t.Logf)
		lo, hi := cfg.leaseDuration()/2, cfg.leaseDuration()+4*cfg.Election
		var below, above bool
		for range 1000 {
			p := m.leasePauseFor()
			if p < lo || p > hi {
				t.Fatalf("D %v: pause %v outside [%v, %v]", d, p, lo, hi)
			}
			below = below || p < cfg.leaseDuration()
			above = above || p > cfg.leaseDuration()+cfg.Election
		}
		if !below || !above {
			t.Errorf("D %v: pauses never below the lease (%v) or never past it by an election (%v)", d, below, above)
		}
	}
}

func TestDialGuards(t *testing.T) {
	f := &fabric{}
	for _, addr := range []string{"127.0.0.1:8080", "10.0.0.1:8080", "example.com:80", "10.231.770.1:80"} {
		if _, err := f.dial(t.Context(), "tcp", addr); err == nil {
			t.Errorf("fabric dialed %s", addr)
		}
	}
	for _, addr := range []string{"10.231.77.11:8080", "192.168.1.1:80", "[::2]:80"} {
		if _, err := loopbackDial(t.Context(), "tcp", addr); err == nil || !strings.Contains(err.Error(), "refusing") {
			t.Errorf("loopback mode dialed %s: %v", addr, err)
		}
	}
	b := &dockerBackend{known: map[string]bool{"172.30.0.2": true}}
	if _, err := b.dial(t.Context(), "tcp", "172.30.0.3:8080"); err == nil || !strings.Contains(err.Error(), "refusing") {
		t.Errorf("docker mode dialed an unknown container: %v", err)
	}
}

func TestRecorderWritesALoadableHistory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	r, err := newRecorder(path)
	if err != nil {
		t.Fatal(err)
	}
	o := r.invoke(checker.Op{Worker: 3, F: checker.FReserve, Node: "n1", Seq: "s", Count: 2})
	o.Outcome, o.First, o.Last = checker.OK, 1, 2
	r.done(o)
	r.nemesis(checker.Nemesis{Kind: "kill-leader", Start: 1, Healed: 2})
	h, err := r.close(checker.Meta{WorkloadEnd: 99})
	if err != nil || len(h.Ops) != 1 {
		t.Fatalf("%v %+v", err, h)
	}
	back, err := checker.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Ops) != 1 || back.Ops[0].Last != 2 || back.Ops[0].Complete < back.Ops[0].Invoke ||
		len(back.Nemeses) != 1 || back.Meta.WorkloadEnd != 99 {
		t.Fatalf("loaded %+v", back)
	}
}

func TestCountSnapshots(t *testing.T) {
	dir := t.TempDir()
	log := "x snapshot complete up to y\nInstalled remote snapshot\nsnapshot complete up to\ninstalling snapshot on peer\n"
	if err := os.WriteFile(filepath.Join(dir, "n1.run1.log"), []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	got := countSnapshots(dir)
	if got["taken"] != 2 || got["installed"] != 1 || got["sent"] != 1 {
		t.Fatalf("got %v", got)
	}
}

func TestValidateFaultsAndNewWorkloads(t *testing.T) {
	base := config{Nodes: 3, TimeLimit: time.Second, FaultMin: time.Second, FaultMax: time.Second, Schedule: "cycle", Net: "auto",
		RawWorkers: 1, OpTimeout: time.Second, SnowflakeWorkers: 2, SnowflakeRate: 200, LeaseWorkers: 2, LeaseHold: 100 * time.Millisecond,
		Migration: true, MigrationAdvance: 1e12, MigrationNodes: 3, MigrationPhase: time.Second}
	for _, f := range []string{"restore-skip-empty-check", "reuse-lease-tokens", "skip-acquire-idempotency", "keep-blocks,skip-acquire-idempotency", "lease-wall-clock-expiry",
		"lease-forget-promise", "lease-serve-past-expiry", "lease-kept-across-transfer", "lease-clock-drift"} {
		c := base
		c.Faults = f
		if err := c.validate(); err != nil {
			t.Errorf("--fault %s: %v", f, err)
		}
	}
	for name, mod := range map[string]func(*config){
		"unknown fault":   func(c *config) { c.Faults = "no-such-fault" },
		"negative leases": func(c *config) { c.LeaseWorkers = -1 },
		"rate too low":    func(c *config) { c.SnowflakeRate = 1 },
		"advance 0":       func(c *config) { c.MigrationAdvance = 0 },
		"hold too long":   func(c *config) { c.LeaseHold = 3 * time.Second },
		"hold too short":  func(c *config) { c.LeaseHold = 20 * time.Millisecond },
		"many: negative":  func(c *config) { c.ManySeqs = -1 },
		"many: too many":  func(c *config) { c.ManySeqs = 10_001 },
		"many: no seqs":   func(c *config) { c.ManySeqs, c.ManyWorkers = 0, 4 },
		"lease too long":  func(c *config) { c.LeaseDuration = 11 * time.Second },
		"lease negative":  func(c *config) { c.LeaseDuration = -time.Second },
	} {
		c := base
		mod(&c)
		if c.validate() == nil {
			t.Errorf("%s accepted", name)
		}
	}
}

func TestManyShapes(t *testing.T) {
	// The three shapes in turn; blocks capped at 1,024 and 64 IDs (a span
	// divisor of 1024, at least 64: the server's defaults) for the bounded
	// ones.
	want := []manyShape{{0, 1000}, {1 << 20, 1000}, {2048, 100}}
	for k := 0; k < 6; k++ {
		if got := manyShapeOf(k); got != want[k%3] {
			t.Errorf("sequence %d: %+v, want %+v", k, got, want[k%3])
		}
	}
	if manySeq(7) != "jep-many-007" || !strings.HasPrefix(manySeq(299), "jep-many-") {
		t.Fatalf("names %s %s", manySeq(7), manySeq(299))
	}
}

func TestManySeqNamesEveryGeneration(t *testing.T) {
	w := &workload{many: make([]manySequence, 3)}
	w.many[1].gen.Store(2)
	got := w.manySeqNames()
	want := []string{"jep-many-000", "jep-many-001", "jep-many-001-g1", "jep-many-001-g2", "jep-many-002"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestReport_ManySequencesSummarized(t *testing.T) {
	var ops []checker.Op
	for k := 0; k < 300; k++ {
		ops = append(ops, checker.Op{Type: "op", Index: int64(k), Worker: k % 6, F: checker.FReserve, Seq: manySeq(k), Count: 10,
			Invoke: int64(k), Complete: int64(k) + 10, Outcome: checker.OK, First: 1, Last: 10, Workload: manyWorkload})
		ops = append(ops, checker.Op{Type: "op", Index: int64(1000 + k), Worker: 10_000, F: checker.FRead, Seq: manySeq(k),
			Invoke: 1 << 40, Complete: 1<<40 + 1, Outcome: checker.OK, Next: 11, Final: true, Workload: manyWorkload})
	}
	h := &checker.History{Ops: ops}
	r := runResults{Results: checker.Analyze(h, checker.Options{})}
	r.Run.ManySequences = 300
	if !r.Valid {
		t.Fatalf("invalid: %v", r.InvalidReasons)
	}
	s := manySummary(&r)
	for _, want := range []string{"300 sequences created at setup and 0 more", "300 operated on", "reservations: 300 ok"} {
		if !strings.Contains(s, want) {
			t.Errorf("summary %q lacks %q", s, want)
		}
	}
	page := renderReport(&r, h)
	for _, want := range []string{"Many-sequences workload", "jep-many-000..jep-many-299 (300 sequences)", "and 288 more in results.json", "reserve/many"} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(page, "jep-many-150,") {
		t.Error("report lists every sequence")
	}
}
