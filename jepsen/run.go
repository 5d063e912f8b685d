//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/jepsen/checker"
)

// runInfo describes a run in results.json.
type runInfo struct {
	Mode            string            `json:"mode"`
	Backend         string            `json:"backend"`
	Nodes           int               `json:"nodes"`
	Seed            uint64            `json:"seed"`
	TimeLimit       string            `json:"time_limit"`
	Schedule        string            `json:"schedule"`
	Nemeses         []string          `json:"nemeses"`
	Skipped         map[string]string `json:"skipped_nemeses,omitempty"`
	NotRun          []string          `json:"kinds_not_run,omitempty"`
	Faults          string            `json:"faults,omitempty"`
	FaultsBuild     bool              `json:"faults_build,omitempty"` // a planted bug, or the clock nemesis's clock control
	Started         time.Time         `json:"started"`
	WorkloadSeconds float64           `json:"workload_seconds"`
	TotalSeconds    float64           `json:"total_seconds"`
	NodeFlags       []string          `json:"node_flags"`
	Workers         map[string]int    `json:"workers"`
	// ManySequences is how many sequences the many-sequences workload
	// created at setup, ManyReplacements how many more it created to
	// replace used-up ones.
	ManySequences    int `json:"many_sequences,omitempty"`
	ManyReplacements int `json:"many_replacements,omitempty"`
	// BlockEntries: how the blocks the audit retained were committed,
	// alone or grouped with other sequences' (read from the leader at the
	// end).
	BlockEntries *blockEntries `json:"block_entries,omitempty"`
	Interrupted  bool          `json:"interrupted,omitempty"`
	FinalHeal    string        `json:"final_heal"`
	Notes        []string      `json:"notes,omitempty"`
	// StoppedOnViolation: the online check saw a violation and ended the
	// run early; DetectedAtMs is when (since the start).
	// Snapshots counts, from the nodes' logs, the Raft snapshots taken and
	// installed from a leader during the run.
	Snapshots          map[string]int `json:"snapshots,omitempty"`
	StoppedOnViolation bool           `json:"stopped_on_violation,omitempty"`
	DetectedAtMs       float64        `json:"detected_at_ms,omitempty"`
	Detection          string         `json:"detection,omitempty"`
	// Migrations: what each migration (backup, restore into a new
	// cluster) did.
	Migrations []migration `json:"migrations,omitempty"`
	// MigrationWanted: --migration was on and the run neither stopped on
	// a violation nor was interrupted, so a migration had to be made.
	MigrationWanted bool `json:"migration_wanted,omitempty"`
	// Upgrade is what an upgrade run (--upgrade) did and saw.
	Upgrade *upgradeReport `json:"upgrade,omitempty"`
	// DR is what a disaster-recovery run (--dr) did and saw.
	DR *drReport `json:"dr,omitempty"`
}

type runResults struct {
	checker.Results
	Run runInfo `json:"run"`
}

// logger prints progress lines with the time since the start and keeps
// them in run.log.
type logger struct {
	t0 time.Time
	mu sync.Mutex
	w  io.Writer
}

func (l *logger) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, "[%7.1fs] %s\n", time.Since(l.t0).Seconds(), fmt.Sprintf(format, args...))
}

func execute(ctx context.Context, cfg *config) int {
	t0 := time.Now()
	lf, err := os.Create(filepath.Join(cfg.Out, "run.log"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "jepsen:", err)
		return exitInconclusive
	}
	defer lf.Close()
	lg := &logger{t0: t0, w: io.MultiWriter(os.Stdout, lf)}
	logf := lg.logf
	logf("run folder %s, seed %d", cfg.Out, cfg.Seed)

	var b backend
	if cfg.Docker {
		b, err = newDockerBackend(cfg)
	} else {
		b, err = newProcBackend(cfg)
	}
	if err != nil {
		logf("setup: %v", err)
		return exitInconclusive
	}
	defer b.teardown()
	logf("backend: %s", b.name())
	logf("building %s", map[bool]string{true: "the image", false: "the binary"}[cfg.Docker])
	if err := b.prepare(ctx); err != nil {
		logf("build: %v", err)
		return exitInconclusive
	}
	var upRep *upgradeReport
	if cfg.Upgrade {
		if upRep, err = prepareUpgrade(ctx, cfg, b, t0, logf); err != nil {
			logf("upgrade: %v", err)
			return exitInconclusive
		}
		logf("upgrade: the nodes start on %s (commit %s) and are replaced by %s", upRep.OldBinary, upRep.From, upRep.NewBinary)
	}

	tr := &http.Transport{
		DialContext:         b.dial,
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true,
	}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	c := newCluster(b, cfg, hc, logf)
	// On every way out: stop the nodes, keep their logs, then (the
	// earlier defer) tear down what the backend made.
	logsDone := false
	defer func() {
		if !logsDone {
			b.collectLogs(filepath.Join(cfg.Out, "logs"), c.All())
		}
	}()
	defer c.stopAll()
	logf("starting %d nodes", cfg.Nodes)
	if err := c.boot(ctx); err != nil {
		logf("boot: %v", err)
		return exitInconclusive
	}
	rec, err := newRecorder(filepath.Join(cfg.Out, "history.jsonl"))
	if err != nil {
		logf("%v", err)
		return exitInconclusive
	}
	w := newWorkload(cfg, c, rec, hc, logf)
	if err := w.setup(ctx); err != nil {
		logf("setup: %v", err)
		return exitInconclusive
	}
	nf := newNetFaults(b, cfg.Seed)
	nem := newNemesis(cfg, c, nf, rec, cfg.Seed, logf)
	var up *upgrader
	if upRep != nil {
		up = newUpgrader(cfg, c, w, nem, rec, upRep, logf)
		if err := up.setupUpgrade(ctx); err != nil {
			logf("setup: %v", err)
			return exitInconclusive
		}
	}
	var drRun *dr
	if cfg.DR {
		if drRun, err = setupDR(ctx, cfg, c, w, nem, rec, logf); err != nil {
			logf("setup: %v", err)
			return exitInconclusive
		}
	}
	kinds := nem.applicable()
	for k, why := range nem.skipped {
		logf("nemesis %s skipped: %s", k, why)
	}
	var clockNote string
	if needClockControl(kinds) {
		// Before anything runs: a node without the clock control would
		// make the clock nemesis a silent no-op.
		note, err := c.checkClockControl(ctx)
		if err != nil {
			logf("%v", err)
			return exitInconclusive
		}
		nem.clocks, clockNote = true, note
		logf("%s", note)
	}
	info := runInfo{
		Mode: map[bool]string{true: "docker", false: "process"}[cfg.Docker], Backend: b.name(), Nodes: cfg.Nodes,
		Seed: cfg.Seed, TimeLimit: cfg.TimeLimit.String(), Schedule: cfg.Schedule, Nemeses: kinds, Skipped: nem.skipped,
		Faults: cfg.Faults, FaultsBuild: cfg.faultsBuild(), Started: t0.UTC(), NodeFlags: cfg.timingArgs(),
		ManySequences: len(w.many),
		Workers: map[string]int{"raw": cfg.RawWorkers, "small": cfg.SmallWorkers, "readers": cfg.Readers, "read_after_write": cfg.RWWorkers, "raise": cfg.RaiseWorkers,
			"sdk": cfg.SDKWorkers, "many": cfg.ManyWorkers, "snowflake": cfg.SnowflakeWorkers, "lease": cfg.LeaseWorkers,
			"server_snowflake": cfg.ServerSnowflakeWorkers},
	}

	// The workload and the nemeses run until the time limit, the cycles
	// are done, a violation is seen (with --stop-on-violation) or the
	// harness is interrupted.
	limit := cfg.TimeLimit
	if drRun != nil {
		limit += 90 * time.Second // the disaster, the promotion and the old primary's restart come on top
	}
	runCtx, cancelRun := context.WithTimeout(ctx, limit)
	defer cancelRun()
	logf("workload: %d raw, %d small-sequence, %d many-sequences (on %d sequences), %d read, %d read-after-write, %d raise, %d SDK, %d Snowflake, %d lease, %d server-made Snowflake workers; nemeses: %s",
		cfg.RawWorkers, cfg.SmallWorkers, cfg.ManyWorkers, cfg.ManySeqs, cfg.Readers, cfg.RWWorkers, cfg.RaiseWorkers, cfg.SDKWorkers, cfg.SnowflakeWorkers, cfg.LeaseWorkers, cfg.ServerSnowflakeWorkers, strings.Join(kinds, " "))
	w.start(runCtx, cfg.Seed)
	// The audit is read as the run goes (audittail.go), until the final
	// reads are done, for the raises whose outcome is unknown.
	var tail *auditTail
	tailCtx, cancelTail := context.WithCancel(ctx)
	defer cancelTail()
	var tailWG sync.WaitGroup
	if cfg.RaiseWorkers > 0 || cfg.ServerSnowflakeWorkers > 0 {
		leaseNS := map[string]api.Namespace{}
		every := 2 * time.Second
		if cfg.ServerSnowflakeWorkers > 0 {
			// Read often: a server-made ID is put in its tenure by the
			// grants read by then (checker.CheckNodeSnowflake).
			leaseNS[nodesfNamespace], every = w.nodesfLayout, time.Second
		}
		tail = newAuditTail(c, rec.now, leaseNS)
		tailWG.Add(1)
		go func() {
			defer tailWG.Done()
			tail.run(tailCtx, every)
		}()
	}
	for _, n := range []string{w.sdkNote, w.sfNote, clockNote} {
		if n != "" {
			info.Notes = append(info.Notes, n)
		}
	}
	// The migration: mid-run with --migration-at (and again every
	// --migration-every), else once after the final heal. It has its own context: the end of the time limit does
	// not cut it short, an interruption or a violation does.
	var migs []migration
	var migMu sync.Mutex
	var migWG sync.WaitGroup
	migCtx, cancelMig := context.WithCancel(ctx)
	defer cancelMig()
	if cfg.Migration && cfg.MigrationAt > 0 {
		migWG.Add(1)
		go func() {
			defer migWG.Done()
			wait := cfg.MigrationAt
			for k := 1; k <= maxMigrations && sleepCtx(runCtx, wait); k++ {
				m := w.migrate(migCtx, b, k, cfg.Seed)
				migMu.Lock()
				migs = append(migs, m)
				migMu.Unlock()
				if cfg.MigrationEvery <= 0 {
					return
				}
				wait = cfg.MigrationEvery
			}
		}()
	}
	var detMu sync.Mutex
	if cfg.StopOnViolation {
		go func() {
			every := 3 * time.Second
			if drRun != nil {
				every = time.Second // the time to catch is measured from the promotion
			}
			for sleepCtx(runCtx, every) {
				ops := rec.snapshot()
				why := checker.QuickCheck(ops)
				if why == "" && tail != nil {
					if u := checker.CheckUnknownRaises(ops, tail.snapshot()); !u.Valid {
						why = fmt.Sprintf("below a raise with an unknown outcome: %s (seq %s)", u.Examples[0].Detail, u.Examples[0].Seq)
					}
				}
				if why == "" && cfg.ServerSnowflakeWorkers > 0 {
					var a *checker.Audit
					if tail != nil {
						a = tail.snapshot()
					}
					if u := checker.CheckNodeSnowflake(ops, a); !u.Valid {
						why = fmt.Sprintf("server-made snowflake: %s", u.Examples[0].Detail)
					}
				}
				if why != "" {
					detMu.Lock()
					info.StoppedOnViolation, info.DetectedAtMs, info.Detection = true, float64(time.Since(rec.t0).Milliseconds()), why
					detMu.Unlock()
					logf("VIOLATION: %s", why)
					cancelRun()
					return
				}
			}
		}()
	}
	go func() {
		for sleepCtx(runCtx, 30*time.Second) {
			logf("progress: %d operations", rec.count())
		}
	}()
	if up != nil {
		up.run(runCtx, kinds) // returns once every node runs the new binary and its features were used
		if e, ok := up.firstExit(); ok {
			// The schedule stopped at it: the detection a planted fault's
			// run reports (scripts/jepsen-faults.sh).
			detMu.Lock()
			info.StoppedOnViolation, info.DetectedAtMs = true, e.AtMs
			info.Detection = fmt.Sprintf("%s (%s) stopped by itself: %s", e.Node, e.Binary, strings.Join(e.Last, " | "))
			detMu.Unlock()
		}
	} else if drRun != nil {
		drRun.run(runCtx, kinds) // the primary phase, the disaster, the promoted phase, the old primary's restart
	} else {
		nem.loop(runCtx, kinds) // returns at the time limit, or once the cycles are done
	}
	cancelRun()
	interrupted := ctx.Err() != nil
	info.Interrupted = interrupted

	// Final heal and recovery, then the last reads.
	fctx, cancelF := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancelF()
	detMu.Lock()
	stopped := info.StoppedOnViolation
	detMu.Unlock()
	if interrupted || stopped {
		cancelMig()
	}
	if interrupted {
		logf("interrupted: stopping")
		migWG.Wait()
		w.halt()
	} else {
		logf("final heal")
		// After a DR run's disaster the promoted node is the cluster:
		// healAll would join fresh nodes to it.
		if drRun == nil {
			if err := nem.healAll(fctx); err != nil {
				logf("final heal: %v", err)
			}
		}
		recovery := 60 * time.Second
		if up != nil && up.stopped() {
			recovery = 5 * time.Second // it stops again on the same entry
		}
		if err := c.waitHealthy(fctx, recovery); err != nil {
			info.FinalHeal = err.Error()
			logf("final recovery: %v", err)
		} else {
			info.FinalHeal = "healthy"
		}
		migWG.Wait()
		if cfg.Migration && len(migs) == 0 && !stopped {
			migs = append(migs, w.migrate(fctx, b, 1, cfg.Seed))
		}
		sleepCtx(fctx, cfg.FinalWorkload)
		w.halt()
	}
	info.ManyReplacements = len(w.manySeqNames()) - len(w.many)
	info.Migrations = migs
	info.MigrationWanted = cfg.Migration && !cfg.Docker && !interrupted && !stopped
	for _, m := range migs {
		logf("migration %s: backup %d bytes, restored %v, second restore: %s %s", m.Name, m.BackupSize, m.Restored, orDash(m.SecondRestore), m.Note)
		if m.Note != "" {
			info.Notes = append(info.Notes, "migration "+m.Name+": "+m.Note)
		}
	}
	workloadEnd := rec.now()
	w.closeSDK()
	if !interrupted {
		logf("final reads")
		if unread := w.finalReads(fctx, 10_000); len(unread) > 0 {
			logf("final reads failed for %v", unread)
		}
		if tail != nil {
			cancelTail()
			tailWG.Wait()
			if err := tail.poll(fctx); err != nil {
				logf("audit, last pass: %v", err)
			}
		}
		if be, err := countBlockEntries(fctx, c); err != nil {
			logf("audit of block entries: %v", err)
		} else {
			info.BlockEntries = &be
		}
		if up != nil {
			up.finish(fctx)
		}
	}
	if tail != nil {
		cancelTail()
		tailWG.Wait()
		rec.audit(tail.snapshot())
	}
	h, err := rec.close(checker.Meta{WorkloadEnd: workloadEnd, Started: t0.UTC(), Info: map[string]string{"seed": fmt.Sprint(cfg.Seed)}})
	if err != nil {
		logf("history: %v", err)
	}
	c.stopAll()
	b.collectLogs(filepath.Join(cfg.Out, "logs"), c.All())
	logsDone = true
	info.Snapshots = countSnapshots(filepath.Join(cfg.Out, "logs"))
	if up != nil {
		up.scanLogs(filepath.Join(cfg.Out, "logs"))
		if interrupted && upRep.Incomplete == "" {
			upRep.Incomplete = "interrupted"
		}
		info.Upgrade = upRep
	}
	info.WorkloadSeconds = float64(workloadEnd) / 1e9

	ran := map[string]bool{}
	for _, n := range h.Nemeses {
		ran[n.Kind] = true
	}
	for _, k := range kinds {
		if !ran[k] {
			info.NotRun = append(info.NotRun, k)
		}
	}
	logf("checking %d operations", len(h.Ops))
	res := checker.Analyze(h, checker.Options{Porcupine: checker.PorcupineOptions{
		Window: cfg.PorcupineWindow, VisDir: cfg.Out, MaxVis: 3, Timeout: 10 * time.Second, Budget: 5 * time.Minute,
	}})
	if drRun != nil {
		info.DR = drRun.finish(&res, &info)
	}
	info.TotalSeconds = time.Since(t0).Seconds()
	out := runResults{Results: res, Run: info}
	code := verdict(&out)
	if err := writeOutputs(cfg.Out, &out, h); err != nil {
		logf("writing results: %v", err)
	}
	summarize(logf, &out)
	if code == exitValid && cfg.RequireAllKinds && len(info.NotRun) > 0 {
		logf("kinds that never ran: %v", info.NotRun)
		return exitKindsMissing
	}
	return code
}

// verdict is the exit code: a broken promise is invalid whatever else
// happened; otherwise an interrupted run, or one whose lost check could not
// be made, is inconclusive.
func verdict(r *runResults) int {
	broken := !r.WellFormed.Valid || !r.Uniqueness.Valid || r.Lost.LostRanges > 0 || !r.Linearizable.Valid ||
		!r.Reads.Valid || !r.Raises.Valid || !r.UnknownRaises.Valid || (r.Porcupine != nil && !r.Porcupine.Valid) ||
		!r.Leases.Valid || !r.Snowflake.Valid || !r.NodeSnowflake.Valid || !r.Migration.Valid ||
		(r.Run.Upgrade != nil && len(r.Run.Upgrade.Problems) > 0) || (r.Run.DR != nil && len(r.Run.DR.Problems) > 0)
	switch {
	case broken:
		return exitInvalid
	case r.Run.Interrupted, !r.Lost.Checked, !r.Valid, r.Run.MigrationWanted && !migrated(r.Run.Migrations),
		r.Run.Upgrade != nil && (r.Run.Upgrade.Incomplete != "" || !r.Run.Upgrade.ScheduleEnded),
		r.Run.DR != nil && (r.Run.DR.Incomplete != "" || r.Run.DR.After.Ranges == 0):
		return exitInconclusive
	}
	return exitValid
}

// migrated reports whether some migration got as far as a restore.
// maxMigrations bounds the migrations of one run: each restored cluster
// takes its own node slots (slotBase 20+8(k-1)).
const maxMigrations = 20

func migrated(ms []migration) bool {
	for _, m := range ms {
		if m.Restored {
			return true
		}
	}
	return false
}

func writeOutputs(dir string, r *runResults, h *checker.History) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "report.html"), []byte(renderReport(r, h)), 0o644)
}

func summarize(logf func(string, ...any), r *runResults) {
	var kinds []string
	for k := range r.Availability.ByKind {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	logf("operations %d, IDs issued %d, duplicates %d, lost %d, linearizability violations %d, stale reads %d",
		r.Ops, r.IDsIssued, r.Uniqueness.DuplicatedIDs, r.Lost.LostRanges, r.Linearizable.Violations, r.Reads.Stale+r.Reads.NonMonotonic)
	for _, f := range sortedMapKeys(r.Counts) {
		m := r.Counts[f]
		logf("  %-14s ok %d, fail %d, unknown %d", f, m[checker.OK], m[checker.Fail], m[checker.Unknown])
	}
	if s := manySummary(r); s != "" {
		logf("many sequences: %s", s)
	}
	if b := r.Run.BlockEntries; b != nil {
		logf("block entries (audit): %s", b)
	}
	l, sf, m := r.Leases, r.Snowflake, r.Migration
	logf("snowflake: %d IDs from %d generators, %d tenures, %d leases seen; duplicates %d, not increasing %d, overlapping tenures %d",
		sf.IDs, sf.Generators, sf.Tenures, sf.Leases, sf.Duplicates, sf.NonIncreasing, sf.Overlaps)
	if ns := r.NodeSnowflake; ns.IDs > 0 || len(ns.Requests) > 0 {
		logf("server-made snowflake: %s", ns.Summary())
	}
	logf("leases: %d grants (%d ok answers, %d resends), %d releases; not idempotent %d, token regressions %d, granted while held %d",
		l.Grants, l.Acquires, l.Resends, l.Releases, l.NotIdempotent, l.TokenRegressions, l.DoubleGrants)
	logf("migration: %d backups, %d restores accepted of %d attempts; restored clusters: %d ranges (%d IDs), %d leases; IDs on both %d, duplicates %d, not lifted %d, second restores accepted %d, tokens not above %d",
		m.Migrations, m.Restores, len(m.Attempts), m.Ranges, m.IDs, m.Leases, m.CrossDuplicates, m.Duplicates, m.NotLifted, m.SecondAccepted, m.TokensNotAbove)
	if r.Run.MigrationWanted && !migrated(r.Run.Migrations) {
		logf("INCONCLUSIVE: no migration was made (see the notes)")
	}
	logf("longest stretch without a successful reservation: %.0f ms", r.Availability.LongestGapMs)
	if s := r.Run.Snapshots; s != nil {
		logf("raft snapshots: %d taken, %d sent, %d installed", s["taken"], s["sent"], s["installed"])
	}
	for _, k := range kinds {
		a := r.Availability.ByKind[k]
		logf("  %-24s runs %d, max gap %.0f ms, max recovery after heal %.0f ms", k, a.Runs, a.MaxGapMs, a.MaxRecoveryMs)
	}
	if u := r.UnknownRaises; u.Unknown > 0 || !u.Valid {
		logf("unknown raises: %d (%d applied per the audit); %d (raise, first read above it) pairs checked, %d unchecked; %d reservations held to %d pinned raises, %d below",
			u.Unknown, u.Applied, u.Checked, u.Unchecked, u.Held, u.Pinned, u.Below)
	}
	if q, ok := r.Latency[checker.FReserve][checker.OK]; ok {
		logf("reserve ok latency: p50 %.2f ms, p99 %.2f ms, max %.0f ms", q.P50, q.P99, q.Max)
	}
	if r.Porcupine != nil {
		logf("porcupine: %d windows, %d ok, %d illegal, %d unknown", r.Porcupine.Windows, r.Porcupine.Ok, r.Porcupine.Illegal, r.Porcupine.Unknown)
	}
	if u := r.Run.Upgrade; u != nil {
		for _, line := range u.summary() {
			logf("%s", line)
		}
	}
	if d := r.Run.DR; d != nil {
		for _, line := range d.summary() {
			logf("%s", line)
		}
	}
	reasons := r.InvalidReasons
	if u := r.Run.Upgrade; u != nil && len(u.Problems) > 0 {
		reasons = append(slices.Clone(reasons), "upgrade: "+strings.Join(u.Problems, "; "))
	}
	if d := r.Run.DR; d != nil && len(d.Problems) > 0 {
		reasons = append(slices.Clone(reasons), "dr: "+strings.Join(d.Problems, "; "))
	}
	if len(reasons) == 0 && r.Valid {
		logf("VALID")
	} else {
		logf("INVALID: %s", strings.Join(reasons, "; "))
	}
}

// recheck re-runs the checkers on a run folder's history.
func recheck(dir string, window int) int {
	h, err := checker.Load(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "jepsen:", err)
		return exitInconclusive
	}
	var old runResults
	if b, err := os.ReadFile(filepath.Join(dir, "results.json")); err == nil {
		_ = json.Unmarshal(b, &old)
	}
	res := checker.Analyze(h, checker.Options{Porcupine: checker.PorcupineOptions{Window: window, VisDir: dir, MaxVis: 3}})
	out := runResults{Results: res, Run: old.Run}
	if err := writeOutputs(dir, &out, h); err != nil {
		fmt.Fprintln(os.Stderr, "jepsen:", err)
	}
	lg := &logger{t0: time.Now(), w: os.Stdout}
	summarize(lg.logf, &out)
	return verdict(&out)
}

// countSnapshots counts Raft's own log lines for snapshots taken and
// snapshots installed from a leader, over every node log.
func countSnapshots(dir string) map[string]int {
	out := map[string]int{"taken": 0, "installed": 0, "sent": 0}
	files, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		out["taken"] += strings.Count(string(b), "snapshot complete up to")
		out["installed"] += strings.Count(string(b), "Installed remote snapshot")
		out["sent"] += strings.Count(string(b), "installing snapshot on")
	}
	return out
}
