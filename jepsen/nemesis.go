//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/ticketd/ticketd/jepsen/checker"
)

// nemesisKind is one nemesis: its name as --nemesis and the report spell
// it, what it needs to run, and its inject. An inject heals what it did
// before it returns (and marks the heal with m.healed); healAll then undoes
// whatever any nemesis may have left. Adding a nemesis is adding an entry to
// nemesisKinds: "all", --nemesis, the run's skip list and
// --require-all-kinds all read the table.
type nemesisKind struct {
	name string
	// group is the --nemesis shorthand that selects it with its kin ("":
	// none).
	group string
	// net: it needs network faults (per-node namespaces: process mode as
	// root, or Docker); skipped without them.
	net bool
	// storage: it breaks a node's data filesystem (a filesystem per node:
	// process mode as root); skipped without one.
	storage bool
	// minNodes is the smallest cluster it makes sense on (0: any), and
	// fewNodes why; skipped on fewer.
	minNodes int
	fewNodes string
	// clockControl: it steps wall clocks through the faults build's
	// /unsafe/clock. Selecting it makes the harness build the faults
	// build; the run checks every node has the control before the
	// workload, and every heal sets the clocks back to 0.
	clockControl bool
	inject       func(m *nemesis, ctx context.Context, ev *checker.Nemesis) error
}

// nemesisKinds are the nemeses, in the order the README describes them
// (and "all" lists them: results.json's run.nemeses; the schedule draws or
// shuffles its own order).
var nemesisKinds = []nemesisKind{
	// SIGKILL a random node, restart it
	{name: "kill-random", group: "kill", inject: (*nemesis).killRandom},
	// SIGKILL the leader, restart it
	{name: "kill-leader", group: "kill", inject: (*nemesis).killLeader},
	// SIGSTOP the leader well past the election timeout, SIGCONT
	{name: "pause-leader", inject: (*nemesis).pauseLeader},
	// cut the leader off from every peer
	{name: "partition-leader", group: "partition", net: true, inject: (*nemesis).partitionLeader},
	// a random majority and minority
	{name: "partition-halves", group: "partition", net: true, inject: (*nemesis).partitionHalves},
	// two halves that only a bridge node connects
	{name: "partition-bridge", group: "partition", net: true, inject: (*nemesis).partitionBridge},
	// every node sees a different majority
	{name: "partition-ring", group: "partition", net: true, inject: (*nemesis).partitionRing,
		minNodes: 4, fewNodes: "a ring of majorities needs at least 4 nodes (on 3 every node would see every other)"},
	// slow every packet on the leader's link
	{name: "delay-leader", group: "link", net: true, inject: (*nemesis).delayLeader},
	// drop a share of every packet on the leader's link
	{name: "loss-leader", group: "link", net: true, inject: (*nemesis).lossLeader},
	// SIGKILL every node, restart in random order
	{name: "kill-all", group: "kill", inject: (*nemesis).killAll},
	// join a fresh node; heal: remove a follower
	{name: "member-add", group: "membership", inject: (*nemesis).memberAdd},
	// remove a follower; heal: a fresh node joins
	{name: "member-remove-follower", group: "membership", inject: (*nemesis).memberRemoveFollower},
	// the leader removes itself; heal: a fresh node joins
	{name: "member-remove-leader", group: "membership", inject: (*nemesis).memberRemoveLeader},
	// SIGTERM the leader (it hands leadership over), restart it
	{name: "leader-transfer", group: "membership", inject: (*nemesis).leaderTransfer},
	// cut a follower off, remove it, heal the network, retire it
	{name: "remove-isolated", group: "membership", net: true, inject: (*nemesis).removeIsolated},
	// SIGKILL a node, wipe its data, rejoin under a new ID
	{name: "wipe-rejoin", group: "membership", inject: (*nemesis).wipeRejoin},
	// move leadership away from a node and back to it
	{name: "leader-bounce", net: true, inject: (*nemesis).leaderBounce},
	// SIGSTOP the leader across the end of its lease, SIGCONT (leadlease.go)
	{name: "pause-leader-lease", group: "lease", inject: (*nemesis).pauseLeaderLease},
	// SIGSTOP the leader, SIGKILL and restart every follower, SIGCONT the
	// leader 0.4 lease durations later
	{name: "restart-promised", group: "lease", inject: (*nemesis).restartPromised},
	// move leadership 3-5 times by the API, the transferee's packets to
	// the old leader delayed
	{name: "transfer-under-load", group: "lease", net: true, inject: (*nemesis).transferUnderLoad},
	// step wall clocks forward or back, seconds to hours (faults build)
	{name: "clock", clockControl: true, inject: (*nemesis).clockFault},
	// fill the leader's data filesystem (ENOSPC), hold under load, free it
	{name: "disk-full-leader", group: "storage", storage: true, inject: (*nemesis).diskFullLeader},
	// the same on a follower
	{name: "disk-full-follower", group: "storage", storage: true, inject: (*nemesis).diskFullFollower},
	// a node's data filesystem goes read-only (EROFS) as after an I/O
	// error; heal: stop it, fsck, remount, restart it on its data
	{name: "disk-readonly", group: "storage", storage: true, inject: (*nemesis).diskReadonly},
}

// kindNames are the names of nemesisKinds, in its order.
func kindNames() []string {
	out := make([]string, len(nemesisKinds))
	for i, k := range nemesisKinds {
		out[i] = k.name
	}
	return out
}

// lookupKind finds a nemesis by name.
func lookupKind(name string) (*nemesisKind, bool) {
	for i := range nemesisKinds {
		if nemesisKinds[i].name == name {
			return &nemesisKinds[i], true
		}
	}
	return nil, false
}

// kindGroups are the --nemesis shorthands, in the order they first appear
// in nemesisKinds, with their kinds.
func kindGroups() (names []string, kinds map[string][]string) {
	kinds = map[string][]string{}
	for _, k := range nemesisKinds {
		if k.group == "" {
			continue
		}
		if _, ok := kinds[k.group]; !ok {
			names = append(names, k.group)
		}
		kinds[k.group] = append(kinds[k.group], k.name)
	}
	return names, kinds
}

// needClockControl reports whether one of kinds steps wall clocks (and so
// needs the faults build's clock control).
func needClockControl(kinds []string) bool {
	return slices.ContainsFunc(kinds, func(name string) bool {
		k, ok := lookupKind(name)
		return ok && k.clockControl
	})
}

// parseKinds reads --nemesis: "all", "none", or a comma-separated list of
// kinds, groups and "all", where a leading "-" takes a kind or group out
// again ("all,-clock": every kind but clock). "all" alone keeps the order
// of nemesisKinds; anything else comes out sorted.
func parseKinds(s string) ([]string, error) {
	all := kindNames()
	switch strings.TrimSpace(s) {
	case "all":
		return all, nil
	case "none", "":
		return nil, nil
	}
	groupNames, groups := kindGroups()
	set := map[string]bool{}
	for _, tok := range strings.Split(s, ",") {
		tok = strings.TrimSpace(tok)
		name, drop := strings.CutPrefix(tok, "-")
		var ks []string
		switch g, ok := groups[name]; {
		case name == "all":
			ks = all
		case ok:
			ks = g
		case slices.Contains(all, name):
			ks = []string{name}
		default:
			return nil, fmt.Errorf("--nemesis: unknown kind %q (kinds: %s; groups: %s; all; -KIND leaves one out)", tok, strings.Join(all, ", "), strings.Join(groupNames, ", "))
		}
		for _, k := range ks {
			if drop {
				delete(set, k)
			} else {
				set[k] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	slices.Sort(out)
	return out, nil
}

// nemesis injects faults one at a time: inject, hold, heal, wait for the
// cluster to be healthy, stay quiet for a while.
type nemesis struct {
	cfg   *config
	c     *Cluster
	nf    *netFaults
	rec   *recorder
	rnd   *rand.Rand
	log   func(string, ...any)
	queue uint16
	// clocks: the clock kind runs, so every heal sets the nodes' wall
	// clocks back to 0 (set once the nodes' clock control was checked).
	clocks bool
	// skipped lists selected kinds that cannot run here, with the reason.
	skipped map[string]string
}

func newNemesis(cfg *config, c *Cluster, nf *netFaults, rec *recorder, seed uint64, logf func(string, ...any)) *nemesis {
	return &nemesis{cfg: cfg, c: c, nf: nf, rec: rec, rnd: rand.New(rand.NewPCG(seed, 7)), log: logf, queue: 7700, skipped: map[string]string{}}
}

// applicable filters the selected kinds down to those this setup can run.
func (m *nemesis) applicable() []string {
	var out []string
	netOK := m.nf.available(m.c.Members()[0])
	_, noDisks := m.c.b.storage()
	for _, name := range m.cfg.Nemeses {
		k, ok := lookupKind(name)
		switch {
		case !ok: // parseKinds let no such name through
			out = append(out, name)
		case k.net && !netOK:
			m.skipped[name] = "no network faults in this mode (loopback: run as root for per-node namespaces)"
		case k.storage && noDisks != nil:
			m.skipped[name] = noDisks.Error()
		case m.cfg.Nodes < k.minNodes:
			m.skipped[name] = k.fewNodes
		default:
			out = append(out, name)
		}
	}
	return out
}

// loop runs nemeses until ctx ends (the time limit) or the cycles are done.
func (m *nemesis) loop(ctx context.Context, kinds []string) {
	if len(kinds) == 0 {
		<-ctx.Done()
		return
	}
	if !sleepCtx(ctx, m.cfg.Quiet) {
		return
	}
	for cycle := 1; ctx.Err() == nil && cycle <= 100_000; cycle++ {
		order := slices.Clone(kinds)
		if m.cfg.Schedule == "random" {
			order = []string{kinds[m.rnd.IntN(len(kinds))]}
		} else {
			m.rnd.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		}
		for _, k := range order {
			if ctx.Err() != nil {
				return
			}
			m.run(ctx, k)
			if !sleepCtx(ctx, m.cfg.Quiet) {
				return
			}
		}
		if m.cfg.Schedule == "cycle" && m.cfg.Cycles > 0 && cycle >= m.cfg.Cycles {
			return
		}
	}
}

// run injects one nemesis and records it. The fault is always healed, even
// if ctx ends meanwhile (the heal uses its own bounded context).
func (m *nemesis) run(ctx context.Context, kind string) {
	ev := checker.Nemesis{Kind: kind, Start: m.rec.now()}
	m.log("nemesis %s: start", kind)
	fctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	stop := context.AfterFunc(ctx, cancel) // a fault's hold ends early with the run
	err := m.inject(fctx, kind, &ev)
	stop()
	if ev.Healed == 0 {
		ev.Healed = m.rec.now()
	}
	hctx, hcancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer hcancel()
	if herr := m.healAll(hctx); herr != nil {
		err = errors.Join(err, fmt.Errorf("heal: %w", herr))
	}
	if dropped, delayed := m.nf.takeStats(); dropped+delayed > 0 {
		ev.Desc = strings.TrimSpace(fmt.Sprintf("%s (packets dropped %d, delayed %d)", ev.Desc, dropped, delayed))
	}
	if werr := m.c.waitHealthy(hctx, m.cfg.RecoveryTimeout); werr != nil {
		err = errors.Join(err, werr)
	} else {
		ev.Recovered = m.rec.now()
	}
	if err != nil {
		ev.Err = err.Error()
		m.log("nemesis %s: %v", kind, err)
	}
	m.log("nemesis %s on %v: healed after %.1fs, recovered after %.1fs more %s", kind, ev.Targets,
		float64(ev.Healed-ev.Start)/1e9, float64(max(ev.Recovered-ev.Healed, 0))/1e9, ev.Desc)
	for _, line := range readinessTimeline(ev) {
		m.log("  readiness %s", line)
	}
	m.rec.nemesis(ev)
}

// hold keeps a fault injected for a random time in [FaultMin, FaultMax].
func (m *nemesis) hold(ctx context.Context) { sleepCtx(ctx, m.holdFor()) }

// holdFor draws how long a fault stays injected: [FaultMin, FaultMax].
func (m *nemesis) holdFor() time.Duration {
	d := m.cfg.FaultMin
	if span := m.cfg.FaultMax - m.cfg.FaultMin; span > 0 {
		d += time.Duration(m.rnd.Int64N(int64(span) + 1))
	}
	return d
}

func (m *nemesis) healed(ev *checker.Nemesis) { ev.Healed = m.rec.now() }

func (m *nemesis) targets(ev *checker.Nemesis, nodes ...*Node) {
	for _, n := range nodes {
		ev.Targets = append(ev.Targets, n.ID)
	}
}

func (m *nemesis) pickRunning() (*Node, error) {
	var up []*Node
	for _, n := range m.c.Members() {
		if m.c.b.alive(n) {
			up = append(up, n)
		}
	}
	if len(up) == 0 {
		return nil, errors.New("no running member")
	}
	return up[m.rnd.IntN(len(up))], nil
}

func (m *nemesis) pickFollower(ctx context.Context, not ...*Node) (*Node, *Node, error) {
	l, err := m.c.leader(ctx, 5*time.Second)
	if err != nil {
		return nil, nil, err
	}
	var fs []*Node
	for _, n := range m.c.Members() {
		if n != l && m.c.b.alive(n) && !slices.Contains(not, n) {
			fs = append(fs, n)
		}
	}
	if len(fs) == 0 {
		return nil, l, errors.New("no running follower")
	}
	return fs[m.rnd.IntN(len(fs))], l, nil
}

func (m *nemesis) shuffled() []*Node {
	ns := m.c.Members()
	m.rnd.Shuffle(len(ns), func(i, j int) { ns[i], ns[j] = ns[j], ns[i] })
	return ns
}

// inject runs one nemesis up to its heal.
func (m *nemesis) inject(ctx context.Context, kind string, ev *checker.Nemesis) error {
	k, ok := lookupKind(kind)
	if !ok {
		return fmt.Errorf("unknown nemesis %q", kind)
	}
	return k.inject(m, ctx, ev)
}

// killRandom: SIGKILL a random running member, hold, restart it.
func (m *nemesis) killRandom(ctx context.Context, ev *checker.Nemesis) error {
	n, err := m.pickRunning()
	if err != nil {
		return err
	}
	return m.killHoldRestart(ctx, ev, n)
}

// killLeader: SIGKILL the leader, hold, restart it.
func (m *nemesis) killLeader(ctx context.Context, ev *checker.Nemesis) error {
	l, err := m.c.leader(ctx, 5*time.Second)
	if err != nil {
		return err
	}
	return m.killHoldRestart(ctx, ev, l)
}

func (m *nemesis) killHoldRestart(ctx context.Context, ev *checker.Nemesis, n *Node) error {
	m.targets(ev, n)
	if err := m.c.kill(n, syscall.SIGKILL); err != nil {
		return err
	}
	m.hold(ctx)
	err := m.c.restart(ctx, n)
	m.healed(ev)
	return err
}

// pauseLeader: SIGSTOP the leader well past the election timeout, SIGCONT.
func (m *nemesis) pauseLeader(ctx context.Context, ev *checker.Nemesis) error {
	l, err := m.c.leader(ctx, 5*time.Second)
	if err != nil {
		return err
	}
	m.targets(ev, l)
	if err := m.c.b.signal(l, syscall.SIGSTOP); err != nil {
		return err
	}
	// Well past the election timeout: a new leader is elected and
	// serves while the old one sleeps with requests in its sockets.
	start := time.Now()
	m.hold(ctx)
	sleepCtx(ctx, 4*m.cfg.Election-time.Since(start))
	if nl, err := m.c.leaderOtherThan(ctx, l, 5*time.Second); err == nil {
		ev.Desc = "new leader " + nl.ID + " while paused"
	}
	err = m.c.b.signal(l, syscall.SIGCONT)
	m.healed(ev)
	return err
}

// partitionLeader cuts the leader off from every peer.
func (m *nemesis) partitionLeader(ctx context.Context, ev *checker.Nemesis) error {
	l, err := m.c.leader(ctx, 5*time.Second)
	if err != nil {
		return err
	}
	m.targets(ev, l)
	return m.partitionHold(ctx, ev, func(a, b *Node) bool { return a != l && b != l })
}

// partitionHalves splits the members into a random majority and minority.
func (m *nemesis) partitionHalves(ctx context.Context, ev *checker.Nemesis) error {
	ns := m.shuffled()
	maj := len(ns)/2 + 1
	side := map[*Node]int{}
	for i, n := range ns {
		if i >= maj {
			side[n] = 1
		}
	}
	m.targets(ev, ns[maj:]...)
	ev.Desc = fmt.Sprintf("majority %v | minority %v", ids(ns[:maj]), ids(ns[maj:]))
	return m.partitionHold(ctx, ev, func(a, b *Node) bool { return side[a] == side[b] })
}

// partitionBridge: two halves that only a bridge node connects.
func (m *nemesis) partitionBridge(ctx context.Context, ev *checker.Nemesis) error {
	ns := m.shuffled()
	pos := positions(ns)
	half := (len(ns) - 1) / 2
	m.targets(ev, ns[0])
	ev.Desc = fmt.Sprintf("%v <-> %s <-> %v", ids(ns[1:1+half]), ns[0].ID, ids(ns[1+half:]))
	return m.partitionHold(ctx, ev, func(a, b *Node) bool { return bridgeConnected(pos[a], pos[b], len(ns)) })
}

// partitionRing: every node sees a majority, no two the same one.
func (m *nemesis) partitionRing(ctx context.Context, ev *checker.Nemesis) error {
	ns := m.shuffled()
	pos := positions(ns)
	m.targets(ev, ns...)
	var ring []string
	for _, n := range ns {
		ring = append(ring, n.ID)
	}
	ev.Desc = fmt.Sprintf("ring %v, each node sees its %d nearest on each side", ring, ringReach(len(ns)))
	return m.partitionHold(ctx, ev, func(a, b *Node) bool { return ringConnected(pos[a], pos[b], len(ns)) })
}

// delayLeader slows every packet in and out of the leader by 50-200 ms
// plus a jitter of up to a quarter of that.
func (m *nemesis) delayLeader(ctx context.Context, ev *checker.Nemesis) error {
	return m.leaderLinkHold(ctx, ev, func(l *Node) error {
		d := time.Duration(50+m.rnd.IntN(151)) * time.Millisecond
		j := time.Duration(m.rnd.Int64N(int64(d/4) + 1))
		m.queue++
		ev.Desc = fmt.Sprintf("every packet in and out delayed %v + up to %v (RTT via the leader +%v..%v)", d, j, 2*d, 2*(d+j))
		return m.nf.slow(l, m.queue, d, j)
	})
}

// lossLeader drops 10-40% of the packets in and out of the leader.
func (m *nemesis) lossLeader(ctx context.Context, ev *checker.Nemesis) error {
	return m.leaderLinkHold(ctx, ev, func(l *Node) error {
		p := 0.1 + 0.3*m.rnd.Float64()
		ev.Desc = fmt.Sprintf("%.0f%% of packets in and out dropped", 100*p)
		return m.nf.loss(l, p)
	})
}

// leaderLinkHold applies a link fault to the leader, holds it, heals it.
func (m *nemesis) leaderLinkHold(ctx context.Context, ev *checker.Nemesis, fault func(l *Node) error) error {
	l, err := m.c.leader(ctx, 5*time.Second)
	if err != nil {
		return err
	}
	m.targets(ev, l)
	err = fault(l)
	if err == nil {
		m.hold(ctx)
	}
	herr := m.nf.heal()
	m.healed(ev)
	return errors.Join(err, herr)
}

// killAll: SIGKILL every member, restart them in a random order.
func (m *nemesis) killAll(ctx context.Context, ev *checker.Nemesis) error {
	ns := m.c.Members()
	m.targets(ev, ns...)
	var errs []error
	for _, n := range ns {
		if m.c.b.alive(n) {
			_ = m.c.b.signal(n, syscall.SIGKILL)
		}
	}
	for _, n := range ns {
		errs = append(errs, m.c.b.waitExit(n, 10*time.Second))
	}
	sleepCtx(ctx, min(m.cfg.FaultMin, 2*time.Second))
	order := m.shuffled()
	ev.Desc = "restart order " + strings.Join(ids(order), ",")
	for _, n := range order {
		errs = append(errs, m.c.restart(ctx, n))
		sleepCtx(ctx, time.Duration(m.rnd.IntN(500))*time.Millisecond)
	}
	m.healed(ev)
	return errors.Join(errs...)
}

// memberAdd joins a fresh node; heal: remove a follower.
func (m *nemesis) memberAdd(ctx context.Context, ev *checker.Nemesis) error {
	slot, err := m.c.freeSlot(m.rnd)
	if err != nil {
		return err
	}
	n, err := m.c.join(ctx, slot)
	if n != nil {
		m.targets(ev, n)
	}
	if err != nil {
		return err
	}
	m.hold(ctx)
	// Back to the configured size: remove a follower other than the
	// new node.
	f, l, err := m.pickFollower(ctx, n)
	if err != nil {
		return err
	}
	ev.Desc = "then removed " + f.ID
	err = m.c.remove(ctx, f, []*Node{l})
	err = errors.Join(err, m.c.retire(f))
	m.healed(ev)
	return err
}

// memberRemoveFollower removes a follower; heal: a fresh node joins.
func (m *nemesis) memberRemoveFollower(ctx context.Context, ev *checker.Nemesis) error {
	f, l, err := m.pickFollower(ctx)
	if err != nil {
		return err
	}
	return m.removeReplace(ctx, ev, f, l)
}

// memberRemoveLeader: the leader removes itself; heal: a fresh node joins.
func (m *nemesis) memberRemoveLeader(ctx context.Context, ev *checker.Nemesis) error {
	l, err := m.c.leader(ctx, 5*time.Second)
	if err != nil {
		return err
	}
	return m.removeReplace(ctx, ev, l, l)
}

// removeReplace removes n through leader l, retires it, holds, and lets a
// fresh node join in its slot.
func (m *nemesis) removeReplace(ctx context.Context, ev *checker.Nemesis, n, l *Node) error {
	m.targets(ev, n)
	// A leader asked to remove itself does so and steps down.
	if err := m.c.remove(ctx, n, append([]*Node{l}, m.c.Members()...)); err != nil {
		return err
	}
	if err := m.c.retire(n); err != nil {
		return err
	}
	m.hold(ctx)
	nn, err := m.c.join(ctx, n.Slot)
	if nn != nil {
		ev.Desc = "replaced by " + nn.ID
	}
	m.healed(ev)
	return err
}

// leaderTransfer: SIGTERM the leader (it hands leadership over), restart
// it.
func (m *nemesis) leaderTransfer(ctx context.Context, ev *checker.Nemesis) error {
	// No transfer endpoint: a SIGTERMed leader hands leadership to
	// another voter before it exits.
	l, err := m.c.leader(ctx, 5*time.Second)
	if err != nil {
		return err
	}
	m.targets(ev, l)
	if err := m.c.kill(l, syscall.SIGTERM); err != nil {
		return err
	}
	if nl, err := m.c.leaderOtherThan(ctx, l, 5*time.Second); err == nil {
		ev.Desc = "leadership to " + nl.ID
	}
	sleepCtx(ctx, min(m.cfg.FaultMin, time.Second))
	err = m.c.restart(ctx, l)
	m.healed(ev)
	return err
}

// removeIsolated cuts a follower off, removes it through the majority,
// heals the network while it still runs, then retires it and lets a fresh
// node join.
func (m *nemesis) removeIsolated(ctx context.Context, ev *checker.Nemesis) error {
	f, l, err := m.pickFollower(ctx)
	if err != nil {
		return err
	}
	m.targets(ev, f)
	var others []*Node
	for _, n := range m.c.Members() {
		if n != f {
			others = append(others, n)
		}
	}
	if err := m.nf.partition(m.c.Members(), func(a, b *Node) bool { return a != f && b != f }); err != nil {
		return errors.Join(err, m.nf.heal())
	}
	sleepCtx(ctx, time.Second)
	rerr := m.c.remove(ctx, f, append([]*Node{l}, others...))
	m.hold(ctx)
	// Heal the network while the removed node still runs and may not
	// know it was removed; clients keep sending it requests.
	herr := m.nf.heal()
	sleepCtx(ctx, 3*time.Second)
	var jerr error
	if rerr == nil {
		jerr = m.c.retire(f)
		nn, err := m.c.join(ctx, f.Slot)
		if nn != nil {
			ev.Desc = "replaced by " + nn.ID
		}
		jerr = errors.Join(jerr, err)
	}
	m.healed(ev)
	return errors.Join(rerr, herr, jerr)
}

// wipeRejoin: SIGKILL a node, remove it, wipe its data, and let it rejoin
// under a new ID.
func (m *nemesis) wipeRejoin(ctx context.Context, ev *checker.Nemesis) error {
	n, err := m.pickRunning()
	if err != nil {
		return err
	}
	m.targets(ev, n)
	if err := m.c.kill(n, syscall.SIGKILL); err != nil {
		return err
	}
	if err := m.c.remove(ctx, n, m.c.Members()); err != nil {
		return err
	}
	if err := m.c.retire(n); err != nil {
		return err
	}
	m.hold(ctx)
	nn, err := m.c.join(ctx, n.Slot)
	if nn != nil {
		ev.Desc = "data wiped, back as " + nn.ID
	}
	m.healed(ev)
	return err
}

// partitionHold applies a partition, holds it, heals it.
func (m *nemesis) partitionHold(ctx context.Context, ev *checker.Nemesis, connected func(a, b *Node) bool) error {
	err := m.nf.partition(m.c.Members(), connected)
	if err == nil {
		m.hold(ctx)
	}
	herr := m.nf.heal()
	m.healed(ev)
	return errors.Join(err, herr)
}

// leaderBounce isolates leader L until another node leads, heals, then
// keeps isolating whoever leads until L leads again (bounded): L's
// leadership ends and a new one begins in the same process, which is where
// state kept from an earlier term would be served again.
func (m *nemesis) leaderBounce(ctx context.Context, ev *checker.Nemesis) error {
	l, err := m.c.leader(ctx, 5*time.Second)
	if err != nil {
		return err
	}
	m.targets(ev, l)
	cur := l
	for move := 1; move <= 8 && ctx.Err() == nil; move++ {
		c := cur
		if err := m.nf.partition(m.c.Members(), func(a, b *Node) bool { return a != c && b != c }); err != nil {
			return errors.Join(err, m.nf.heal())
		}
		nl, lerr := m.c.leaderOtherThan(ctx, c, 5*time.Second)
		sleepCtx(ctx, 300*time.Millisecond)
		if err := m.nf.heal(); err != nil {
			return err
		}
		if lerr != nil {
			return lerr
		}
		// Let the healed node catch up before it may be elected again.
		sleepCtx(ctx, 700*time.Millisecond)
		if nl == l {
			ev.Desc = fmt.Sprintf("leadership left %s and came back after %d moves", l.ID, move)
			m.healed(ev)
			return nil
		}
		cur = nl
	}
	ev.Desc = fmt.Sprintf("leadership did not come back to %s within 8 moves", l.ID)
	m.healed(ev)
	return nil
}

// healAll undoes whatever a nemesis may have left: network rules and
// delayers, paused or dead members, removed nodes still running, and a
// membership of the wrong size.
func (m *nemesis) healAll(ctx context.Context) error {
	var errs []error
	if err := m.nf.heal(); err != nil {
		errs = append(errs, err)
	}
	for _, n := range m.c.All() {
		if m.c.b.alive(n) && n.isPaused() {
			errs = append(errs, m.c.b.signal(n, syscall.SIGCONT))
		}
	}
	if m.clocks {
		errs = append(errs, m.c.resetClocks(ctx))
	}
	for _, n := range m.c.Members() {
		if !m.c.b.alive(n) && !n.isWiped() {
			errs = append(errs, m.c.restart(ctx, n))
		}
	}
	m.c.mu.Lock()
	strays := slices.Clone(m.c.stray)
	m.c.mu.Unlock()
	for _, n := range strays {
		errs = append(errs, m.c.retire(n))
	}
	for i := 0; i < 3 && len(m.c.Members()) < m.cfg.Nodes; i++ {
		slot, err := m.c.freeSlot(m.rnd)
		if err != nil {
			errs = append(errs, err)
			break
		}
		_, err = m.c.join(ctx, slot)
		errs = append(errs, err)
	}
	for i := 0; i < 3 && len(m.c.Members()) > m.cfg.Nodes; i++ {
		f, l, err := m.pickFollower(ctx)
		if err != nil {
			errs = append(errs, err)
			break
		}
		errs = append(errs, m.c.remove(ctx, f, []*Node{l}), m.c.retire(f))
	}
	return errors.Join(errs...)
}

func ids(ns []*Node) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.ID
	}
	sort.Strings(out)
	return out
}

func positions(ns []*Node) map[*Node]int {
	pos := map[*Node]int{}
	for i, n := range ns {
		pos[n] = i
	}
	return pos
}

// bridgeConnected: node 0 is the bridge; nodes 1..(n-1)/2 and the rest
// form two halves that reach each other only through it.
func bridgeConnected(i, j, n int) bool {
	if i == 0 || j == 0 {
		return true
	}
	half := (n - 1) / 2
	return (i <= half) == (j <= half)
}

// ringReach is how many neighbours on each side a node of a ring of n sees,
// so that it sees a majority (itself included): 1 on 4 or 5 nodes, 2 on 6
// or 7, ...
func ringReach(n int) int {
	maj := n/2 + 1
	return maj / 2
}

// ringConnected: nodes at ring distance <= ringReach(n) reach each other.
// Every node sees a majority, and no two nodes see the same one: there is
// a quorum everywhere and agreement on none of them.
func ringConnected(i, j, n int) bool {
	d := (i - j + n) % n
	return min(d, n-d) <= ringReach(n)
}
