//go:build linux

// Command jepsen is ticketd's fault-injection suite: it runs a real cluster
// (local processes of the built binary, or the containers of the compose
// file with --docker), drives it with clients that record every operation,
// injects faults on a schedule (crashes, pauses, partitions, slow and lossy
// links, membership changes, wiped disks), heals, and checks the history:
// no ID handed out twice, no acknowledged range lost, reservations and reads
// linearizable; no Snowflake ID twice and one holder per worker id at a
// time; lease acquires idempotent per request id and fencing tokens only
// growing; and, for a backup restored into a fresh cluster under load, no
// ID issued by both clusters, a second restore refused, tokens still
// growing. See jepsen/README.md.
//
//	go run ./jepsen --nodes 5 --time-limit 5m --nemesis all
//	go run ./jepsen --docker --nodes 5 --time-limit 30m
//	go run ./jepsen --fault serve-uncommitted --nemesis kill-leader --stop-on-violation
//	go run ./jepsen --check jepsen-results/20250101T000000   # re-check a history
//
// Exit status: 0 valid, 1 invalid (a promise was broken), 2 the run could
// not be made or its result is inconclusive, 3 (with --require-all-kinds) a
// nemesis kind never ran.
package main

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/ticketd/ticketd/internal/proc"
)

const (
	exitValid        = 0
	exitInvalid      = 1
	exitInconclusive = 2
	exitKindsMissing = 3
)

// config is everything a run needs.
type config struct {
	Nodes           int
	TimeLimit       time.Duration
	Nemeses         []string
	Schedule        string
	Cycles          int
	FaultMin        time.Duration
	FaultMax        time.Duration
	Quiet           time.Duration
	RecoveryTimeout time.Duration
	Docker          bool
	Faults          string
	Seed            uint64
	Out             string
	RawWorkers      int
	SmallWorkers    int
	Readers         int
	RWWorkers       int
	// RaiseWorkers lift the main sequences' marks now and then (raises.go).
	RaiseWorkers int
	SDKWorkers   int
	// ManySeqs sequences for the many-sequences workload, and its
	// workers (many.go).
	ManySeqs    int
	ManyWorkers int
	// Snowflake generators and their rate (IDs per second each), raw
	// lease workers, and the migration (backup, restore into a new
	// cluster).
	SnowflakeWorkers int
	SnowflakeRate    float64
	SnowflakeCycle   time.Duration
	LeaseWorkers     int
	// ServerSnowflakeWorkers ask random nodes for server-made Snowflake
	// IDs of a namespace of ServerSnowflakeMaxWorkers worker ids
	// (serverflake.go).
	ServerSnowflakeWorkers    int
	ServerSnowflakeMaxWorkers int
	// ServerSnowflakeLeaseWorkers acquire and release worker ids of that
	// namespace over the raw API, so that an id a node let go is taken
	// soon after it rests.
	ServerSnowflakeLeaseWorkers int
	// LeaseHold is the longest a raw lease worker holds a lease before it
	// releases it (each hold is drawn from 20 ms up to it).
	LeaseHold time.Duration
	// ClockSteps are the sizes the clock nemesis draws its steps from.
	ClockSteps       []time.Duration
	Migration        bool
	MigrationAt      time.Duration
	MigrationEvery   time.Duration
	MigrationAdvance int64
	MigrationNodes   int
	MigrationPhase   time.Duration
	OpTimeout        time.Duration
	Rate             float64
	StopOnViolation  bool
	Net              string
	Bin              string
	Image            string
	KeepData         bool
	RequireAllKinds  bool
	PorcupineWindow  int
	FinalWorkload    time.Duration
	// Upgrade: start the nodes on an older release and replace them one
	// at a time by the binary under test (upgrade.go); Rollback: put two
	// replaced nodes back on the older release first; UpgradeFrom
	// overrides the commit of jepsen/upgrade-from.
	Upgrade     bool
	Rollback    bool
	UpgradeFrom string
	// DR: a disaster-recovery run (dr.go): a standby beside the primary,
	// the primary lost, the standby promoted. DRDisaster is how the
	// standby stands when the primary is lost (in-sync, out-of-sync),
	// DRAfter how long the promoted node serves, DRFault the planted bug
	// of ticketd promote (from --fault; never passed to serve), DRFence
	// whether the old primary is started again.
	DR               bool
	DRStandbyTimeout time.Duration
	DRDisaster       string
	DRAfter          time.Duration
	DRFault          string
	DRFence          bool
	DRLarge          int

	Heartbeat, Election, Lease time.Duration
	SnapThreshold, Trailing    uint64
	SnapInterval               time.Duration
	// MaxRPCsInFlight is the nodes' --raft-max-rpcs-in-flight (0: their
	// default).
	MaxRPCsInFlight int
	// LeaseReads: the nodes run with --lease-reads and --lease-duration
	// LeaseDuration (issue 44; the lease nemeses, leadlease.go, time
	// themselves by LeaseDuration either way; 0: defaultLeaseDuration).
	LeaseReads    bool
	LeaseDuration time.Duration

	root string // the repository root
	// Bearer tokens the nodes accept (authentication stays on, as in
	// production): admin for the harness's control requests, reserve for
	// the workload.
	adminToken, reserveToken string
}

// tokensEnv is TICKETD_TOKENS for the nodes.
func (c *config) tokensEnv() string {
	return "admin " + c.adminToken + ";reserve " + c.reserveToken
}

func newToken() string {
	b := make([]byte, 24)
	_, _ = crand.Read(b)
	return hex.EncodeToString(b)
}

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	fs := flag.NewFlagSet("jepsen", flag.ContinueOnError)
	cfg := config{}
	var nemeses, checkDir string
	var seed int64
	var err error
	fs.IntVar(&cfg.Nodes, "nodes", 5, "cluster size (3 or 5; any size >= 3 in process mode)")
	fs.DurationVar(&cfg.TimeLimit, "time-limit", 5*time.Minute, "how long the workload and nemeses run (setup, final heal and checks come on top)")
	fs.StringVar(&nemeses, "nemesis", "all", "comma-separated nemesis kinds and groups, \"all\" or \"none\"; -KIND leaves one out (\"all,-clock\") (kinds: "+strings.Join(kindNames(), ", ")+"; clock needs, and makes the harness build, the faults build)")
	fs.StringVar(&cfg.Schedule, "schedule", "cycle", "cycle: every selected kind once per cycle, in a random order; random: an independent random choice each time")
	fs.IntVar(&cfg.Cycles, "cycles", 0, "with --schedule cycle, end the workload after this many full cycles (0: run until --time-limit)")
	fs.DurationVar(&cfg.FaultMin, "fault-min", 2*time.Second, "shortest time a fault stays injected")
	fs.DurationVar(&cfg.FaultMax, "fault-max", 6*time.Second, "longest time a fault stays injected")
	fs.DurationVar(&cfg.Quiet, "quiet", 2*time.Second, "time without faults after each recovery")
	fs.DurationVar(&cfg.RecoveryTimeout, "recovery-timeout", 30*time.Second, "how long to wait for the cluster to be healthy after a heal")
	fs.BoolVar(&cfg.Docker, "docker", false, "run the containers of deploy/docker-compose*.yml instead of local processes")
	fs.StringVar(&cfg.Faults, "fault", "", "plant server bugs (builds with -tags ticketd_faults; passes --unsafe-fault to every node): "+strings.Join(knownFaults, ", "))
	fs.Int64Var(&seed, "seed", 0, "random seed (0: from the clock); printed and stored in results.json")
	fs.StringVar(&cfg.Out, "out", "", "run folder (default jepsen-results/<timestamp>)")
	fs.IntVar(&cfg.RawWorkers, "workers", 6, "raw HTTP reservation workers (counts 1..1000, three large sequences)")
	fs.IntVar(&cfg.SmallWorkers, "small-workers", 2, "reservation workers on small sequences (64..128-ID blocks: every request waits on a fresh block)")
	fs.IntVar(&cfg.Readers, "readers", 2, "workers reading GET /v1/sequences/{name}")
	fs.IntVar(&cfg.RWWorkers, "rw-workers", 1, "workers that reserve on a small sequence and then read it back, retrying the read every 2 ms while it fails (the first read a new leader serves)")
	fs.IntVar(&cfg.ManySeqs, "many-sequences", 300, "sequences of the many-sequences workload, created at setup (jep-many-NNN; a third unbounded, a third of 2^20 IDs, a third of 2,048 IDs that run out)")
	fs.IntVar(&cfg.ManyWorkers, "many-workers", 8, "many-sequences workers: each operation a reservation (or one in five a read) on a sequence drawn at random, through a random node, so that many sequences wait for blocks at once (group commit across sequences)")
	fs.IntVar(&cfg.RaiseWorkers, "raise-workers", 1, "workers that raise a main sequence's high-water mark every 100-300 ms (POST /v1/sequences/{name}/raise, admin), mostly to a little above the highest ID acknowledged, into the leader's block; every reservation and read invoked after a raise returned must lie above it. One raise in three is abandoned (the connection closed once the request is written), mostly aimed above the state machine's mark: every reservation invoked after a read showed such a raise applied (per the audit) must lie above it")
	fs.IntVar(&cfg.SDKWorkers, "sdk-workers", 2, "goroutines calling the SDK's Sequence.Next (two per Sequence)")
	fs.IntVar(&cfg.SnowflakeWorkers, "snowflake-workers", 2, "Snowflake generators (the SDK's client.Snowflake, each its own holder) issuing IDs of namespace jep-sf (3 s leases, 6 s recycle delay); every ID is checked")
	fs.Float64Var(&cfg.SnowflakeRate, "snowflake-rate", 200, "IDs per second each Snowflake generator issues (in bursts every 50 ms)")
	fs.DurationVar(&cfg.SnowflakeCycle, "snowflake-cycle", 15*time.Second, "each Snowflake goroutine closes its generator (releasing its worker id) and starts a new one, a new holder, this often (0: never)")
	fs.IntVar(&cfg.LeaseWorkers, "lease-workers", 2, "raw HTTP lease workers on namespace jep-lease (64 worker ids): acquire with a request id, retry unknown outcomes and sometimes resend with the same id, release")
	fs.IntVar(&cfg.ServerSnowflakeWorkers, "server-snowflake-workers", 0, "workers asking random nodes for server-made Snowflake IDs of namespace jep-nodesf (3 s leases, 6 s recycle delay), counts 1..100, over HTTP (POST /v1/namespaces/{name}/ids) and, in process mode with network namespaces, half of them over the Redis protocol (TICKETD.SNOWFLAKE; the nodes then listen on :6379); every ID is checked against the lease grants in the audit")
	fs.IntVar(&cfg.ServerSnowflakeMaxWorkers, "server-snowflake-max-workers", 8, "worker ids of namespace jep-nodesf: few, so that worker ids change hands among the nodes")
	fs.IntVar(&cfg.ServerSnowflakeLeaseWorkers, "server-snowflake-lease-workers", 0, "raw lease workers on namespace jep-nodesf (as --lease-workers): they take the worker ids the nodes let go as soon as they have rested, so that a node still serving under an ended lease meets a later holder")
	fs.DurationVar(&cfg.LeaseHold, "lease-hold", 100*time.Millisecond, "a raw lease worker holds each lease for 20 ms up to this long (at most 2s, under the 3 s TTL) before releasing it: longer holds mean more leases held at any moment")
	clockSteps := fs.String("clock-steps", joinDurations(clockSizes), "the sizes the clock nemesis steps a wall clock by, each forward or back (comma-separated durations, up to 24h)")
	fs.BoolVar(&cfg.Migration, "migration", true, "back the main cluster up under load and restore it into a fresh cluster (process mode), once per run")
	fs.DurationVar(&cfg.MigrationAt, "migration-at", 0, "when the migration starts, from the start of the workload (0: after the final heal)")
	fs.DurationVar(&cfg.MigrationEvery, "migration-every", 0, "with --migration-at: migrate again this long after each migration ended, each time into another fresh cluster (at most 20 per run; 0: once)")
	fs.Int64Var(&cfg.MigrationAdvance, "migration-advance", 1_000_000_000_000, "the restore's advance: how far every high-water mark is lifted")
	fs.IntVar(&cfg.MigrationNodes, "migration-nodes", 3, "nodes of the restored cluster")
	fs.DurationVar(&cfg.MigrationPhase, "migration-phase", 3*time.Second, "how long the restored cluster is used before, and again after, the second restore")
	fs.DurationVar(&cfg.OpTimeout, "op-timeout", 2*time.Second, "client timeout of one operation (a timeout is an unknown outcome)")
	fs.Float64Var(&cfg.Rate, "rate", 0, "cap on raw reservations + reads per second over all workers (0: closed loop, no cap)")
	fs.BoolVar(&cfg.StopOnViolation, "stop-on-violation", false, "check the history every few seconds and end the run at the first violation")
	fs.StringVar(&cfg.Net, "net", "auto", "process mode networking: netns (per-node network namespaces; needs root), loopback (no network nemeses), auto")
	fs.StringVar(&cfg.Bin, "bin", "", "use this ticketd binary instead of building one (process mode)")
	fs.StringVar(&cfg.Image, "image", "", "Docker image to use (default: build ticketd:jepsen or ticketd:jepsen-faults)")
	fs.BoolVar(&cfg.KeepData, "keep-data", false, "keep the nodes' data dirs in the run folder (process mode)")
	fs.BoolVar(&cfg.RequireAllKinds, "require-all-kinds", false, "exit 3 if a selected nemesis kind never ran")
	fs.IntVar(&cfg.PorcupineWindow, "porcupine-window", 200, "operations per porcupine window")
	fs.DurationVar(&cfg.FinalWorkload, "final-workload", 5*time.Second, "how long clients keep going after the final heal")
	fs.DurationVar(&cfg.Heartbeat, "heartbeat-timeout", 300*time.Millisecond, "nodes' --heartbeat-timeout")
	fs.DurationVar(&cfg.Election, "election-timeout", 300*time.Millisecond, "nodes' --election-timeout")
	fs.DurationVar(&cfg.Lease, "leader-lease-timeout", 150*time.Millisecond, "nodes' --leader-lease-timeout")
	fs.BoolVar(&cfg.LeaseReads, "lease-reads", false, "nodes' --lease-reads: a leader cuts ranges without a quorum probe while a majority's lease promises hold (issue 44); with it the nodes also get --lease-duration. Off, the nodes get neither flag (an older binary knows neither)")
	fs.DurationVar(&cfg.LeaseDuration, "lease-duration", defaultLeaseDuration, "nodes' --lease-duration (with --lease-reads), and what the lease nemeses (pause-leader-lease, restart-promised) time themselves by, leases on or off; at most 10s, the nodes' cap; 0: 2s")
	fs.Uint64Var(&cfg.SnapThreshold, "snapshot-threshold", 64, "nodes' --snapshot-threshold (small: snapshots and their install are always in play)")
	fs.DurationVar(&cfg.SnapInterval, "snapshot-interval", time.Second, "nodes' --snapshot-interval")
	fs.Uint64Var(&cfg.Trailing, "trailing-logs", 32, "nodes' --trailing-logs")
	fs.IntVar(&cfg.MaxRPCsInFlight, "raft-max-rpcs-in-flight", 0, "nodes' --raft-max-rpcs-in-flight (0: the nodes' default; 2 or more pipelines replication)")
	fs.BoolVar(&cfg.Upgrade, "upgrade", false, "start the nodes on the older release named in jepsen/upgrade-from and replace them one at a time (the leader first, each under a nemesis) by the binary under test; then the cluster's feature level must rise and every feature that needs it work (process mode; no migration; nemeses "+defaultUpgradeKinds+" unless --nemesis names others)")
	fs.BoolVar(&cfg.Rollback, "rollback", false, "with --upgrade: after three nodes are replaced, put two of them back on the older release (same data) before the level rises, then replace them all")
	fs.StringVar(&cfg.UpgradeFrom, "upgrade-from", "", "with --upgrade: the commit to upgrade from (default: the one jepsen/upgrade-from names)")
	fs.BoolVar(&cfg.DR, "dr", false, "disaster recovery: a standby (serve --join --standby) follows the primary under the nemeses and its own cuts; then every primary node is SIGKILLed at once, the standby promoted (ticketd promote) and started alone, the workload goes on against it, and the old primary is started again and must be fenced (process mode with namespaces; nemeses "+defaultUpgradeKinds+" unless --nemesis names others)")
	fs.DurationVar(&cfg.DRStandbyTimeout, "dr-standby-timeout", time.Second, "with --dr: the standby's --standby-timeout")
	fs.StringVar(&cfg.DRDisaster, "dr-disaster", "in-sync", "with --dr: lose the primary while the leader records the standby in-sync; out-of-sync (cut off; promotion then needs --advance, which the harness derives from the history); paused (the standby SIGSTOPped until its leader records it out of sync, SIGCONTed after the loss: it reads what was queued for it); delayed (its link 400 ms each way, then its answers dropped until it is recorded out of sync; what was in flight arrives after the loss); joined (cut off and recorded out of sync, then a voter joins the primary; the old region comes back with that voter leading); or leases (cut off, and at once every Snowflake generator takes a new lease the standby never hears of, while the raw lease workers go on; promotion then needs --advance, after which the promoted node must grant no worker id its holders may still use). A DR run's lease namespaces have 10 s TTLs, and after the promotion a second set of Snowflake generators runs against the promoted node")
	fs.DurationVar(&cfg.DRAfter, "dr-after", 10*time.Second, "with --dr: how long the promoted node serves the workload (counted in --time-limit)")
	fs.IntVar(&cfg.DRLarge, "dr-large", 0, "with --dr-disaster out-of-sync: after the leader recorded the standby out of sync, reserve this many times the largest count a client may ask (api.MaxReserveCount, the standby's default bound) on jep-a before the primary is lost")
	fs.BoolVar(&cfg.DRFence, "dr-fence", true, "with --dr: start the old primary again after the promoted phase; it must fence itself and acknowledge nothing")
	fs.StringVar(&checkDir, "check", "", "only re-check the history.jsonl of this run folder and rewrite its results")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return exitInconclusive
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "jepsen: unexpected arguments %q\n", fs.Args())
		return exitInconclusive
	}
	if checkDir != "" {
		return recheck(checkDir, cfg.PorcupineWindow)
	}
	if cfg.ClockSteps, err = parseDurations(*clockSteps); err != nil {
		fmt.Fprintln(os.Stderr, "jepsen: --clock-steps:", err)
		return exitInconclusive
	}
	if (cfg.Upgrade || cfg.DR) && !flagSet(fs, "nemesis") {
		nemeses = defaultUpgradeKinds
	}
	kinds, err := parseKinds(nemeses)
	if err != nil {
		fmt.Fprintln(os.Stderr, "jepsen:", err)
		return exitInconclusive
	}
	cfg.Nemeses = kinds
	if cfg.Upgrade {
		if err := checkUpgradeKinds(kinds); err != nil {
			fmt.Fprintln(os.Stderr, "jepsen:", err)
			return exitInconclusive
		}
		// The migration's fresh cluster would start on the older release
		// (every new identity does in an upgrade run); it has its own runs.
		cfg.Migration = false
	}
	if cfg.DR {
		if err := checkDRKinds(kinds); err != nil {
			fmt.Fprintln(os.Stderr, "jepsen:", err)
			return exitInconclusive
		}
		cfg.drWorkload()
		cfg.Faults, cfg.DRFault = splitPromoteFault(cfg.Faults)
	}
	if err := cfg.validate(); err != nil {
		fmt.Fprintln(os.Stderr, "jepsen:", err)
		return exitInconclusive
	}
	cfg.Seed = uint64(seed)
	if cfg.Seed == 0 {
		cfg.Seed = uint64(time.Now().UnixNano())
	}
	root, err := proc.ModuleRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "jepsen:", err)
		return exitInconclusive
	}
	cfg.root = root
	cfg.adminToken, cfg.reserveToken = newToken(), newToken()
	if cfg.Out == "" {
		cfg.Out = filepath.Join(root, "jepsen-results", time.Now().Format("20060102T150405"))
	}
	// Absolute, so that nodes (data dirs) and the report never depend on
	// a working directory.
	if abs, err := filepath.Abs(cfg.Out); err == nil {
		cfg.Out = abs
	}
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "jepsen:", err)
		return exitInconclusive
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	// The first signal ends the run (heal, tear down, write what was
	// seen); a second one kills the harness at once (a later run removes
	// what it left behind).
	context.AfterFunc(ctx, stop)
	return execute(ctx, &cfg)
}

func (c *config) validate() error {
	switch {
	case c.Nodes < 3 || c.Nodes > 9:
		return fmt.Errorf("--nodes %d: want 3..9", c.Nodes)
	case c.Docker && c.Nodes != 3 && c.Nodes != 5:
		return fmt.Errorf("--docker: the compose files define 3 or 5 nodes, not %d", c.Nodes)
	case c.TimeLimit <= 0:
		return errors.New("--time-limit must be positive")
	case c.FaultMin <= 0 || c.FaultMax < c.FaultMin:
		return errors.New("want 0 < --fault-min <= --fault-max")
	case c.Schedule != "cycle" && c.Schedule != "random":
		return fmt.Errorf("--schedule %q: want cycle or random", c.Schedule)
	case c.Net != "auto" && c.Net != "netns" && c.Net != "loopback":
		return fmt.Errorf("--net %q: want auto, netns or loopback", c.Net)
	case c.RawWorkers < 1:
		return errors.New("--workers must be at least 1")
	case c.OpTimeout <= 0:
		return errors.New("--op-timeout must be positive")
	case c.ManySeqs < 0 || c.ManySeqs > 10_000 || c.ManyWorkers < 0:
		return errors.New("--many-sequences: want 0..10000; --many-workers must not be negative")
	case c.ManyWorkers > 0 && c.ManySeqs == 0:
		return errors.New("--many-workers needs --many-sequences > 0")
	case c.Rollback && !c.Upgrade, c.UpgradeFrom != "" && !c.Upgrade:
		return errors.New("--rollback and --upgrade-from go with --upgrade")
	case c.Upgrade && c.Docker:
		return errors.New("--upgrade runs in process mode only")
	case c.DR && (c.Docker || c.Upgrade):
		return errors.New("--dr runs in process mode, without --upgrade")
	case c.DR && !slices.Contains(drDisasters, c.DRDisaster):
		return fmt.Errorf("--dr-disaster %q: want one of %s", c.DRDisaster, strings.Join(drDisasters, ", "))
	case c.DR && (c.DRStandbyTimeout < 100*time.Millisecond || c.DRAfter < time.Second || c.TimeLimit < c.DRAfter+10*time.Second):
		return errors.New("--dr: want --dr-standby-timeout >= 100ms, --dr-after >= 1s and --time-limit at least 10s longer than --dr-after")
	case !c.DR && slices.ContainsFunc(strings.Split(c.Faults, ","), func(f string) bool { return slices.Contains(promoteFaults, strings.TrimSpace(f)) }):
		return fmt.Errorf("--fault %s: bugs of ticketd promote go with --dr", strings.Join(promoteFaults, " and "))
	case c.LeaseDuration < 0 || c.LeaseDuration > 10*time.Second:
		return fmt.Errorf("--lease-duration %v: want at most 10s (the nodes refuse a longer lease)", c.LeaseDuration)
	case c.Upgrade && c.Nodes < 4:
		return errors.New("--upgrade: want --nodes >= 4 (a rollback of two replaced nodes needs three replaced and one left)")
	}
	switch {
	case c.SnowflakeWorkers < 0 || c.LeaseWorkers < 0 || c.ServerSnowflakeWorkers < 0:
		return errors.New("--snowflake-workers, --lease-workers and --server-snowflake-workers must not be negative")
	case c.ServerSnowflakeLeaseWorkers > 0 && c.ServerSnowflakeWorkers <= 0:
		return errors.New("--server-snowflake-lease-workers goes with --server-snowflake-workers")
	case c.ServerSnowflakeWorkers > 0 && (c.ServerSnowflakeMaxWorkers < 1 || c.ServerSnowflakeMaxWorkers > 1024):
		return errors.New("--server-snowflake-max-workers: want 1..1024")
	case c.LeaseHold <= 20*time.Millisecond || c.LeaseHold > 2*time.Second:
		return errors.New("--lease-hold: want more than 20ms and at most 2s")
	case c.SnowflakeWorkers > 0 && (c.SnowflakeRate < 20 || c.SnowflakeRate > 100_000):
		return errors.New("--snowflake-rate: want 20..100000 IDs per second")
	case c.Migration && (c.MigrationAdvance < 1 || c.MigrationNodes < 1 || c.MigrationNodes > 5 || c.MigrationPhase <= 0):
		return errors.New("--migration: want --migration-advance >= 1, --migration-nodes 1..5, --migration-phase > 0")
	}
	for _, f := range strings.Split(c.Faults, ",") {
		if f = strings.TrimSpace(f); f != "" && !slices.Contains(knownFaults, f) {
			return fmt.Errorf("--fault %q: want one of %s", f, strings.Join(knownFaults, ", "))
		}
	}
	return nil
}

// knownFaults are the server's planted bugs (--unsafe-fault).
var knownFaults = []string{"serve-uncommitted", "skip-barrier", "skip-verify", "keep-blocks", "raise-no-cut",
	"raise-cut-by-caller", "restore-skip-empty-check", "reuse-lease-tokens", "skip-acquire-idempotency", "lease-wall-clock-expiry",
	"grouped-blocks-ignore-level", "snowflake-serve-after-lease", "snowflake-ignore-floor", "standby-trust-receipt", "promoted-refuse-recorded-only", "promote-without-advance", "promote-keeps-leases",
	"lease-forget-promise", "lease-serve-past-expiry", "lease-kept-across-transfer", "lease-clock-drift"}

// leaseDuration is --lease-duration, or its default when unset.
func (c *config) leaseDuration() time.Duration {
	if c.LeaseDuration > 0 {
		return c.LeaseDuration
	}
	return defaultLeaseDuration
}

// defaultLeaseDuration is --lease-duration's default: against the suite's
// 300 ms election timeout, 2 s leaves the lease nemeses room to pause a
// leader across the end of its lease.
const defaultLeaseDuration = 2 * time.Second

// flagSet reports whether the command line set the named flag.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// faultsBuild reports whether the nodes must run the faults build
// (-tags ticketd_faults): a bug is planted, or the clock nemesis needs the
// build's clock control (/unsafe/clock). Without --fault nothing is planted:
// the clock control is then the only difference from a production build.
func (c *config) faultsBuild() bool {
	return c.Faults != "" || c.DRFault != "" || needClockControl(c.Nemeses)
}
