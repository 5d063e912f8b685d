//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/internal/proc"
	"github.com/ticketd/ticketd/jepsen/checker"
)

// The disaster-recovery run (--dr, issue #34): the primary cluster runs the
// reserve workload under the nemeses while a standby (ticketd serve --join
// --standby) follows it, cut off now and then for longer than its timeout
// so that the leader records it out of sync and, once healed, in sync
// again. Then the disaster: every primary node SIGKILLed at once under
// load, the standby stopped, `ticketd promote` on its data dir, and the
// standby started alone as a one-node cluster; the workers keep going
// against it. The history, before and after the promotion, goes through the
// usual checkers: no acknowledged ID twice. Afterwards the old primary is
// started again on its data: its standby (now the promoted node) answers
// its Raft traffic with "ticketd-promoted:", so it must fence itself and
// serve nothing; its answers are recorded in the history too.

const (
	drStandbyID = "sb1"
	// drSlot is the standby's slot: above the slots membership changes
	// use (Nodes+2 at most 9+2) and below the migrations' (20+).
	drSlot = 19
	// drWorker is the worker id of the harness's own probes of the old
	// primary after the promotion.
	drWorker = 31_000
	// drBound is the standby's bound: the server's default and minimum
	// (api.MaxReserveCount).
	drBound = api.DefaultStandbyBound
	// bootPromoted starts a node with neither --initial-cluster nor
	// --join: a promoted standby's data is its one-node cluster.
	bootPromoted bootMode = 100
)

// drReport is results.json's run.dr.
type drReport struct {
	Standby        string      `json:"standby"`
	StandbyTimeout string      `json:"standby_timeout"`
	Disaster       string      `json:"disaster"` // in-sync or out-of-sync: how the harness arranged it
	Fault          string      `json:"fault,omitempty"`
	Flips          []drFlip    `json:"state_flips"`
	Cuts           int         `json:"standby_cuts"`
	StateAtKill    string      `json:"state_at_kill,omitempty"`
	KillMs         float64     `json:"killed_primary_ms,omitempty"`
	Promotes       []drPromote `json:"promotes,omitempty"`
	// Recreated are the sequences created again on the promoted node
	// (recreateMissing).
	Recreated     []string       `json:"recreated,omitempty"`
	Advance       int64          `json:"advance,omitempty"`
	AdvanceWhy    string         `json:"advance_why,omitempty"`
	StartMs       float64        `json:"promoted_start_ms,omitempty"`
	ServingMs     float64        `json:"promoted_serving_ms,omitempty"`
	Promotion     *api.Promotion `json:"promotion,omitempty"`
	After         drFigures      `json:"after_promotion"`
	Fence         *drFence       `json:"fence,omitempty"`
	Leases        drLeases       `json:"leases"`
	TimeToCatchMs float64        `json:"time_to_catch_ms,omitempty"`
	FirstDupMs    float64        `json:"first_duplicate_after_serving_ms,omitempty"`
	Problems      []string       `json:"problems,omitempty"`
	Incomplete    string         `json:"incomplete,omitempty"`
}

// drFlip is a change of the standby's state as the primary's leader
// reported it (GET /v1/cluster).
type drFlip struct {
	AtMs   float64 `json:"at_ms"`
	Leader string  `json:"leader"`
	State  string  `json:"state"`
	Reason string  `json:"reason,omitempty"`
	Count  int64   `json:"out_of_sync_count,omitempty"`
}

// drPromote is one `ticketd promote` attempt.
type drPromote struct {
	Args     []string `json:"args"`
	ExitCode int      `json:"exit_code"`
	Output   string   `json:"output"`
	Refused  bool     `json:"refused"`
}

// drFence is what the old primary did when started again.
type drFence struct {
	FencedNode string      `json:"fenced_node,omitempty"`
	FencedMs   float64     `json:"fenced_after_ms,omitempty"`
	Reason     string      `json:"reason,omitempty"`
	Probes     int         `json:"probes"`
	ProbesOK   int         `json:"probes_ok"`
	Statuses   map[int]int `json:"statuses"`
	// JoinedLed: the voter that joined after the cut was seen leading the
	// old region ("joined" disaster).
	JoinedLed bool `json:"joined_led,omitempty"`
}

// drLeases is the worker-id leases on both sides of the promotion: raw
// lease grants (jep-lease) and the Snowflake generators' leases (jep-sf,
// the primary's sessions sf*, the promoted region's sfp*).
type drLeases struct {
	// PastCut counts the raw grants the primary answered after the
	// "leases" disaster cut the standby off; HeldAtLoss those of them
	// still held when the primary was lost (not released, within their
	// TTL): what a promotion with --advance must not grant again.
	PastCut    int `json:"granted_past_the_cut,omitempty"`
	HeldAtLoss int `json:"held_at_the_loss,omitempty"`
	// SFPastCut: Snowflake leases the primary's generators took after
	// the cut.
	SFPastCut int `json:"snowflake_leases_past_the_cut,omitempty"`
	// RefusedAfter counts raw acquires the promoted node refused;
	// GrantedAfter those it granted, the first FirstGrantMs after it
	// began to serve; SFFirstMs is when the first promoted-region
	// Snowflake generator held a lease (ms after serving).
	RefusedAfter int     `json:"refused_by_promoted"`
	GrantedAfter int     `json:"granted_by_promoted"`
	FirstGrantMs float64 `json:"first_grant_after_serving_ms,omitempty"`
	SFFirstMs    float64 `json:"first_snowflake_lease_after_serving_ms,omitempty"`
}

// drFigures counts what the promoted node acknowledged; FirstMs is when
// its first acknowledged range completed (ms since the start): a standby
// acknowledges none, so that is when it began to serve.
type drFigures struct {
	Ranges  int     `json:"ranges"`
	IDs     int64   `json:"ids"`
	FirstMs float64 `json:"first_ms,omitempty"`
}

// dr drives the run.
type dr struct {
	cfg *config
	c   *Cluster
	pb  *procBackend
	w   *workload
	nem *nemesis
	rec *recorder
	nf  *netFaults // the standby's own rules (the nemeses' heal never touches them)
	rnd *rand.Rand
	log func(string, ...any)
	rep drReport
	sb  *Node
	old []*Node

	// sbPaused is set while the "paused" disaster holds the standby
	// SIGSTOPped.
	sbPaused bool
	// joined is the voter the "joined" disaster added after the cut.
	joined *Node
	// cutAt is when the "leases" disaster cut the standby off (the run's
	// clock): grants completed after it are past what the standby stored.
	cutAt int64

	mu        sync.Mutex
	lastState string
	// lostAt is when the harness killed the primary: what an operator
	// passes as --primary-lost-at.
	lostAt time.Time
}

// The disasters --dr-disaster takes, and the "delayed" one's link.
var drDisasters = []string{"in-sync", "out-of-sync", "paused", "delayed", "joined", "leases"}

const (
	drDelay      = 400 * time.Millisecond
	drDelayQueue = 7790 // NFQUEUE number, apart from the nemesis's (7700 on)
)

// drMaxClockSkew is the --max-clock-skew the harness promotes with.
const drMaxClockSkew = 50 * time.Millisecond

func (d *dr) problem(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	d.rep.Problems = append(d.rep.Problems, s)
	d.log("DR PROBLEM: %s", s)
}

func (d *dr) ms(ns int64) float64 { return float64(ns) / 1e6 }

// setupDR adds the standby to the booted primary and waits until its leader
// records it in sync.
func setupDR(ctx context.Context, cfg *config, c *Cluster, w *workload, nem *nemesis, rec *recorder, logf func(string, ...any)) (*dr, error) {
	pb, ok := c.b.(*procBackend)
	if !ok || pb.fab == nil {
		return nil, errors.New("--dr runs in process mode with network namespaces (root)")
	}
	d := &dr{cfg: cfg, c: c, pb: pb, w: w, nem: nem, rec: rec, log: logf, nf: newNetFaults(c.b, cfg.Seed),
		rnd: rand.New(rand.NewPCG(cfg.Seed, 34)),
		rep: drReport{Standby: drStandbyID, StandbyTimeout: cfg.DRStandbyTimeout.String(), Disaster: cfg.DRDisaster, Fault: cfg.DRFault}}
	sb, err := c.b.newNode(drSlot, drStandbyID, bootJoin)
	if err != nil {
		return nil, err
	}
	for _, m := range c.Members() {
		sb.JoinURLs = append(sb.JoinURLs, "http://"+c.b.httpAdvertise(m))
	}
	c.mu.Lock()
	c.all = append(c.all, sb) // stopped and its log kept with the others; never a member
	c.mu.Unlock()
	d.sb = sb
	if err := d.startStandby(); err != nil {
		return nil, err
	}
	if _, err := d.waitState(ctx, api.StandbyInSync, 60*time.Second); err != nil {
		return nil, fmt.Errorf("standby %s: %w", sb.ID, err)
	}
	logf("dr: standby %s joined (bound %d, timeout %v) and is in sync", sb.ID, drBound, cfg.DRStandbyTimeout)
	return d, nil
}

// startStandby starts the standby's first run: procBackend.start's command
// line plus --join --standby --standby-timeout. Its later runs need only its
// data dir (the contract), and after the promotion it must run without them.
func (d *dr) startStandby() error {
	b, n := d.pb, d.sb
	n.mu.Lock()
	defer n.mu.Unlock()
	st := n.proc
	if err := os.MkdirAll(st.dataDir, 0o755); err != nil {
		return err
	}
	args := []string{"serve", "--id", n.ID, "--data-dir", st.dataDir, "--http-addr", b.apiHostPort(n), "--raft-addr", b.raftAddr(n),
		"--join", strings.Join(n.JoinURLs, ","), "--standby", "--standby-timeout", d.cfg.DRStandbyTimeout.String()}
	args = append(args, b.tlsArgs(n)...)
	args = append(args, d.cfg.timingArgs()...) // with --unsafe-fault: the standby is a replica like the others
	p, err := proc.Start(proc.Spec{Path: b.bin, Args: args, Env: []string{"TICKETD_TOKENS=" + d.cfg.tokensEnv()},
		Log: filepath.Join(b.dir, "logs", fmt.Sprintf("%s.run%d.log", n.ID, st.runs+1)), Header: true, OwnGroup: true,
		Prefix: []string{"ip", "netns", "exec", slotNS(n.Slot)}})
	if err != nil {
		return fmt.Errorf("start standby %s: %w", n.ID, err)
	}
	st.p, n.paused = p, false
	st.runs++
	n.starts++
	return nil
}

// standbyStatus is the standby as the primary's leader reports it.
func (d *dr) standbyStatus(ctx context.Context) (*Node, *api.StandbyStatus, error) {
	l, err := d.c.leader(ctx, 0)
	if err != nil {
		return nil, nil, err
	}
	st, err := d.c.status(ctx, l)
	if err != nil {
		return l, nil, err
	}
	if st.Standby == nil {
		return l, nil, fmt.Errorf("leader %s reports no standby", l.ID)
	}
	return l, st.Standby, nil
}

// note records a state flip.
func (d *dr) note(l *Node, s *api.StandbyStatus) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s.State == d.lastState {
		return
	}
	d.lastState = s.State
	f := drFlip{AtMs: d.ms(d.rec.now()), Leader: l.ID, State: s.State, Reason: s.Reason, Count: s.OutOfSyncCount}
	d.rep.Flips = append(d.rep.Flips, f)
	d.log("dr: standby %s (leader %s, out of sync %d times so far) %s", s.State, l.ID, s.OutOfSyncCount, s.Reason)
}

// waitState polls the leader until it reports the standby in state want.
func (d *dr) waitState(ctx context.Context, want string, timeout time.Duration) (*api.StandbyStatus, error) {
	deadline := time.Now().Add(timeout)
	last := "no answer"
	for {
		if l, s, err := d.standbyStatus(ctx); err == nil {
			d.note(l, s)
			if s.State == want {
				return s, nil
			}
			last = s.State
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, fmt.Errorf("not %s within %v (last: %s)", want, timeout, last)
		}
		sleepCtx(ctx, 100*time.Millisecond)
	}
}

// watch records the leader's view of the standby until ctx ends.
func (d *dr) watch(ctx context.Context) {
	for sleepCtx(ctx, 200*time.Millisecond) {
		if l, s, err := d.standbyStatus(ctx); err == nil {
			d.note(l, s)
		}
	}
}

// cutStandby drops, inside the standby's namespace, every packet from the
// other nodes (the harness, in the hub, still reaches it): silent loss, as
// a lost link to the DR region.
func (d *dr) cutStandby() error {
	if err := d.nf.chains(d.sb); err != nil {
		return err
	}
	if _, err := d.nf.ipt(d.sb, "-A", "TJ_IN", "-s", hubIP, "-j", "ACCEPT"); err != nil {
		return err
	}
	_, err := d.nf.ipt(d.sb, "-A", "TJ_IN", "-s", subnet+".0/24", "-j", "DROP")
	return err
}

// cutter cuts the standby off now and then, for longer than its timeout,
// until ctx ends: the leader must record it out of sync and go on, then in
// sync once it has caught up.
func (d *dr) cutter(ctx context.Context) {
	for sleepCtx(ctx, time.Duration(3000+d.rnd.IntN(3000))*time.Millisecond) {
		ev := checker.Nemesis{Kind: "partition-standby", Start: d.rec.now(), Targets: []string{d.sb.ID}}
		err := d.cutStandby()
		hold := d.cfg.DRStandbyTimeout + time.Duration(1000+d.rnd.IntN(1500))*time.Millisecond
		sleepCtx(ctx, hold)
		err = errors.Join(err, d.nf.heal())
		ev.Healed = d.rec.now()
		d.rep.Cuts++
		if dropped, _ := d.nf.takeStats(); dropped > 0 {
			ev.Desc = fmt.Sprintf("standby cut off for %v (packets dropped %d)", hold.Round(time.Millisecond), dropped)
		}
		wctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		if _, werr := d.waitState(wctx, api.StandbyInSync, 20*time.Second); werr != nil {
			err = errors.Join(err, werr)
		} else {
			ev.Recovered = d.rec.now()
		}
		cancel()
		if err != nil {
			ev.Err = err.Error()
		}
		d.rec.nemesis(ev)
	}
}

// run is the whole DR schedule: the primary phase (nemeses and cuts) until
// the time limit less --dr-after, the disaster, the promoted node serving
// for --dr-after, then the old primary started again.
func (d *dr) run(ctx context.Context, kinds []string) {
	pctx, cancel := context.WithTimeout(ctx, d.cfg.TimeLimit-d.cfg.DRAfter)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); d.watch(pctx) }()
	go func() { defer wg.Done(); d.cutter(pctx) }()
	d.nem.loop(pctx, kinds)
	cancel()
	wg.Wait()
	if ctx.Err() != nil {
		d.rep.Incomplete = "the run ended before the disaster"
		return
	}
	if err := d.disaster(ctx); err != nil {
		if d.rep.Incomplete == "" {
			d.rep.Incomplete = err.Error()
		}
		d.log("dr: %v", err)
		return
	}
	if !sleepCtx(ctx, d.cfg.DRAfter) {
		return
	}
	if d.cfg.DRFence {
		d.fenceCheck(ctx)
	}
}

// disaster loses the primary and promotes the standby.
func (d *dr) disaster(ctx context.Context) error {
	hctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := d.nem.healAll(hctx); err != nil {
		d.log("dr: heal before the disaster: %v", err)
	}
	if err := d.c.waitHealthy(hctx, 30*time.Second); err != nil {
		return fmt.Errorf("primary not healthy before the disaster: %w", err)
	}
	switch d.cfg.DRDisaster {
	case "in-sync":
		if _, err := d.waitState(hctx, api.StandbyInSync, 20*time.Second); err != nil {
			return fmt.Errorf("standby before the disaster: %w", err)
		}
	case "out-of-sync":
		if err := d.cutStandby(); err != nil {
			return err
		}
		if err := d.serveOnWithoutIt(hctx); err != nil {
			return err
		}
	case "leases":
		// Issue 42: the standby cut off, and at once every Snowflake
		// generator of the primary starts a new tenure (a new lease,
		// the lowest worker id free there, which is free in what the
		// standby stored too); the raw lease workers go on granting.
		// After the loss, the promotion needs --advance: the promoted
		// node must grant none of these ids while their holders may
		// still use them.
		if err := d.cutStandby(); err != nil {
			return err
		}
		d.cutAt = d.rec.now()
		d.w.sfCycle.Add(1)
		if err := d.serveOnWithoutIt(hctx); err != nil {
			return err
		}
	case "joined":
		// Issue 42: the standby cut off and recorded out of sync, then a
		// voter joins the primary: the standby never hears of it. After
		// the promotion the old region comes back with it leading
		// (fenceCheck): the promoted node must refuse it too.
		if err := d.cutStandby(); err != nil {
			return err
		}
		if _, err := d.waitState(hctx, api.StandbyOutOfSync, 20*time.Second); err != nil {
			return fmt.Errorf("standby before the disaster: %w", err)
		}
		slot, err := d.c.freeSlot(d.rnd)
		if err != nil {
			return err
		}
		nn, err := d.c.join(hctx, slot)
		if err != nil {
			return fmt.Errorf("a voter joining after the cut: %w", err)
		}
		d.joined = nn
		d.log("dr: %s joined the primary after the standby was recorded out of sync", nn.ID)
		if err := d.serveOnWithoutIt(hctx); err != nil {
			return err
		}
	case "paused":
		// Issue 42: a standby paused (a VM pause, a long GC) keeps what
		// the primary sends it queued in its sockets, certificates
		// included, and reads it only when it resumes, after the loss.
		if err := d.waitCertified(hctx); err != nil {
			return err
		}
		if err := d.c.b.signal(d.sb, syscall.SIGSTOP); err != nil {
			return err
		}
		d.sbPaused = true
		if err := d.serveOnWithoutIt(hctx); err != nil {
			return err
		}
	case "delayed":
		// Issue 42: a slow link (400 ms each way) first, then the
		// standby's answers lost: the leader records it out of sync
		// while what it sent is still on its way.
		if err := d.waitCertified(hctx); err != nil {
			return err
		}
		if err := d.nf.slow(d.sb, drDelayQueue, drDelay, drDelay/8); err != nil {
			return err
		}
		sleepCtx(hctx, 3*time.Second)
		if _, err := d.nf.ipt(d.sb, "-I", "TJ_OUT", "1", "-d", subnet+".0/24", "-j", "DROP"); err != nil {
			return err
		}
		if err := d.serveOnWithoutIt(hctx); err != nil {
			return err
		}
	}
	if l, s, err := d.standbyStatus(hctx); err == nil {
		d.note(l, s)
		d.rep.StateAtKill = s.State
	}
	// The disaster: every primary node SIGKILLed at once, under load.
	d.old = d.c.Members()
	d.lostAt = time.Now()
	var wg sync.WaitGroup
	for _, n := range d.old {
		wg.Add(1)
		go func() { defer wg.Done(); _ = d.c.b.signal(n, syscall.SIGKILL) }()
	}
	wg.Wait()
	d.rep.KillMs = d.ms(d.rec.now())
	for _, n := range d.old {
		_ = d.c.b.waitExit(n, 10*time.Second)
	}
	d.c.mu.Lock()
	d.c.members, d.c.stray = []*Node{d.sb}, nil // the workers now go to the standby only
	d.c.mu.Unlock()
	d.log("dr: DISASTER: killed %v at %.1fs of the workload (standby was %s)", ids(d.old), d.rep.KillMs/1000, orDash(d.rep.StateAtKill))
	switch {
	case d.sbPaused:
		// It resumes after the loss and reads its queue before it stops.
		sleepCtx(hctx, 300*time.Millisecond)
		if err := d.c.b.signal(d.sb, syscall.SIGCONT); err != nil {
			return err
		}
		d.sbPaused = false
		sleepCtx(hctx, time.Second)
	case d.cfg.DRDisaster == "delayed":
		sleepCtx(hctx, 2*drDelay+500*time.Millisecond) // what was in flight arrives
	}
	_ = d.nf.heal()
	if err := d.c.kill(d.sb, syscall.SIGTERM); err != nil {
		d.log("dr: stopping the standby: %v", err)
	}
	if err := d.promote(hctx); err != nil {
		return err
	}
	d.sb.mu.Lock()
	d.sb.Boot = bootPromoted
	d.sb.mu.Unlock()
	if err := d.c.b.start(hctx, d.sb, ""); err != nil {
		d.problem("the promoted node did not start: %v", err)
		return err
	}
	d.rep.StartMs = d.ms(d.rec.now())
	if err := d.c.waitHealthy(hctx, 30*time.Second); err != nil {
		d.problem("the promoted node does not serve: %v", err)
		return err
	}
	d.rep.ServingMs = d.ms(d.rec.now())
	if st, err := d.c.status(hctx, d.sb); err == nil {
		if st.ThisNodeStandby {
			d.problem("the promoted node still reports itself a standby")
		}
		if len(st.Promotions) > 0 {
			p := st.Promotions[len(st.Promotions)-1]
			d.rep.Promotion = &p
		} else {
			d.problem("the promoted node's GET /v1/cluster lists no promotion")
		}
	}
	d.log("dr: promoted %s serving at %.1fs of the workload (%.1fs after the disaster)", d.sb.ID, d.rep.ServingMs/1000, (d.rep.ServingMs-d.rep.KillMs)/1000)
	d.recreateMissing(hctx)
	if d.cfg.SnowflakeWorkers > 0 {
		// The promoted region's generators: clients that know only the
		// promoted node, beside the primary's, which know only the lost
		// nodes and issue on under their leases until those end.
		d.w.startSnowflake(d.w.spawn, "sfp")
		d.log("dr: %d Snowflake generators started on the promoted node", d.cfg.SnowflakeWorkers)
	}
	return nil
}

// waitJoinedLeads waits (up to 20 s) until the voter that joined after the
// cut leads the restarted old region, or the region is fenced first (by a
// refusal of the joined voter's own traffic, which is the point).
func (d *dr) waitJoinedLeads(ctx context.Context) {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		st, err := d.c.status(ctx, d.joined)
		if err == nil && st.Fence != nil {
			d.log("dr: %s fenced before it was seen leading (%s)", d.joined.ID, st.Fence.Reason)
			return
		}
		if err == nil && st.State == "Leader" {
			d.log("dr: %s, which joined after the cut, leads the old region (term %d)", d.joined.ID, st.Term)
			if d.rep.Fence != nil {
				d.rep.Fence.JoinedLed = true
			}
			return
		}
		sleepCtx(ctx, 50*time.Millisecond)
	}
	d.log("dr: %s did not lead the old region within 20 s", d.joined.ID)
}

// recreateMissing does what the procedure of docs/disaster-recovery.md asks
// of an operator after a promotion with --advance: a sequence the primary
// created after the standby fell out does not exist on the promoted node,
// so it is created again with a start above what the primary can have
// given of it (one above the highest ID of it acknowledged or read). One
// used up to its max cannot be, and is reported.
func (d *dr) recreateMissing(ctx context.Context) {
	tops := map[string]int64{}
	for _, o := range d.rec.snapshot() {
		if o.Cluster != "" || o.Outcome != checker.OK {
			continue
		}
		switch o.F {
		case checker.FReserve, checker.FNext:
			tops[o.Seq] = max(tops[o.Seq], o.Last)
		case checker.FRead, checker.FRaise:
			tops[o.Seq] = max(tops[o.Seq], o.Next)
		}
	}
	for _, s := range d.w.knownSequences() {
		// call answers a 404 as an error with its status: only that
		// status says the sequence is missing (a node that does not
		// answer is asked again, three times at most).
		code := 0
		for try := 0; try < 3 && (code == 0 || code >= 500) && ctx.Err() == nil; try++ {
			code, _ = d.c.call(ctx, http.MethodGet, d.sb, "/v1/sequences/"+s.seq, nil, nil, 3*time.Second)
		}
		if code != http.StatusNotFound {
			if code != http.StatusOK {
				d.problem("sequence %s: the promoted node answered %d to a read of it", s.seq, code)
			}
			continue
		}
		start, limit := tops[s.seq]+1, s.max
		if limit == 0 {
			limit = math.MaxInt64
		}
		if start > limit {
			d.problem("sequence %s, created on the primary after the standby fell out, was used up there: it cannot be created again", s.seq)
			continue
		}
		if err := d.w.create(ctx, s.seq, &api.CreateSequenceRequest{Start: ptr(start), Max: ptr(limit)}); err != nil {
			d.problem("sequence %s is missing on the promoted node and could not be created again: %v", s.seq, err)
			continue
		}
		d.rep.Recreated = append(d.rep.Recreated, s.seq)
		d.log("dr: %s, created on the primary after the standby fell out, created again from %d", s.seq, start)
	}
}

// waitCertified waits until the primary's leader records the standby in
// sync and the standby holds its leader's certificate of that record (its
// own GET /v1/cluster shows it): a promotion may then trust the record for
// a loss before the certificate's time, and a disaster that follows starts
// from a standby that could be trusted.
func (d *dr) waitCertified(ctx context.Context) error {
	deadline := time.Now().Add(20 * time.Second)
	last := "no answer"
	for {
		if _, s, err := d.standbyStatus(ctx); err != nil {
			last = err.Error()
		} else if s.State != api.StandbyInSync {
			last = "standby " + s.State
		} else if st, err := d.c.status(ctx, d.sb); err != nil {
			last = err.Error()
		} else if c := st.Standby; c == nil || c.Certificate == nil {
			last = "the standby holds no certificate"
		} else if c.Certificate.InSyncIndex != s.SinceIndex {
			last = fmt.Sprintf("the standby's certificate is of index %d, its record of %d", c.Certificate.InSyncIndex, s.SinceIndex)
		} else {
			d.log("dr: standby %s certified in sync (index %d) until %s by %s", d.sb.ID, s.SinceIndex, c.Certificate.ValidUntil, c.Certificate.Leader)
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("standby before the disaster: not certified within 20s (last: %s)", last)
		}
		sleepCtx(ctx, 100*time.Millisecond)
	}
}

// serveOnWithoutIt waits until the primary's leader records the standby out
// of sync, and lets the primary serve on without it: 2 s of the workload
// and, with --dr-large, reservations of the largest count a client may ask
// through the leader, recorded like any other (more than the bound past
// what the standby stored).
func (d *dr) serveOnWithoutIt(ctx context.Context) error {
	if _, err := d.waitState(ctx, api.StandbyOutOfSync, 20*time.Second); err != nil {
		return fmt.Errorf("standby before the disaster: %w", err)
	}
	sleepCtx(ctx, 2*time.Second)
	for i := 0; i < d.cfg.DRLarge; i++ {
		if l, err := d.c.leader(ctx, 5*time.Second); err == nil {
			o := d.w.reserveOp(d.c, l, checker.Op{Worker: drWorker + 1, Seq: mainSeqs[0], Count: api.MaxReserveCount})
			d.log("dr: large reservation on %s: %s %d..%d", l.ID, o.Outcome, o.First, o.Last)
		}
	}
	return nil
}

// promote runs `ticketd promote` on the stopped standby's data dir with the
// time the primary was lost: first without --advance, which the tool must
// refuse for a standby not in sync, or cut off since before its horizon;
// then, if refused, with an advance the history justifies.
func (d *dr) promote(ctx context.Context) error {
	try := func(advance int64) drPromote {
		// The operator says when the primary was lost; promote trusts
		// the standby's in-sync record only if that was before its
		// horizon (the latest time the primary's leader certified it
		// would not go on without it, less the clock skew). Every
		// process here reads one clock, so the skew allowed is small
		// beside the standby's timeout.
		args := []string{"promote", "--data-dir", d.sb.proc.dataDir, "--id", d.sb.ID,
			"--primary-lost-at", d.lostAt.UTC().Format(time.RFC3339Nano), "--max-clock-skew", drMaxClockSkew.String()}
		if advance > 0 {
			args = append(args, "--advance", fmt.Sprint(advance))
		}
		if d.cfg.DRFault != "" {
			args = append(args, "--unsafe-fault", d.cfg.DRFault)
		}
		out, err := runBrief(d.pb.bin, args...)
		p := drPromote{Args: args, Output: strings.TrimSpace(out)}
		if err != nil {
			p.ExitCode, p.Refused = 1, true
			var ee interface{ ExitCode() int }
			if errors.As(err, &ee) {
				p.ExitCode = ee.ExitCode()
			}
		}
		d.rep.Promotes = append(d.rep.Promotes, p)
		d.log("dr: ticketd %s: exit %d: %s", strings.Join(args, " "), p.ExitCode, p.Output)
		return p
	}
	first := try(0)
	if d.rep.StateAtKill == api.StandbyOutOfSync && !first.Refused {
		d.log("dr: ticketd promote accepted without --advance a standby the primary's leader had recorded out of sync")
	}
	if !first.Refused {
		// The standby's own log decides: a standby cut off never
		// receives the entry that records it out of sync.
		d.rep.Advance, d.rep.AdvanceWhy = drBound, "accepted without --advance: the standby's bound (its own log records it in sync)"
		return nil
	}
	if !strings.Contains(first.Output, "nothing was changed") {
		d.problem("ticketd promote refused without saying that nothing was changed: %s", first.Output)
	}
	adv, why := justifiedAdvance(d.rec.snapshot(), drBound)
	d.rep.Advance, d.rep.AdvanceWhy = adv, why
	if second := try(adv); second.Refused {
		d.problem("ticketd promote --advance %d refused: %s", adv, second.Output)
		return fmt.Errorf("promotion refused")
	}
	return nil
}

// justifiedAdvance is an advance that covers anything the primary can have
// served past the standby: above every ID the history saw acknowledged or a
// read show (each mark is at least 1, so mark + advance lies above them), and
// never below the bound (the tool's minimum).
func justifiedAdvance(ops []checker.Op, bound int64) (int64, string) {
	var top int64
	for i := range ops {
		o := &ops[i]
		if o.Cluster != "" || o.Outcome != checker.OK {
			continue
		}
		switch o.F {
		case checker.FReserve, checker.FNext:
			top = max(top, o.Last)
		case checker.FRead, checker.FRaise:
			top = max(top, o.Next)
		}
	}
	if top+1 <= bound {
		return bound, fmt.Sprintf("the bound %d: every ID acknowledged or read so far is at most %d", bound, top)
	}
	return top + 1, fmt.Sprintf("one above the highest ID acknowledged or read so far (%d), above the bound %d", top, bound)
}

// fenceCheck starts the old primary again on its data: it must find its
// standby promoted, fence itself and serve nothing. Its answers to
// reservations are recorded like any other (an ok one would be checked).
func (d *dr) fenceCheck(ctx context.Context) {
	f := &drFence{Statuses: map[int]int{}}
	d.rep.Fence = f
	t0 := d.rec.now()
	for _, n := range d.old {
		n.mu.Lock()
		if n != d.joined {
			n.Boot = bootInitial // the joined voter restarts by its --join
		}
		if d.joined != nil && n != d.joined {
			// The voter that joined after the cut must lead the old
			// region: the others campaign ten times slower.
			n.ExtraArgs = []string{"--heartbeat-timeout", (10 * d.cfg.Heartbeat).String(), "--election-timeout", (10 * d.cfg.Election).String()}
		}
		n.mu.Unlock()
		if err := d.c.b.start(ctx, n, d.c.initial); err != nil {
			d.problem("restart old primary %s: %v", n.ID, err)
		}
	}
	if d.joined != nil {
		d.waitJoinedLeads(ctx)
	}
	deadline := time.Now().Add(20 * time.Second)
	for f.FencedNode == "" && time.Now().Before(deadline) && ctx.Err() == nil {
		for _, n := range d.old {
			if st, err := d.c.status(ctx, n); err == nil && st.Fence != nil {
				f.FencedNode, f.FencedMs, f.Reason = n.ID, d.ms(d.rec.now()-t0), st.Fence.Reason
				break
			}
		}
		sleepCtx(ctx, 200*time.Millisecond)
	}
	if f.FencedNode == "" {
		d.problem("the old primary reported no fence within 20 s of its restart")
	} else {
		d.log("dr: old primary fenced (%s) %.1fs after its restart: %s", f.FencedNode, f.FencedMs/1000, f.Reason)
	}
	for round := 0; round < 5 && ctx.Err() == nil; round++ {
		for _, n := range d.old {
			o := d.w.reserveOp(d.c, n, checker.Op{Worker: drWorker, Seq: mainSeqs[round%len(mainSeqs)], Count: 10})
			f.Probes++
			f.Statuses[o.Status]++
			if o.Outcome == checker.OK {
				f.ProbesOK++
			}
		}
		sleepCtx(ctx, 200*time.Millisecond)
	}
	if f.ProbesOK > 0 {
		d.problem("the old primary acknowledged %d of %d reservations after its standby was promoted", f.ProbesOK, f.Probes)
	}
	for _, n := range d.old {
		_ = d.c.kill(n, syscall.SIGKILL)
	}
}

// finish adds what the checkers found to the report.
func (d *dr) finish(res *checker.Results, info *runInfo) *drReport {
	ops := d.rec.snapshot()
	d.rep.After = promotedFigures(ops, d.sb.ID)
	d.rep.Leases = d.leaseFigures(ops)
	if from := d.rep.After.FirstMs; from > 0 {
		if info.StoppedOnViolation && info.DetectedAtMs >= from {
			d.rep.TimeToCatchMs = info.DetectedAtMs - from
		}
		if !res.Uniqueness.Valid && res.Uniqueness.FirstSeenMs >= from {
			d.rep.FirstDupMs = res.Uniqueness.FirstSeenMs - from
		}
	}
	return &d.rep
}

// leaseFigures counts the leases on both sides of the promotion
// (drLeases). A release counts as it does in checker.CheckLeases: one
// refused or never sent released nothing.
func (d *dr) leaseFigures(ops []checker.Op) drLeases {
	var f drLeases
	kill, serving := int64(d.rep.KillMs*1e6), int64(d.rep.ServingMs*1e6)
	released := map[string]bool{}
	for i := range ops {
		if o := &ops[i]; o.F == checker.FRelease && o.Outcome != checker.Fail && o.Invoke < kill {
			released[o.RequestID] = true
		}
	}
	_, ttl := d.cfg.leaseTTLs()
	held := map[string]bool{}
	for i := range ops {
		o := &ops[i]
		ok := o.Outcome == checker.OK && o.Malformed == ""
		switch {
		case o.F == checker.FAcquire && o.Node == d.sb.ID && serving > 0 && o.Invoke >= serving:
			if ok {
				f.GrantedAfter++
				if at := d.ms(o.Complete - serving); f.FirstGrantMs == 0 || at < f.FirstGrantMs {
					f.FirstGrantMs = at
				}
			} else if o.Outcome == checker.Fail && o.Status != 0 {
				f.RefusedAfter++
			}
		case o.F == checker.FAcquire && ok && d.cutAt > 0 && o.Complete > d.cutAt && o.Complete < kill && o.Node != d.sb.ID:
			f.PastCut++
			if !released[o.RequestID] && o.Invoke+ttl*1e6 > kill && !held[o.RequestID] {
				held[o.RequestID] = true
				f.HeldAtLoss++
			}
		case o.F == checker.FSFLease && d.cutAt > 0 && o.Complete > d.cutAt && o.Complete < kill && !strings.HasPrefix(o.Session, "sfp"):
			f.SFPastCut++
		case o.F == checker.FSFLease && strings.HasPrefix(o.Session, "sfp") && o.LeaseWorker != nil && *o.LeaseWorker >= 0 && serving > 0:
			if at := d.ms(o.Complete - serving); f.SFFirstMs == 0 || at < f.SFFirstMs {
				f.SFFirstMs = at
			}
		}
	}
	return f
}

// promotedFigures counts the ranges node acknowledged: the standby
// acknowledges none, so they are all the promoted node's.
func promotedFigures(ops []checker.Op, node string) drFigures {
	var f drFigures
	first := int64(-1)
	for i := range ops {
		o := &ops[i]
		if o.IsRange() && o.Node == node {
			f.Ranges++
			f.IDs += o.Last - o.First + 1
			if first < 0 || o.Complete < first {
				first = o.Complete
			}
		}
	}
	if first >= 0 {
		f.FirstMs = float64(first) / 1e6
	}
	return f
}

// summary is the report's lines for run.log.
func (r *drReport) summary() []string {
	out := []string{fmt.Sprintf("dr: standby %s (timeout %s), %d cuts, state flips %d, disaster %s (standby %s at the kill)",
		r.Standby, r.StandbyTimeout, r.Cuts, len(r.Flips), r.Disaster, orDash(r.StateAtKill))}
	for _, p := range r.Promotes {
		out = append(out, fmt.Sprintf("dr: ticketd %s -> exit %d", strings.Join(p.Args, " "), p.ExitCode))
	}
	if r.ServingMs > 0 {
		planted := ""
		switch r.Fault {
		case "":
		case "promote-without-advance":
			planted = ", but planted " + r.Fault + ": no mark raised"
		default:
			planted = ", planted " + r.Fault
		}
		out = append(out, fmt.Sprintf("dr: advance %d (%s%s); promoted serving %.1fs after the kill; after promotion %d ranges, %d IDs",
			r.Advance, orDash(r.AdvanceWhy), planted, (r.ServingMs-r.KillMs)/1000, r.After.Ranges, r.After.IDs))
	}
	if l := r.Leases; l.PastCut+l.SFPastCut+l.GrantedAfter+l.RefusedAfter > 0 || l.SFFirstMs > 0 {
		out = append(out, fmt.Sprintf("dr: leases: past the cut %d raw (%d held at the loss) and %d Snowflake; the promoted node refused %d acquires and granted %d (first %.1fs after it served; first promoted-region Snowflake lease %.1fs after)",
			l.PastCut, l.HeldAtLoss, l.SFPastCut, l.RefusedAfter, l.GrantedAfter, l.FirstGrantMs/1000, l.SFFirstMs/1000))
	}
	if f := r.Fence; f != nil {
		out = append(out, fmt.Sprintf("dr: old primary restarted: fenced %s after %.1fs; %d of %d reservations acknowledged (statuses %v)",
			orDash(f.FencedNode), f.FencedMs/1000, f.ProbesOK, f.Probes, f.Statuses))
	}
	switch {
	case r.FirstDupMs > 0:
		out = append(out, fmt.Sprintf("dr: time to catch %.1fs (first duplicate visible %.1fs after the promoted node's first acknowledged range)", r.TimeToCatchMs/1000, r.FirstDupMs/1000))
	case r.TimeToCatchMs > 0:
		out = append(out, fmt.Sprintf("dr: time to catch %.1fs after the promoted node's first acknowledged range", r.TimeToCatchMs/1000))
	}
	for _, p := range r.Problems {
		out = append(out, "dr: PROBLEM: "+p)
	}
	if r.Incomplete != "" {
		out = append(out, "dr: INCOMPLETE: "+r.Incomplete)
	}
	return out
}

// promoteFaults are ticketd promote's planted bugs: the promotion raises
// no mark; or, with --advance, keeps the leases it holds and rests no
// namespace (the rule before issue 42).
var promoteFaults = []string{"promote-without-advance", "promote-keeps-leases"}

// splitPromoteFault takes promoteFaults out of a --fault list: they are
// passed to ticketd promote, not to the nodes (serve refuses them).
func splitPromoteFault(faults string) (serve, promote string) {
	var rest, prom []string
	for _, f := range strings.Split(faults, ",") {
		switch f = strings.TrimSpace(f); {
		case f == "":
		case slices.Contains(promoteFaults, f):
			prom = append(prom, f)
		default:
			rest = append(rest, f)
		}
	}
	return strings.Join(rest, ","), strings.Join(prom, ",")
}

// checkDRKinds refuses a nemesis a DR run cannot use: the same faults to
// processes and links as an upgrade run. Membership changes and wiped disks
// would make the standby's primary a moving target for the harness's model
// (its join URLs, the old primary it restarts), and the clock nemesis needs
// the faults build on every node.
func checkDRKinds(kinds []string) error {
	for _, k := range kinds {
		if !slices.Contains(upgradeKinds, k) {
			return fmt.Errorf("--dr: nemesis %s cannot run in a DR run (allowed: %s)", k, strings.Join(upgradeKinds, ", "))
		}
	}
	return nil
}

// drWorkload keeps the workers whose promise the promotion keeps —
// reservations (raw, small and many sequences) and reads by its advance;
// raw lease workers (they follow the members to the promoted node) and
// Snowflake generators (the primary's, and after the promotion the
// promoted region's) by its rest — and turns off the others: raises (a
// raise is not held for the standby, so one further above the mark than
// the bound is not covered), the SDK sequence users (their clients know
// only the primary's nodes, and nothing of theirs lasts past the loss as a
// lease does), the server-made Snowflake IDs (their checker reads every
// node's audit, the lost ones' included), and the migration (a run of its
// own).
func (c *config) drWorkload() {
	c.Migration = false
	c.RaiseWorkers, c.SDKWorkers = 0, 0
	c.ServerSnowflakeWorkers, c.ServerSnowflakeLeaseWorkers = 0, 0
}
