//go:build linux

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/internal/proc"
	"github.com/ticketd/ticketd/jepsen/checker"
)

// The upgrade run (--upgrade, issue #31): five nodes of an older release
// (jepsen/upgrade-from) under the workload, replaced one at a time by the
// binary under test, the leader first, each replacement under a nemesis;
// with --rollback, two replaced nodes go back to the older binary (same
// data) before the level rises, and are replaced again. Then the cluster's
// feature level must rise on every node, and every feature that needs it
// must work: a raise, a namespace of worker role shard, a lease of a chosen
// worker id, grouped block entries. Before it rises, while some member runs
// the older binary, the leader (once it runs the new one) must refuse a
// raise with 409 cluster-upgrading: the gate that keeps the older nodes
// from meeting an entry they cannot read. A node that stops by itself (an
// entry of an unknown type, a snapshot it cannot read) breaks the promise;
// the usual checkers judge the history as in every other run.

// upgradeKinds are the nemeses an upgrade run may use: faults to processes
// and links. Membership changes would start fresh identities (of which
// binary?), the clock nemesis needs the faults build's control on every
// node (the older release has none), and the storage kinds add minutes.
var upgradeKinds = []string{"kill-random", "kill-leader", "pause-leader", "partition-leader", "partition-halves",
	"partition-bridge", "partition-ring", "delay-leader", "loss-leader", "kill-all", "leader-transfer", "leader-bounce"}

// defaultUpgradeKinds: kills and partitions, as issue #31 asks.
const defaultUpgradeKinds = "kill-random,kill-leader,pause-leader,partition-leader,partition-halves"

// checkUpgradeKinds refuses a nemesis an upgrade run cannot use.
func checkUpgradeKinds(kinds []string) error {
	for _, k := range kinds {
		if !slices.Contains(upgradeKinds, k) {
			return fmt.Errorf("--upgrade: nemesis %s cannot run in an upgrade run (allowed: %s)", k, strings.Join(upgradeKinds, ", "))
		}
	}
	return nil
}

// Names the upgrade run uses on the cluster: a namespace created at setup
// (by the older release) for the chosen-worker-id lease, and the shard
// namespace the gate probe and the feature check create.
const (
	upgradeLeaseNS = "jep-up-lease"
	upgradeShardNS = "jep-up-shard"
	// upgradeWorker is the worker id of the harness's own operations in
	// the history (raises of the gate probe and the feature check).
	upgradeWorker = 30_000
)

// upgradeReport is results.json's run.upgrade.
type upgradeReport struct {
	From      string `json:"from"` // the older release's commit
	OldBinary string `json:"old_binary"`
	NewBinary string `json:"new_binary"`
	Rollback  bool   `json:"rollback,omitempty"`
	// NewLevel is the feature level the new binary reports (0: none).
	NewLevel int           `json:"new_level"`
	Steps    []upgradeStep `json:"steps"`
	// Gate is the probe made while some member ran the older binary and
	// the leader the new one.
	Gate []featureUse `json:"gate,omitempty"`
	// LevelRoseMs is when every node first showed cluster_feature_level
	// >= NewLevel (ms since the start of the workload), LevelIndex the
	// leader's commit index then, and PreIndex the leader's commit index
	// before the last older node was stopped: entries up to it were
	// committed while an older binary was a member.
	LevelRoseMs float64      `json:"level_rose_ms,omitempty"`
	LevelIndex  uint64       `json:"level_index,omitempty"`
	PreIndex    uint64       `json:"pre_index,omitempty"`
	Features    []featureUse `json:"features,omitempty"`
	// Grouped block entries (audit, at the end) at or below PreIndex and
	// above LevelIndex, out of the block entries the audit still had.
	GroupedBefore int        `json:"grouped_before"`
	GroupedAfter  int        `json:"grouped_after"`
	BlockEntries  int        `json:"block_entries_seen"`
	Exits         []nodeExit `json:"unexpected_exits,omitempty"`
	// StopExits are unclean exits after the harness's SIGTERM (a
	// graceful shutdown that failed): noted, not a broken promise.
	StopExits     []nodeExit `json:"unclean_exits_after_sigterm,omitempty"`
	LogFindings   []string   `json:"log_findings,omitempty"`
	Problems      []string   `json:"problems,omitempty"`
	Incomplete    string     `json:"incomplete,omitempty"`
	ScheduleEnded bool       `json:"schedule_ended"`
}

// upgradeStep is one node put on a binary.
type upgradeStep struct {
	Node      string  `json:"node"`
	Action    string  `json:"action"` // "upgrade" or "rollback"
	Binary    string  `json:"binary"`
	WasLeader bool    `json:"was_leader"`
	Nemesis   string  `json:"nemesis,omitempty"`
	AtMs      float64 `json:"at_ms"`
	CaughtUp  float64 `json:"caught_up_ms,omitempty"`
	Err       string  `json:"error,omitempty"`
}

// featureUse is one request of the gate probe or the feature check.
type featureUse struct {
	Feature string `json:"feature"`
	Node    string `json:"node"`
	Status  int    `json:"status"`
	Problem string `json:"problem,omitempty"`
	Detail  string `json:"detail,omitempty"`
	// Need, Cluster and Behind are a cluster-upgrading problem's fields.
	Need    int      `json:"need_feature_level,omitempty"`
	Cluster int      `json:"cluster_feature_level,omitempty"`
	Behind  []string `json:"behind,omitempty"`
	OK      bool     `json:"ok"`
}

// nodeExit is a node process that ended without the harness ending it.
type nodeExit struct {
	Node   string   `json:"node"`
	Run    int      `json:"run"`
	Binary string   `json:"binary"`
	State  string   `json:"state"`
	AtMs   float64  `json:"at_ms"`
	Last   []string `json:"last_lines,omitempty"`
}

// exitLog collects the exits of node processes that the harness did not
// cause: anything but a clean exit, or any exit after the harness signalled
// the process to end (SIGKILL, or SIGTERM: a graceful shutdown may still
// fail, exit status 1, which is noted apart). A node that meets an entry it
// cannot apply panics (exit status 2); a panic after a SIGTERM is still in
// its log, which scanLogs reads.
type exitLog struct {
	t0     time.Time
	mu     sync.Mutex
	exits  []nodeExit
	asked  map[*proc.Process]bool
	failed []nodeExit    // unclean exits after the harness asked for them
	notify chan struct{} // closed at the first exit
}

func newExitLog(t0 time.Time) *exitLog {
	return &exitLog{t0: t0, notify: make(chan struct{}), asked: map[*proc.Process]bool{}}
}

// stopAsked records that the harness signalled p to end.
func (e *exitLog) stopAsked(p *proc.Process) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.asked[p] = true
}

func (e *exitLog) watch(id string, run int, bin string, p *proc.Process) {
	go func() {
		<-p.Done()
		st := p.State()
		if st == nil || st.Success() {
			return
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		ex := nodeExit{Node: id, Run: run, Binary: filepath.Base(bin), State: st.String(),
			AtMs: float64(time.Since(e.t0).Milliseconds()), Last: lastLines(p.Tail(40), 6)}
		if e.asked[p] {
			if ws, ok := st.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
				e.failed = append(e.failed, ex)
			}
			return
		}
		if len(e.exits) == 0 {
			close(e.notify)
		}
		e.exits = append(e.exits, ex)
	}()
}

func (e *exitLog) list() []nodeExit {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.exits)
}

// afterStop is the unclean exits the harness asked for.
func (e *exitLog) afterStop() []nodeExit {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.failed)
}

// lastLines keeps the lines that say why a process ended: a panic's line
// (without the goroutine dump, which differs from run to run), else the
// last k lines.
func lastLines(lines []string, k int) []string {
	lines = slices.DeleteFunc(slices.Clone(lines), func(l string) bool { return strings.TrimSpace(l) == "" })
	for i, l := range lines {
		if strings.HasPrefix(l, "panic: ") || strings.HasPrefix(l, "fatal error: ") {
			return lines[i : i+1]
		}
	}
	// The last k distinct lines: a node shutting down repeats itself.
	var out []string
	for i := len(lines) - 1; i >= 0 && len(out) < k; i-- {
		if !slices.Contains(out, lines[i]) {
			out = append(out, lines[i])
		}
	}
	slices.Reverse(out)
	return out
}

// prepareUpgrade builds the older release's binary and makes the process
// backend start every node on it and watch for nodes that stop by
// themselves.
func prepareUpgrade(ctx context.Context, cfg *config, b backend, t0 time.Time, logf func(string, ...any)) (*upgradeReport, error) {
	pb, ok := b.(*procBackend)
	if !ok {
		return nil, errors.New("--upgrade runs in process mode only")
	}
	commit := cfg.UpgradeFrom
	if commit == "" {
		var err error
		if commit, err = readUpgradeFrom(cfg.root); err != nil {
			return nil, err
		}
	}
	old, err := buildOldTicketd(ctx, cfg.root, commit, logf)
	if err != nil {
		return nil, err
	}
	// The flags the harness passes must mean to the older binary what
	// they mean to the new one: ask it.
	if o, err := runBrief(old, "serve", "-h"); !strings.Contains(o, "-snapshot-threshold") || !strings.Contains(o, "-raft-tls-ca") {
		return nil, fmt.Errorf("%s serve -h does not list the flags the harness passes (%v):\n%s", old, err, o)
	}
	pb.oldBin = old
	pb.exits = newExitLog(t0)
	return &upgradeReport{From: commit, OldBinary: filepath.Base(old), NewBinary: filepath.Base(pb.bin), Rollback: cfg.Rollback}, nil
}

// upgrader drives the upgrade schedule.
type upgrader struct {
	cfg *config
	c   *Cluster
	pb  *procBackend
	w   *workload
	nem *nemesis
	rec *recorder
	rnd *rand.Rand
	log func(string, ...any)
	rep *upgradeReport
}

func newUpgrader(cfg *config, c *Cluster, w *workload, nem *nemesis, rec *recorder, rep *upgradeReport, logf func(string, ...any)) *upgrader {
	pb := c.b.(*procBackend)
	pb.exits.mu.Lock()
	pb.exits.t0 = rec.t0 // from here on, times as the history counts them
	pb.exits.mu.Unlock()
	return &upgrader{cfg: cfg, c: c, pb: c.b.(*procBackend), w: w, nem: nem, rec: rec, rep: rep, log: logf,
		rnd: rand.New(rand.NewPCG(cfg.Seed, 31))}
}

func (u *upgrader) isOld(n *Node) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.proc.bin == u.pb.oldBin
}

func (u *upgrader) setBin(n *Node, bin string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.proc.bin = bin
}

func (u *upgrader) oldMembers() []*Node {
	var out []*Node
	for _, n := range u.c.Members() {
		if u.isOld(n) {
			out = append(out, n)
		}
	}
	return out
}

func (u *upgrader) problem(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	u.rep.Problems = append(u.rep.Problems, s)
	u.log("UPGRADE PROBLEM: %s", s)
}

// run is the schedule; it returns when done, when ctx ends (the time
// limit, an interruption) or at the first node that stops by itself.
func (u *upgrader) run(ctx context.Context, kinds []string) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// A node that stops by itself ends the schedule: the promise is
	// broken, and the rest would only restart it into the same entry.
	go func() {
		select {
		case <-u.pb.exits.notify:
			for _, e := range u.pb.exits.list()[:1] {
				u.log("UPGRADE: %s (%s) stopped by itself (%s): %s", e.Node, e.Binary, e.State, strings.Join(e.Last, " | "))
				cancel(fmt.Errorf("%s stopped by itself", e.Node))
			}
		case <-ctx.Done():
		}
	}()
	if err := u.schedule(ctx, kinds); err != nil {
		if u.rep.Incomplete == "" && len(u.pb.exits.list()) == 0 {
			u.rep.Incomplete = "the upgrade schedule did not finish: " + err.Error()
		}
		u.log("upgrade: %v", err)
		return
	}
	u.rep.ScheduleEnded = true
}

func (u *upgrader) schedule(ctx context.Context, kinds []string) error {
	if len(kinds) == 0 {
		kinds = []string{""}
	}
	order := slices.Clone(kinds)
	u.rnd.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	nextKind := func() string {
		k := order[0]
		order = append(order[1:], k)
		return k
	}
	if !sleepCtx(ctx, u.cfg.Quiet) {
		return ctx.Err()
	}
	var upgraded []*Node
	rolledBack, askedLevel := false, false
	for i := 0; i < 4*u.cfg.Nodes; i++ {
		old := u.oldMembers()
		if len(old) == 0 {
			break
		}
		if u.rep.Gate == nil && len(old) == 1 {
			// The last chance to see the gate: the leader must run the new
			// binary while an older member remains.
			if err := u.leaderOnNew(ctx); err != nil {
				return err
			}
			u.probeGate(ctx)
		}
		var target *Node
		l, err := u.c.leader(ctx, 10*time.Second)
		if err != nil {
			return err
		}
		if i == 0 {
			target = l // the leader first
		} else {
			target = old[u.rnd.IntN(len(old))]
		}
		if len(old) == 1 {
			if st, err := u.c.status(ctx, l); err == nil {
				u.rep.PreIndex = st.CommitIndex
			}
		}
		if err := u.replace(ctx, target, u.pb.bin, "upgrade", target == l, nextKind()); err != nil {
			return err
		}
		upgraded = append(upgraded, target)
		if u.rep.NewLevel == 0 && !askedLevel {
			askedLevel = true
			if st, err := u.c.status(ctx, target); err == nil {
				u.rep.NewLevel = st.FeatureLevel
				u.log("upgrade: the new binary reports version %q, feature level %d", st.Version, st.FeatureLevel)
			}
		}
		if u.rep.Gate == nil && len(u.oldMembers()) > 0 {
			if l, err := u.c.leader(ctx, 5*time.Second); err == nil && !u.isOld(l) {
				u.probeGate(ctx)
			}
		}
		if u.cfg.Rollback && !rolledBack && len(upgraded) == 3 {
			rolledBack = true
			back := slices.Clone(upgraded)
			u.rnd.Shuffle(len(back), func(i, j int) { back[i], back[j] = back[j], back[i] })
			for _, n := range back[:2] {
				l, _ := u.c.leader(ctx, 5*time.Second)
				if err := u.replace(ctx, n, u.pb.oldBin, "rollback", n == l, nextKind()); err != nil {
					return err
				}
			}
			// Rolled back, they must keep running and serving.
			sleepCtx(ctx, 3*time.Second)
			for _, n := range back[:2] {
				if !u.pb.alive(n) {
					u.problem("%s, rolled back to %s, is not running 3 s later", n.ID, u.rep.OldBinary)
				}
			}
			if err := u.c.waitHealthy(ctx, u.cfg.RecoveryTimeout); err != nil {
				return fmt.Errorf("after the rollback: %w", err)
			}
			u.log("upgrade: rolled back %s to %s; they run and the cluster is healthy", strings.Join(ids(back[:2]), ", "), u.rep.OldBinary)
		}
	}
	if n := len(u.oldMembers()); n > 0 {
		return fmt.Errorf("%d members still on the older binary after the schedule", n)
	}
	return u.afterUpgrade(ctx)
}

// replace puts n on bin: SIGTERM (as an operator does), start it on its
// data with the other binary, while a nemesis runs; then wait until it has
// caught up and the cluster is healthy.
func (u *upgrader) replace(ctx context.Context, n *Node, bin, action string, wasLeader bool, kind string) error {
	step := upgradeStep{Node: n.ID, Action: action, Binary: filepath.Base(bin), WasLeader: wasLeader, Nemesis: kind,
		AtMs: float64(u.rec.now()) / 1e6}
	ev := checker.Nemesis{Kind: action + "-node", Start: u.rec.now(), Targets: []string{n.ID},
		Desc: fmt.Sprintf("%s to %s%s, under %s", n.ID, step.Binary, map[bool]string{true: " (the leader)"}[wasLeader], orDash(kind))}
	u.log("upgrade: %s %s to %s%s, under %s", action, n.ID, step.Binary, map[bool]string{true: " (the leader)"}[wasLeader], orDash(kind))
	// From here on every start of n, whoever makes it (this step, a
	// nemesis's restart, the safety net), runs bin.
	u.setBin(n, bin)
	var nemWG sync.WaitGroup
	if kind != "" {
		nemWG.Add(1)
		go func() {
			defer nemWG.Done()
			u.nem.run(ctx, kind)
		}()
		sleepCtx(ctx, 500*time.Millisecond) // the fault is in place
	}
	var err error
	if u.pb.alive(n) {
		if err = u.c.kill(n, syscall.SIGTERM); err != nil && u.pb.alive(n) {
			err = fmt.Errorf("stop %s: %w", n.ID, err)
		} else {
			err = nil
		}
	}
	if err == nil {
		sleepCtx(ctx, 300*time.Millisecond)
		if rerr := u.c.restart(ctx, n); rerr != nil && !u.pb.alive(n) {
			err = fmt.Errorf("start %s on %s: %w", n.ID, step.Binary, rerr)
		}
	}
	ev.Healed = u.rec.now()
	nemWG.Wait()
	if err == nil {
		err = u.waitCaughtUp(ctx, n, 60*time.Second)
	}
	if err == nil {
		err = u.c.waitHealthy(ctx, u.cfg.RecoveryTimeout)
	}
	if err == nil {
		step.CaughtUp = float64(u.rec.now()) / 1e6
		ev.Recovered = u.rec.now()
		u.log("upgrade: %s runs %s and has caught up (%.1f s)", n.ID, step.Binary, (step.CaughtUp-step.AtMs)/1e3)
	} else {
		step.Err, ev.Err = err.Error(), err.Error()
	}
	u.rec.nemesis(ev)
	u.rep.Steps = append(u.rep.Steps, step)
	return err
}

// waitCaughtUp waits until n runs, answers /readyz and has applied what
// the leader had committed when the wait began.
func (u *upgrader) waitCaughtUp(ctx context.Context, n *Node, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var target uint64
	for {
		if !u.pb.alive(n) {
			return fmt.Errorf("%s is not running", n.ID)
		}
		if target == 0 {
			if l, err := u.c.leader(ctx, time.Second); err == nil {
				if st, err := u.c.status(ctx, l); err == nil {
					target = st.CommitIndex
				}
			}
		}
		if target > 0 {
			st, err := u.c.status(ctx, n)
			if err == nil && st.AppliedIndex >= target {
				if _, err := u.c.call(ctx, http.MethodGet, n, "/readyz", nil, nil, time.Second); err == nil {
					return nil
				}
			}
		}
		if ctx.Err() != nil {
			return fmt.Errorf("stopped waiting for %s to catch up: %w", n.ID, context.Cause(ctx))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not catch up (apply index %d) within %v", n.ID, target, timeout)
		}
		sleepCtx(ctx, 200*time.Millisecond)
	}
}

// leaderOnNew moves leadership until a node on the new binary leads
// (bounded): isolate the leader until another node leads and heal, or,
// without network faults, SIGTERM it (it hands leadership over) and start
// it again.
func (u *upgrader) leaderOnNew(ctx context.Context) error {
	for move := 0; move < 8; move++ {
		l, err := u.c.leader(ctx, 10*time.Second)
		if err != nil {
			return err
		}
		if !u.isOld(l) {
			return nil
		}
		u.log("upgrade: moving leadership off %s (older binary) for the gate probe", l.ID)
		if u.nem.nf.available(l) {
			if err := u.nem.nf.partition(u.c.Members(), func(a, b *Node) bool { return a != l && b != l }); err != nil {
				return errors.Join(err, u.nem.nf.heal())
			}
			_, lerr := u.c.leaderOtherThan(ctx, l, 10*time.Second)
			if err := u.nem.nf.heal(); err != nil {
				return err
			}
			if lerr != nil {
				return lerr
			}
		} else {
			if err := u.c.kill(l, syscall.SIGTERM); err != nil {
				return err
			}
			_, lerr := u.c.leaderOtherThan(ctx, l, 10*time.Second)
			if err := u.c.restart(ctx, l); err != nil {
				return err
			}
			if lerr != nil {
				return lerr
			}
		}
		if err := u.c.waitHealthy(ctx, u.cfg.RecoveryTimeout); err != nil {
			return err
		}
	}
	return errors.New("no node on the new binary led within 8 moves")
}

// useFeatures asks leader l for each feature above level 1 once: a raise, a
// shard namespace, a lease of a chosen worker id.
func (u *upgrader) useFeatures(ctx context.Context, l *Node) []featureUse {
	return []featureUse{
		u.raise(ctx, l, "raise"),
		u.shardNamespace(ctx, l, "shard namespace", upgradeShardNS),
		u.chosenLease(ctx, l, "lease of a chosen worker id"),
	}
}

// probeGate asks the leader (on the new binary, while an older member
// remains) for each feature above level 1: each must be refused with 409
// cluster-upgrading naming the members behind.
func (u *upgrader) probeGate(ctx context.Context) {
	l, err := u.c.leader(ctx, 5*time.Second)
	if err != nil || u.isOld(l) {
		return
	}
	behind := ids(u.oldMembers())
	u.log("upgrade: gate probe through leader %s while %s run the older binary", l.ID, strings.Join(behind, ", "))
	uses := u.useFeatures(ctx, l)
	for i := range uses {
		f := &uses[i]
		// The refusal must say why: a level above the cluster's, and every
		// member still on the older binary among those behind.
		missing := slices.DeleteFunc(slices.Clone(behind), func(id string) bool { return slices.Contains(f.Behind, id) })
		f.OK = f.Status == http.StatusConflict && f.Problem == api.ProblemClusterUpgrading && f.Need > f.Cluster && len(missing) == 0
		if !f.OK {
			u.problem("gate: %s through leader %s while %s ran the older binary answered %d %s %s (want 409 %s with need_feature_level above cluster_feature_level and behind naming %v)",
				f.Feature, l.ID, strings.Join(behind, ","), f.Status, f.Problem, f.Detail, api.ProblemClusterUpgrading, behind)
		} else {
			u.log("upgrade: gate: %s answered 409 cluster-upgrading: %s", f.Feature, f.Detail)
		}
	}
	u.rep.Gate = uses
}

// afterUpgrade waits for the cluster's level to rise on every node, then
// uses every feature that needs it, and lets the workload run a little
// longer so that the leader groups blocks at the new level.
func (u *upgrader) afterUpgrade(ctx context.Context) error {
	deadline := time.Now().Add(60 * time.Second)
	if u.rep.NewLevel == 0 {
		// Nothing to compare with: the run cannot be valid, but the gate
		// opening still tells when the level rose, and the features are
		// still worth using.
		u.rep.Incomplete = "the new binary reports no feature level (GET /v1/cluster feature_level): the level checks were not made"
		for {
			l, err := u.c.leader(ctx, 10*time.Second)
			if err != nil {
				return err
			}
			f := u.shardNamespace(ctx, l, "shard namespace", upgradeShardNS+"-probe")
			if f.OK {
				u.log("upgrade: the gate opened (a shard namespace was created through %s)", l.ID)
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				u.problem("every node runs the new binary, yet 60 s later a shard namespace is still refused: %d %s %s", f.Status, f.Problem, f.Detail)
				return nil
			}
			sleepCtx(ctx, 250*time.Millisecond)
		}
	}
	for u.rep.NewLevel > 0 {
		low := ""
		for _, n := range u.c.Members() {
			st, err := u.c.status(ctx, n)
			if err != nil {
				low = n.ID + ": " + err.Error()
				break
			}
			if st.ClusterFeatureLevel < u.rep.NewLevel {
				low = fmt.Sprintf("%s: cluster_feature_level %d", n.ID, st.ClusterFeatureLevel)
				break
			}
		}
		if low == "" {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			u.problem("every node runs the new binary, yet the cluster's feature level did not reach %d on every node within 60 s (%s)", u.rep.NewLevel, low)
			return nil
		}
		sleepCtx(ctx, 250*time.Millisecond)
	}
	u.rep.LevelRoseMs = float64(u.rec.now()) / 1e6
	l, err := u.c.leader(ctx, 10*time.Second)
	if err != nil {
		return err
	}
	if st, err := u.c.status(ctx, l); err == nil {
		u.rep.LevelIndex = st.CommitIndex
	}
	if u.rep.NewLevel > 0 {
		u.log("upgrade: cluster feature level %d on every node (leader %s, commit index %d)", u.rep.NewLevel, l.ID, u.rep.LevelIndex)
	} else {
		u.log("upgrade: the level rose, as far as the gate shows (leader %s, commit index %d)", l.ID, u.rep.LevelIndex)
	}
	uses := u.useFeatures(ctx, l)
	for i := range uses {
		f := &uses[i]
		if !f.OK {
			u.problem("at level %d, %s through %s answered %d %s %s", u.rep.NewLevel, f.Feature, f.Node, f.Status, f.Problem, f.Detail)
		} else {
			u.log("upgrade: %s: %d %s", f.Feature, f.Status, f.Detail)
		}
	}
	u.rep.Features = uses
	// Grouped blocks need the many-sequences load at the new level.
	sleepCtx(ctx, 5*time.Second)
	return nil
}

// raise raises jep-a a little above its highest acknowledged ID through n,
// recorded in the history like the raise workers' raises.
func (u *upgrader) raise(ctx context.Context, n *Node, feature string) featureUse {
	seq := mainSeqs[0]
	at := u.w.high.get(seq) + 1000
	o := u.rec.invoke(checker.Op{Worker: upgradeWorker, F: checker.FRaise, Seq: seq, Count: at, Node: n.ID})
	body, _ := json.Marshal(api.RaiseSequenceRequest{AtLeast: at})
	r := u.w.doWith(http.MethodPost, u.c.url(n, "/v1/sequences/"+seq+"/raise"), body, u.cfg.adminToken, "application/json", u.cfg.OpTimeout, 64<<10)
	f := featureUse{Feature: feature, Node: n.ID, Status: r.status}
	if r.err == nil && r.status == http.StatusOK {
		var res api.RaiseSequenceResult
		o.Outcome, o.Status = checker.OK, r.status
		switch err := json.Unmarshal(r.body, &res); {
		case err != nil:
			o.Malformed = "undecodable: " + string(r.body)
		case res.Sequence.Next == nil:
			o.Exhausted = true
		default:
			o.Next = *res.Sequence.Next
		}
		f.OK, f.Detail = true, fmt.Sprintf("%s raised to at least %d, next %d", seq, at, o.Next)
	} else {
		classify(o, r)
		f.setProblem(r)
	}
	u.rec.done(o)
	return f
}

// shardNamespace creates a namespace of worker role shard (a new entry
// type: namespace v2) through n.
func (u *upgrader) shardNamespace(ctx context.Context, n *Node, feature, name string) featureUse {
	body, _ := json.Marshal(api.NamespaceRequest{WorkerRole: api.WorkerRoleShard, MaxWorkers: ptr(int64(64)),
		LeaseTTLMs: ptr(int64(3000)), RecycleDelayMs: ptr(int64(3000))})
	r := u.w.doWith(http.MethodPut, u.c.url(n, "/v1/namespaces/"+name), body, u.cfg.adminToken, "application/json", u.cfg.OpTimeout, 64<<10)
	f := featureUse{Feature: feature, Node: n.ID, Status: r.status}
	if r.err == nil && (r.status == http.StatusCreated || r.status == http.StatusOK) {
		var ns api.NamespaceCreated
		if err := json.Unmarshal(r.body, &ns); err != nil || ns.WorkerRole != api.WorkerRoleShard {
			f.Detail = "answer without worker_role shard: " + string(r.body)
		} else {
			f.OK, f.Detail = true, fmt.Sprintf("%s, worker role %s", name, ns.WorkerRole)
		}
	} else {
		f.setProblem(r)
	}
	return f
}

// chosenLease asks for worker id 7 of jep-up-lease (a namespace the older
// release created) by number (a new entry type: lease v2), and releases
// it.
func (u *upgrader) chosenLease(ctx context.Context, n *Node, feature string) featureUse {
	const worker = 7
	body, _ := json.Marshal(api.LeaseRequest{Holder: "jepsen/upgrade", RequestID: fmt.Sprintf("upgrade-%d", u.rnd.Int64()), WorkerID: ptr(int64(worker))})
	r := u.w.doWith(http.MethodPost, u.c.url(n, "/v1/namespaces/"+upgradeLeaseNS+"/leases"), body, u.cfg.reserveToken, "application/json", u.cfg.OpTimeout, 64<<10)
	f := featureUse{Feature: feature, Node: n.ID, Status: r.status}
	if r.err == nil && (r.status == http.StatusOK || r.status == http.StatusCreated) {
		var l api.Lease
		if err := json.Unmarshal(r.body, &l); err != nil || l.WorkerID != worker {
			f.Detail = fmt.Sprintf("asked for worker id %d, got %s", worker, r.body)
			return f
		}
		f.OK, f.Detail = true, fmt.Sprintf("%s worker id %d, token %d", upgradeLeaseNS, l.WorkerID, l.Token)
		rel, _ := json.Marshal(api.LeaseTokenRequest{Token: l.Token})
		u.w.doWith(http.MethodDelete, u.c.url(n, fmt.Sprintf("/v1/namespaces/%s/leases/%d", upgradeLeaseNS, worker)), rel, u.cfg.reserveToken, "application/json", u.cfg.OpTimeout, 64<<10)
	} else {
		f.setProblem(r)
	}
	return f
}

// setProblem reads a refusal: its problem type, the fields of a
// cluster-upgrading problem, and a short detail.
func (f *featureUse) setProblem(r httpResult) {
	if r.err != nil {
		f.Detail = shortErr(r.err)
		return
	}
	var p api.Problem
	if json.Unmarshal(r.body, &p) != nil || p.Type == "" {
		b := r.body
		if len(b) > 120 {
			b = b[:120]
		}
		f.Detail = string(b)
		return
	}
	f.Problem, f.Detail = p.Type, p.Detail
	f.Need, f.Cluster = p.NeedFeatureLevel, p.ClusterFeatureLevel
	for _, m := range p.Behind {
		f.Behind = append(f.Behind, m.ID)
	}
	if f.Need != 0 || f.Cluster != 0 || len(f.Behind) > 0 {
		f.Detail = fmt.Sprintf("need_feature_level %d, cluster_feature_level %d, behind %v; %s", f.Need, f.Cluster, f.Behind, f.Detail)
	}
}

// setupUpgrade creates, on the older release, the namespace the
// chosen-worker-id lease is asked of later.
func (u *upgrader) setupUpgrade(ctx context.Context) error {
	return u.w.createNamespace(ctx, upgradeLeaseNS, api.NamespaceRequest{LeaseTTLMs: ptr(int64(3000)), RecycleDelayMs: ptr(int64(3000)), MaxWorkers: ptr(int64(16))})
}

// finish reads the audit for grouped block entries before and after the
// level rose (after the final reads, from the leader).
func (u *upgrader) finish(ctx context.Context) {
	if u.rep.LevelIndex == 0 && u.rep.PreIndex == 0 {
		return
	}
	perIndex, err := blockRecordsPerIndex(ctx, u.c)
	if err != nil {
		u.log("upgrade: audit: %v", err)
		if u.rep.LevelIndex > 0 && u.rep.Incomplete == "" {
			u.rep.Incomplete = "the audit could not be read for grouped block entries: " + err.Error()
		}
		return
	}
	var grouped []uint64
	for idx, k := range perIndex {
		u.rep.BlockEntries++
		if k < 2 {
			continue
		}
		switch {
		case idx <= u.rep.PreIndex:
			u.rep.GroupedBefore++
			grouped = append(grouped, idx)
		case u.rep.LevelIndex > 0 && idx > u.rep.LevelIndex:
			u.rep.GroupedAfter++
		}
	}
	sort.Slice(grouped, func(i, j int) bool { return grouped[i] < grouped[j] })
	if len(grouped) > 0 {
		u.problem("%d grouped block entries (type 11) were committed while a member ran the older release, before the cluster's level allowed them; the first at index %d", len(grouped), grouped[0])
	}
	if u.rep.LevelIndex > 0 && u.rep.GroupedAfter == 0 && u.rep.Incomplete == "" {
		u.rep.Incomplete = "no grouped block entry was seen after the level rose: grouped blocks were not exercised"
	}
}

// nodeLogFinding matches what a node prints when it meets what it cannot
// read: Go's panic (an entry of an unknown type), a snapshot of a format
// newer than it knows (the older release refuses it, and raft logs the
// failed install and tries again forever: a node that never catches up).
// The reason is the first group that matched; numbers in a snapshot's
// name are left out so that one line stands for every retry.
var nodeLogFinding = regexp.MustCompile(`(?m)^((?:panic|fatal error): .*)$|msg="failed to restore snapshot".*error="failed to restore snapshot [^:]*: (.*?)"`)

// scanLogs looks through every node log of the run for a node that stopped
// on something it could not read, and collects the unexpected exits.
func (u *upgrader) scanLogs(dir string) {
	findings, counts := logFindings(dir)
	for _, k := range findings {
		u.rep.LogFindings = append(u.rep.LogFindings, fmt.Sprintf("%s (%d times)", k, counts[k]))
	}
	u.rep.Exits = u.pb.exits.list()
	u.rep.StopExits = u.pb.exits.afterStop()
	// One line per node and reason: a node restarted into the same entry
	// stops the same way each time.
	seen := map[string]int{}
	var order []string
	for _, e := range u.rep.Exits {
		k := fmt.Sprintf("%s (%s) stopped by itself: %s: %s", e.Node, e.Binary, e.State, strings.Join(e.Last, " | "))
		if seen[k] == 0 {
			order = append(order, k)
		}
		seen[k]++
	}
	for _, k := range order {
		u.problem("%s (%d times)", k, seen[k])
	}
	for i, f := range findings {
		node, reason, _ := strings.Cut(f, ": ")
		covered := slices.ContainsFunc(u.rep.Exits, func(e nodeExit) bool { return e.Node == node && slices.Contains(e.Last, reason) })
		if !covered {
			u.problem("node log: %s", u.rep.LogFindings[i])
		}
	}
}

// logFindings reads every node log (ID.runN.log) of dir for nodeLogFinding:
// each reason once ("ID: reason"), in file order, and how often it came.
func logFindings(dir string) ([]string, map[string]int) {
	files, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	sort.Strings(files)
	counts := map[string]int{}
	var findings []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		node, _, _ := strings.Cut(filepath.Base(f), ".")
		for _, m := range nodeLogFinding.FindAllStringSubmatch(string(b), 1000) {
			var k string
			if m[1] != "" {
				k = node + ": " + m[1]
			} else {
				k = node + " could not install the leader's snapshot: " + m[2]
			}
			if counts[k] == 0 {
				findings = append(findings, k)
			}
			counts[k]++
		}
	}
	return findings, counts
}

// firstExit is the first node that stopped by itself, if any.
func (u *upgrader) firstExit() (nodeExit, bool) {
	l := u.pb.exits.list()
	if len(l) == 0 {
		return nodeExit{}, false
	}
	return l[0], true
}

// stopped reports whether a node stopped by itself: the final recovery
// then waits only briefly, since the safety net restarts it into the same
// entry.
func (u *upgrader) stopped() bool { return len(u.pb.exits.list()) > 0 }

// summary is the upgrade's lines of the run's summary.
func (r *upgradeReport) summary() []string {
	var out []string
	out = append(out, fmt.Sprintf("upgrade from %s (%s) to %s (feature level %d)%s: %d steps",
		r.From, r.OldBinary, r.NewBinary, r.NewLevel, map[bool]string{true: ", with a rollback of two nodes"}[r.Rollback], len(r.Steps)))
	for _, s := range r.Steps {
		line := fmt.Sprintf("  %-8s %-6s -> %s%s under %s at %.1f s", s.Action, s.Node, s.Binary, map[bool]string{true: " (leader)"}[s.WasLeader], orDash(s.Nemesis), s.AtMs/1e3)
		if s.Err != "" {
			line += ": " + s.Err
		} else {
			line += fmt.Sprintf(", caught up after %.1f s", (s.CaughtUp-s.AtMs)/1e3)
		}
		out = append(out, line)
	}
	for _, f := range r.Gate {
		out = append(out, fmt.Sprintf("  gate (an older member left): %s: %d %s (%s)", f.Feature, f.Status, strings.TrimPrefix(f.Problem, "urn:ticketd:problem:"), f.Detail))
	}
	if r.LevelRoseMs > 0 {
		if r.NewLevel > 0 {
			out = append(out, fmt.Sprintf("  cluster feature level %d on every node at %.1f s (commit index %d)", r.NewLevel, r.LevelRoseMs/1e3, r.LevelIndex))
		} else {
			out = append(out, fmt.Sprintf("  the gate opened at %.1f s (commit index %d); no level to compare with", r.LevelRoseMs/1e3, r.LevelIndex))
		}
	}
	for _, f := range r.Features {
		out = append(out, fmt.Sprintf("  at the new level: %s: %d %s", f.Feature, f.Status, f.Detail))
	}
	out = append(out, fmt.Sprintf("  grouped block entries: %d while an older member ran (index <= %d), %d after the level rose (index > %d), of %d block entries in the audit",
		r.GroupedBefore, r.PreIndex, r.GroupedAfter, r.LevelIndex, r.BlockEntries))
	out = append(out, fmt.Sprintf("  nodes that stopped by themselves: %d", len(r.Exits)))
	for _, e := range r.StopExits {
		out = append(out, fmt.Sprintf("  note: %s (%s) ended with %s after the harness's SIGTERM at %.1f s: %s", e.Node, e.Binary, e.State, e.AtMs/1e3, strings.Join(e.Last, " | ")))
	}
	for _, p := range r.Problems {
		out = append(out, "  UPGRADE INVALID: "+p)
	}
	if r.Incomplete != "" {
		out = append(out, "  UPGRADE INCONCLUSIVE: "+r.Incomplete)
	}
	return out
}

// runBrief runs a binary briefly and returns its combined output.
func runBrief(bin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	o, err := osexec.CommandContext(ctx, bin, args...).CombinedOutput()
	return string(o), err
}
