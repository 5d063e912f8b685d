//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ticketd/ticketd/jepsen/checker"
)

// The clock nemesis steps nodes' wall clocks while they run.
//
// A faults build of ticketd (-tags ticketd_faults) reads its wall clock
// through an offset that GET/PUT /unsafe/clock on its API address reads and
// sets ({"offset_ms": N}, absolute, negative = behind; no authentication).
// Only the wall clock moves: Go's monotonic clock, which times elections,
// timeouts and (since issue #18) lease expiry, cannot be offset from
// outside the process, and a real NTP step does not move it either. What
// the wall clock still feeds is what this nemesis probes: the stamps a
// leader writes into lease entries, and anything that decides with them.
// The offset lives in the process: a restarted node starts at 0.

// clockSizes are the sizes a step is drawn from, seconds to hours (each
// forward or back with equal odds). The small ones stay under a lease's TTL
// (3 s in the suite's namespaces), the middle ones pass a TTL plus its
// recycle delay (6 to 9 s), the large ones are an NTP server gone wrong or a
// VM restored from an old snapshot.
var clockSizes = []time.Duration{
	time.Second, 3 * time.Second, 10 * time.Second, 30 * time.Second,
	2 * time.Minute, 10 * time.Minute, time.Hour, 6 * time.Hour,
}

// Targets of a clock step.
const (
	clockLeader    = "leader"    // the leader
	clockFollower  = "follower"  // one follower
	clockFollowers = "followers" // every follower: the next leader's clock is off
	clockAll       = "all"       // every node, the same step
	clockSpread    = "spread"    // every node its own step
)

// clockTargets are the targets with their weights (out of 12).
var clockTargets = []struct {
	name   string
	weight int
}{{clockLeader, 4}, {clockFollower, 2}, {clockFollowers, 2}, {clockAll, 2}, {clockSpread, 2}}

// clockPlan is one activation of the clock nemesis.
type clockPlan struct {
	Target string
	// Steps are the changes of the targets' offset, one after the other
	// across the hold (so the offset is their running sum); the heal sets
	// it back to 0, a last step. Empty with clockSpread.
	Steps []time.Duration
	// Spread is each node's offset with clockSpread (one per node, in the
	// order the nodes are given).
	Spread []time.Duration
	// Change, if set, is a leadership change right after the first step:
	// "kill" (SIGKILL the leader) or "term" (SIGTERM: it hands leadership
	// over, then exits); the old leader comes back at offset 0.
	Change string
}

// drawClockStep is one step: one of sizes, forward or back.
func drawClockStep(rnd *rand.Rand, sizes []time.Duration) time.Duration {
	d := sizes[rnd.IntN(len(sizes))]
	if rnd.IntN(2) == 0 {
		return -d
	}
	return d
}

// planClock draws one activation for a cluster of nodes members: a target,
// one to three steps of the given sizes (or one per node with clockSpread),
// and in a third of the activations a leadership change right after the
// first step.
func planClock(rnd *rand.Rand, nodes int, sizes []time.Duration) clockPlan {
	total := 0
	for _, t := range clockTargets {
		total += t.weight
	}
	var p clockPlan
	r := rnd.IntN(total)
	for _, t := range clockTargets {
		if r < t.weight {
			p.Target = t.name
			break
		}
		r -= t.weight
	}
	if rnd.IntN(3) == 0 {
		p.Change = []string{"kill", "term"}[rnd.IntN(2)]
	}
	if p.Target == clockSpread {
		for range max(nodes, 1) {
			p.Spread = append(p.Spread, drawClockStep(rnd, sizes))
		}
		return p
	}
	steps := 1
	if p.Change == "" {
		switch r := rnd.IntN(6); {
		case r >= 5:
			steps = 3
		case r >= 3:
			steps = 2
		}
	}
	for range steps {
		p.Steps = append(p.Steps, drawClockStep(rnd, sizes))
	}
	return p
}

// parseDurations reads --clock-steps: comma-separated positive durations
// of at most a day.
func parseDurations(s string) ([]time.Duration, error) {
	var out []time.Duration
	for _, f := range strings.Split(s, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(f))
		if err != nil {
			return nil, err
		}
		if d <= 0 || d > 24*time.Hour {
			return nil, fmt.Errorf("%v: want more than 0 and at most 24h", d)
		}
		out = append(out, d)
	}
	return out, nil
}

// joinDurations writes sizes as --clock-steps reads them.
func joinDurations(ds []time.Duration) string {
	var out []string
	for _, d := range ds {
		out = append(out, strings.TrimPrefix(fmtOffset(d), "+"))
	}
	return strings.Join(out, ",")
}

// offsets are the targets' offsets after each step.
func (p clockPlan) offsets() []time.Duration {
	out := make([]time.Duration, len(p.Steps))
	var sum time.Duration
	for i, s := range p.Steps {
		sum += s
		out[i] = sum
	}
	return out
}

// fmtOffset writes an offset or a step compactly, with its sign: +10s,
// -2m, +1h, +1h30m, -1.5s.
func fmtOffset(d time.Duration) string {
	sign := "+"
	if d < 0 {
		sign, d = "-", -d
	}
	var s string
	switch {
	case d == 0:
		return "0"
	case d%time.Hour == 0:
		s = fmt.Sprintf("%dh", d/time.Hour)
	case d >= time.Hour && d%time.Minute == 0:
		s = fmt.Sprintf("%dh%dm", d/time.Hour, (d%time.Hour)/time.Minute)
	case d%time.Minute == 0:
		s = fmt.Sprintf("%dm", d/time.Minute)
	default:
		s = d.String()
	}
	return sign + s
}

// clockState is the answer of /unsafe/clock.
type clockState struct {
	OffsetMs int64 `json:"offset_ms"`
	NowMs    int64 `json:"now_ms"`
}

// errNoClockControl: a node has no /unsafe/clock (not a faults build).
var errNoClockControl = errors.New("no clock control")

// getClock reads a node's clock offset.
func (c *Cluster) getClock(ctx context.Context, n *Node) (clockState, error) {
	var st clockState
	code, err := c.call(ctx, http.MethodGet, n, "/unsafe/clock", nil, &st, 2*time.Second)
	if code == http.StatusNotFound {
		return st, fmt.Errorf("%w: GET /unsafe/clock on %s answered 404", errNoClockControl, n.ID)
	}
	return st, err
}

// setClock sets a node's wall-clock offset (absolute), retrying a lost
// answer a few times (setting it twice is harmless), and checks the answer.
func (c *Cluster) setClock(ctx context.Context, n *Node, off time.Duration) error {
	last := ctx.Err()
	for attempt := 0; attempt < 3 && ctx.Err() == nil; attempt++ {
		var st clockState
		code, err := c.call(ctx, http.MethodPut, n, "/unsafe/clock", clockState{OffsetMs: off.Milliseconds()}, &st, 2*time.Second)
		switch {
		case code == http.StatusNotFound:
			return fmt.Errorf("%w: PUT /unsafe/clock on %s answered 404", errNoClockControl, n.ID)
		case err == nil && st.OffsetMs != off.Milliseconds():
			return fmt.Errorf("clock of %s: asked for offset %d ms, it answered %d ms", n.ID, off.Milliseconds(), st.OffsetMs)
		case err == nil:
			return nil
		}
		last = err
		if !c.b.alive(n) {
			return fmt.Errorf("clock of %s: %w (it is not running)", n.ID, err)
		}
		sleepCtx(ctx, 100*time.Millisecond)
	}
	return fmt.Errorf("clock of %s: %w", n.ID, last)
}

// checkClockControl makes sure every member can have its clock stepped,
// before the run starts: a binary built without -tags ticketd_faults has
// no /unsafe/clock, and the clock nemesis must not quietly do nothing.
func (c *Cluster) checkClockControl(ctx context.Context) (string, error) {
	var worst time.Duration
	for _, n := range c.Members() {
		st, err := c.getClock(ctx, n)
		if errors.Is(err, errNoClockControl) {
			return "", fmt.Errorf("nemesis clock: %w: the node is not a faults build (-tags ticketd_faults; the harness builds one "+
				"itself when clock is selected, unless --bin or --image names another); leave the kind out with --nemesis all,-clock", err)
		}
		if err != nil {
			return "", fmt.Errorf("nemesis clock: reading the clock of %s: %w", n.ID, err)
		}
		if st.OffsetMs != 0 {
			if err := c.setClock(ctx, n, 0); err != nil {
				return "", err
			}
		}
		skew := time.Duration(st.NowMs-st.OffsetMs-time.Now().UnixMilli()) * time.Millisecond
		worst = max(worst, skew.Abs())
	}
	return fmt.Sprintf("clock control on every member; their wall clocks within %v of the harness's", worst), nil
}

// resetClocks sets every running node's offset back to 0 (a stopped node
// comes back at 0 anyway).
func (c *Cluster) resetClocks(ctx context.Context) error {
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for _, n := range c.All() {
		if !c.b.alive(n) || n.isPaused() {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.setClock(ctx, n, 0); err != nil && c.b.alive(n) {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// setClocks sets the offset of several nodes at once.
func (c *Cluster) setClocks(ctx context.Context, nodes []*Node, offs []time.Duration) error {
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.setClock(ctx, n, offs[i])
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// clockFault is one activation of the clock nemesis: step the targets'
// wall clocks (one to three times across the hold, or once each with
// spread), or step once and then change the leader at once, and finally set
// every clock back to 0.
func (m *nemesis) clockFault(ctx context.Context, ev *checker.Nemesis) error {
	l, err := m.c.leader(ctx, 5*time.Second)
	if err != nil {
		return err
	}
	var running []*Node
	for _, n := range m.c.Members() {
		if m.c.b.alive(n) && !n.isPaused() {
			running = append(running, n)
		}
	}
	sizes := m.cfg.ClockSteps
	if len(sizes) == 0 {
		sizes = clockSizes
	}
	p := planClock(m.rnd, len(running), sizes)
	var nodes []*Node
	switch p.Target {
	case clockLeader:
		nodes = []*Node{l}
	case clockFollower, clockFollowers:
		for _, n := range running {
			if n != l {
				nodes = append(nodes, n)
			}
		}
		if len(nodes) == 0 {
			return errors.New("no running follower")
		}
		if p.Target == clockFollower {
			nodes = []*Node{nodes[m.rnd.IntN(len(nodes))]}
		}
	default:
		nodes = running
	}
	m.targets(ev, nodes...)
	var desc []string
	var errs []error
	hold := m.holdFor()
	if p.Target == clockSpread {
		offs := p.Spread[:len(nodes)]
		errs = append(errs, m.c.setClocks(ctx, nodes, offs))
		var each []string
		for i, n := range nodes {
			each = append(each, n.ID+" "+fmtOffset(offs[i]))
		}
		desc = append(desc, "each its own: "+strings.Join(each, ", ")+" (leader "+l.ID+")")
	} else {
		who := strings.Join(ids(nodes), ",")
		if p.Target == clockLeader {
			who += " (leader)"
		} else {
			who += " (" + p.Target + "; leader " + l.ID + ")"
		}
		for i, off := range p.offsets() {
			if i > 0 && ctx.Err() != nil {
				break // the run is over: no more steps, straight to the heal
			}
			offs := make([]time.Duration, len(nodes))
			for j := range offs {
				offs[j] = off
			}
			errs = append(errs, m.c.setClocks(ctx, nodes, offs))
			if i == 0 {
				desc = append(desc, fmt.Sprintf("%s stepped %s", who, fmtOffset(p.Steps[i])))
			} else {
				desc = append(desc, fmt.Sprintf("then %s (at %s)", fmtOffset(p.Steps[i]), fmtOffset(off)))
			}
			if p.Change != "" {
				break
			}
			sleepCtx(ctx, hold/time.Duration(len(p.Steps)))
		}
	}
	if p.Change != "" && ctx.Err() == nil {
		// Long enough for the leader to stamp a few entries with its
		// clock, short enough that the change comes "just after" the step.
		sleepCtx(ctx, time.Duration(300+m.rnd.IntN(700))*time.Millisecond)
		sig, name := syscall.SIGKILL, "SIGKILL"
		if p.Change == "term" {
			sig, name = syscall.SIGTERM, "SIGTERM"
		}
		kerr := m.c.kill(l, sig)
		errs = append(errs, kerr)
		change := fmt.Sprintf("then %s of leader %s", name, l.ID)
		if nl, err := m.c.leaderOtherThan(ctx, l, 5*time.Second); err == nil {
			change += ", new leader " + nl.ID
		}
		desc = append(desc, change)
		if kerr == nil || !m.c.b.alive(l) {
			sleepCtx(ctx, hold)
			errs = append(errs, m.c.restart(ctx, l))
			desc = append(desc, "restarted at offset 0")
		}
	} else if p.Target == clockSpread {
		sleepCtx(ctx, hold)
	}
	hctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	errs = append(errs, m.c.resetClocks(hctx))
	m.healed(ev)
	ev.Desc = strings.Join(desc, "; ") + "; all back to 0"
	return errors.Join(errs...)
}
