// Command conformance is the conformance harness of ticketd's client
// libraries (issue 33): it starts a real 3-node cluster of ticketd
// processes with authentication on, runs one language's driver (see
// PROTOCOL.md) under several concurrent lanes while it kills, pauses, partitions and
// restarts nodes, then checks the recorded history (check.go) and prints a
// report. Exit 0: VALID; 1: a violation; 2: the run could not be made
// (a cluster or driver that did not start). With --expect-fail, 0 and 1
// swap, so CI can require a planted bug to be caught; 2 stays 2.
//
// Usage (from the repository):
//
//	go run ./clients/conformance [flags] --driver PATH [-- driver args…]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ticketd/ticketd/client"
	"github.com/ticketd/ticketd/internal/proc"
)

const (
	seqName = "conf" // the one sequence: two handles and reserve share it
	nsName  = "conf" // the one Snowflake namespace
	// maxEvents bounds the history (and the harness's memory): lanes stop
	// once it is reached.
	maxEvents = 200_000
)

type config struct {
	driver     string
	driverArgs []string
	name       string
	plant      string
	expectFail bool
	ticketd    string
	attempt    time.Duration
	call       time.Duration
	allowance  time.Duration
	ready      time.Duration
	keep       bool
	unordered  bool
	fork       bool
}

func main() {
	var cfg config
	flag.StringVar(&cfg.driver, "driver", "", "the driver to run (any executable speaking PROTOCOL.md); its arguments follow --")
	flag.StringVar(&cfg.name, "name", "", "the language's name in the report (default: the driver's ready line)")
	flag.StringVar(&cfg.plant, "plant", "", "a planted bug for the driver to switch on (TICKETD_CONFORMANCE_PLANT)")
	flag.BoolVar(&cfg.expectFail, "expect-fail", false, "succeed only if the run finds a violation (for planted bugs)")
	flag.StringVar(&cfg.ticketd, "ticketd", "", "a ticketd binary to run (default: build ./cmd/ticketd)")
	flag.DurationVar(&cfg.attempt, "attempt-timeout", time.Second, "the library's timeout of one HTTP attempt")
	flag.DurationVar(&cfg.call, "call-timeout", 4*time.Second, "the library's bound on one call, retries included")
	flag.DurationVar(&cfg.allowance, "allowance", 2*time.Second, "added to the call timeout for the bound on one answer: scheduling on a busy machine")
	flag.DurationVar(&cfg.ready, "ready-timeout", 60*time.Second, "how long the driver may take to say ready")
	flag.BoolVar(&cfg.keep, "keep", false, "keep the run's directory (data, logs, driver's stderr)")
	flag.BoolVar(&cfg.unordered, "unordered", false, "open the sequence handles h1 and h2 in unordered mode (PROTOCOL.md): IDs unique, not ordered across answers")
	flag.BoolVar(&cfg.fork, "fork", false, "add lane 10: the driver forks its process and the child takes IDs from its copy of h1 or s1 (PROTOCOL.md's fork), for languages that fork")
	flag.Parse()
	cfg.driverArgs = flag.Args()
	if cfg.driver == "" {
		fmt.Fprintln(os.Stderr, "conformance: --driver is required")
		flag.Usage()
		os.Exit(2)
	}
	os.Exit(run(cfg))
}

func adminClient(c *cluster) (*client.Client, error) {
	return client.New(c.urls(), client.WithBearerToken(c.adminTok), client.WithTimeout(2*time.Second))
}

func sequenceSettings() client.SequenceSettings { return client.SequenceSettings{} }

// harness is one run: the cluster, the driver, the history.
type harness struct {
	cfg   config
	t0    time.Time
	c     *cluster
	d     *driverProc
	bound time.Duration

	loadStart time.Time // when the lanes started: "caught after" counts from here

	mu       sync.Mutex
	events   []Event
	timeline []string
}

func (h *harness) note(format string, args ...any) {
	line := fmt.Sprintf("%7s  ", "+"+time.Since(h.t0).Round(100*time.Millisecond).String()) + fmt.Sprintf(format, args...)
	h.mu.Lock()
	h.timeline = append(h.timeline, line)
	h.mu.Unlock()
	fmt.Fprintln(os.Stderr, "conformance:", line)
}

// cmd is one command of a lane, with what the checks need to know of it.
type cmd struct {
	op, handle, target string
	n                  int64
	text               string        // after the lane
	pause              time.Duration // after the answer; 0: the lanes' default
}

// do sends one command and records it.
func (h *harness) do(lane string, c cmd) Event {
	wait := h.bound + 5*time.Second // past the bound: an answer that late is a failure, no answer is another
	e := h.d.call(lane, lane+" "+c.text, wait)
	e.Op, e.Handle, e.Target, e.N = c.op, c.handle, c.target, c.n
	if !e.Recv.IsZero() {
		e.Parse()
	}
	h.mu.Lock()
	h.events = append(h.events, e)
	h.mu.Unlock()
	return e
}

func (h *harness) full() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.events) >= maxEvents
}

// forkPause is lane 10's pause between forks: a fork copies the driver's
// process and its child reserves its own range, far more than a next.
const forkPause = 100 * time.Millisecond

// partitionFor is how long the partition fault keeps the old leader cut
// off: ten election timeouts, so that the majority's new leader serves a
// while before the old one is back.
const partitionFor = 3 * time.Second

// lanes are the load: each gives the i-th command of its lane. With fork,
// lane 10 forks the driver, whose child takes IDs from its copy of h1 or s1.
func lanes(fork bool) map[string]func(i int) cmd {
	seq, ns := "seq:"+seqName, "ns:"+nsName
	next := func(hd string) func(int) cmd {
		return func(int) cmd { return cmd{"next", hd, seq, 1, "next " + hd, 0} }
	}
	all := map[string]func(int) cmd{
		// Four lanes share h1: the handle must be safe under many threads.
		"1": next("h1"), "2": next("h1"), "3": next("h1"), "4": next("h1"),
		// A hungry nextn lane on h1 too: 50,000 IDs a call drive the
		// cache's rate up until each range lasts about a second, so a
		// refill is in flight during every fault and must survive it.
		"5": func(int) cmd { return cmd{"nextn", "h1", seq, 50_000, "nextn h1 50000", 0} },
		// A second handle of the same sequence: never overlaps h1.
		"6": func(i int) cmd {
			if i%4 == 3 {
				n := int64(1 + i%100)
				return cmd{"nextn", "h2", seq, n, fmt.Sprintf("nextn h2 %d", n), 0}
			}
			return cmd{"next", "h2", seq, 1, "next h2", 0}
		},
		// Uncached reservations of the same sequence.
		"7": func(i int) cmd {
			n := int64(1 + i%100)
			return cmd{"reserve", "", seq, n, fmt.Sprintf("reserve %s %d", seqName, n), 0}
		},
		// Two lanes share the Snowflake handle s1.
		"8": func(i int) cmd {
			if i%2 == 1 {
				return cmd{"snextn", "s1", ns, 10, "snextn s1 10", 0}
			}
			return cmd{"snext", "s1", ns, 1, "snext s1", 0}
		},
		"9": func(i int) cmd {
			n := int64(1 + i%50)
			return cmd{"snextn", "s1", ns, n, fmt.Sprintf("snextn s1 %d", n), 0}
		},
	}
	if fork {
		// While lanes 1-9 use h1 and s1 in the parent: its cached ranges,
		// prefetched IDs, connections and refills in flight are all in the
		// child's copy, which must hand out none of them.
		all["10"] = func(i int) cmd {
			if i%2 == 0 {
				return cmd{"fork", "h1", seq, 100, "fork h1 100", forkPause}
			}
			return cmd{"fork", "s1", ns, 20, "fork s1 20", forkPause}
		}
	}
	return all
}

// runLane sends the lane's commands one after another until stop.
func (h *harness) runLane(lane string, gen func(int) cmd, stop <-chan struct{}) {
	for i := 0; !h.full(); i++ {
		select {
		case <-stop:
			return
		default:
		}
		c := gen(i)
		e := h.do(lane, c)
		if e.Recv.IsZero() {
			return // no answer: a late one would be read as the next command's
		}
		// A short pause keeps 9 lanes from saturating two cores; a longer
		// one after an error keeps a failing lane from spinning.
		pause := 2 * time.Millisecond
		if c.pause > 0 {
			pause = c.pause
		}
		if !e.OK {
			pause = 50 * time.Millisecond
		}
		select {
		case <-stop:
			return
		case <-time.After(pause):
		}
	}
}

// errDriverGone: the driver closed its stdout mid-run. The faults stop
// there; the run goes on to its checks, where the missing answers fail it.
var errDriverGone = errors.New("the driver is gone")

// sleep waits d, or less if the driver is gone.
func (h *harness) sleep(d time.Duration) {
	select {
	case <-time.After(d):
	case <-h.d.gone:
	}
}

func (h *harness) driverGone() bool {
	select {
	case <-h.d.gone:
		return true
	default:
		return false
	}
}

// nemesis runs the faults in order, each followed by a pause for the
// cluster and the library to recover. It returns when every node is back
// and ready after the last fault.
func (h *harness) nemesis() error {
	const pause = 3 * time.Second
	c := h.c
	restart := func(n *node) error {
		if err := c.start(n); err != nil {
			return err
		}
		h.note("started %s again", n.id)
		return nil
	}
	ready := func() error {
		if h.driverGone() {
			return errDriverGone
		}
		if err := c.waitReady(30 * time.Second); err != nil {
			return err
		}
		h.note("every node ready")
		return nil
	}

	// 1. SIGKILL the leader, restart it.
	l, err := c.leader(10 * time.Second)
	if err != nil {
		return err
	}
	if err := c.stop(l, syscall.SIGKILL); err != nil {
		return err
	}
	h.note("SIGKILL %s (leader)", l.id)
	h.sleep(2 * time.Second)
	if err := restart(l); err != nil {
		return err
	}
	if err := ready(); err != nil {
		return err
	}
	h.sleep(pause)

	// 2. SIGSTOP the leader past an election (300 ms timeouts), SIGCONT.
	if l, err = c.leader(10 * time.Second); err != nil {
		return err
	}
	if err := c.signal(l, syscall.SIGSTOP); err != nil {
		return err
	}
	h.note("SIGSTOP %s (leader)", l.id)
	h.sleep(2500 * time.Millisecond)
	if err := c.signal(l, syscall.SIGCONT); err != nil {
		return err
	}
	h.note("SIGCONT %s", l.id)
	if err := ready(); err != nil {
		return err
	}
	h.sleep(pause)

	// 3. Cut the leader off from its peers, both ways (Raft and probes),
	// for partitionFor, while clients still reach its HTTP API: until its
	// leader lease runs out it does not know it was deposed, and the
	// library meets a node that accepts calls it cannot serve while the
	// other two elect a new leader.
	if l, err = c.leader(10 * time.Second); err != nil {
		return err
	}
	c.links.isolate(l.id)
	h.note("partition: %s (leader) cut off from its peers, reachable by clients", l.id)
	cutAt := time.Now()
	nl, err := c.leaderOtherThan(l, 10*time.Second)
	if err != nil {
		c.links.heal()
		return fmt.Errorf("partition: %w", err)
	}
	h.note("partition: %s leads the majority", nl.id)
	h.sleep(partitionFor - time.Since(cutAt))
	refused := c.links.heal()
	h.note("partition healed (%d connections refused for want of a known dialer)", refused)
	if err := ready(); err != nil {
		return err
	}
	h.sleep(pause)

	// 4. Restart every node in turn (SIGTERM, start).
	for _, n := range c.nodes {
		if err := c.stop(n, syscall.SIGTERM); err != nil {
			return err
		}
		h.note("SIGTERM %s: exited", n.id)
		if err := restart(n); err != nil {
			return err
		}
		if err := ready(); err != nil {
			return err
		}
	}
	h.sleep(pause)

	// 5. SIGKILL a follower, restart it.
	if l, err = c.leader(10 * time.Second); err != nil {
		return err
	}
	var f *node
	for _, n := range c.nodes {
		if n != l {
			f = n
			break
		}
	}
	if err := c.stop(f, syscall.SIGKILL); err != nil {
		return err
	}
	h.note("SIGKILL %s (follower)", f.id)
	h.sleep(2 * time.Second)
	if err := restart(f); err != nil {
		return err
	}
	if err := ready(); err != nil {
		return err
	}
	h.sleep(pause)

	// 6. No quorum for longer than a call: SIGKILL the leader and a
	// follower, so that calls and background refills fail with
	// unavailable, and the library must take up again by itself.
	if l, err = c.leader(10 * time.Second); err != nil {
		return err
	}
	two := []*node{l}
	for _, n := range c.nodes {
		if n != l && len(two) < 2 {
			two = append(two, n)
		}
	}
	for _, n := range two {
		if err := c.stop(n, syscall.SIGKILL); err != nil {
			return err
		}
	}
	h.note("SIGKILL %s and %s (no quorum for %v)", two[0].id, two[1].id, h.cfg.call+time.Second)
	h.sleep(h.cfg.call + time.Second)
	for _, n := range two {
		if err := restart(n); err != nil {
			return err
		}
	}
	return ready()
}

// setupFailure ends a run that could not be made: exit 2 in both modes.
func (h *harness) setupFailure(err error) int {
	fmt.Printf("SETUP FAILED (no verdict): %v\n", err)
	if h.d != nil {
		fmt.Printf("--- driver stderr (last 40 lines) ---\n%s\n", h.d.stderrTail(40))
	}
	if h.c != nil {
		fmt.Print(h.c.tails(20))
	}
	return 2
}

func run(cfg config) int {
	dir, err := os.MkdirTemp("", "ticketd-conformance-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if cfg.keep {
		fmt.Fprintln(os.Stderr, "conformance: run directory", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	h := &harness{cfg: cfg, t0: time.Now(), bound: cfg.call + cfg.allowance}

	bin := cfg.ticketd
	if bin == "" {
		root, err := proc.ModuleRoot()
		if err != nil {
			return h.setupFailure(err)
		}
		bin = filepath.Join(dir, "ticketd")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		err = proc.Build(ctx, root, bin)
		cancel()
		if err != nil {
			return h.setupFailure(err)
		}
	}
	h.c, err = newCluster(bin, dir)
	if err != nil {
		return h.setupFailure(err)
	}
	defer h.c.killAll()
	// Ctrl-C or a CI timeout: leave no node or driver behind.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		if h.d != nil {
			h.d.kill()
		}
		h.c.killAll()
		os.Exit(2)
	}()
	for _, n := range h.c.nodes {
		if err := h.c.start(n); err != nil {
			return h.setupFailure(err)
		}
	}
	if err := h.c.waitReady(30 * time.Second); err != nil {
		return h.setupFailure(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	err = h.c.setup(ctx, seqName, nsName)
	cancel()
	if err != nil {
		return h.setupFailure(err)
	}
	h.note("cluster of 3 up (tokens on), sequence %q and namespace %q made", seqName, nsName)

	driverPath := cfg.driver
	env := []string{
		"TICKETD_ADDR=" + strings.Join(h.c.urls(), ","),
		"TICKETD_TOKEN=" + h.c.resTok, // reserve scope: all the lanes need
		fmt.Sprintf("TICKETD_CONFORMANCE_CALL_TIMEOUT_MS=%d", cfg.call.Milliseconds()),
		fmt.Sprintf("TICKETD_CONFORMANCE_ATTEMPT_TIMEOUT_MS=%d", cfg.attempt.Milliseconds()),
		"TICKETD_CONFORMANCE_PLANT=" + cfg.plant,
	}
	h.d, err = startDriver(driverPath, cfg.driverArgs, dir, env)
	if err != nil {
		return h.setupFailure(err)
	}
	defer h.d.kill()
	readyLine, err := h.d.waitReady(cfg.ready)
	if err != nil {
		return h.setupFailure(err)
	}
	if h.cfg.name == "" {
		h.cfg.name = strings.TrimPrefix(readyLine, "ready ")
	}
	h.note("driver: %s", readyLine)

	// The handles, each made by the lane that first uses it.
	seq, ns := "seq:"+seqName, "ns:"+nsName
	open := "open %s " + seqName
	var unordered []string
	if cfg.unordered {
		open += " unordered"
		unordered = []string{"h1", "h2"}
	}
	for _, o := range []struct{ lane, text, handle, target string }{
		{"1", fmt.Sprintf(open, "h1"), "h1", seq},
		{"6", fmt.Sprintf(open, "h2"), "h2", seq},
		{"8", "snowflake s1 " + nsName, "s1", ns},
	} {
		op, _, _ := strings.Cut(o.text, " ")
		e := h.do(o.lane, cmd{op, o.handle, o.target, 0, o.text, 0})
		if e.Kind == "unsupported" {
			// The library has no such mode: nothing to judge, not a bug.
			return h.setupFailure(fmt.Errorf("the driver does not support %q: %s", o.text, show(e)))
		}
		if !e.OK {
			return h.report(Run{}, fmt.Sprintf("%s failed: %s", o.text, show(e)))
		}
	}

	if cfg.fork {
		// One fork before the load: a library that cannot fork says so
		// here, and the run ends without a verdict, as for a mode.
		e := h.do("10", cmd{"fork", "h1", seq, 1, "fork h1 1", 0})
		if e.Kind == "unsupported" {
			return h.setupFailure(fmt.Errorf("the driver does not support fork: %s", show(e)))
		}
		if !e.OK {
			return h.report(Run{}, "fork h1 1 failed: "+show(e))
		}
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	h.loadStart = time.Now()
	ls := lanes(cfg.fork)
	for lane, gen := range ls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.runLane(lane, gen, stop)
		}()
	}
	h.note("load: %d lanes", len(ls))
	h.sleep(3 * time.Second)
	var recovered time.Time // stays zero if the run never got there
	if err := h.nemesis(); errors.Is(err, errDriverGone) {
		h.note("the driver closed its stdout: faults stopped")
	} else if err != nil {
		close(stop)
		wg.Wait()
		return h.setupFailure(fmt.Errorf("nemesis: %w", err))
	}
	if !h.driverGone() {
		recovered = time.Now()
	}
	h.note("faults over, every node back: recovery phase (%v)", h.bound+4*time.Second)
	h.sleep(h.bound + 4*time.Second)
	close(stop)
	recoveryEnd := time.Now()
	wg.Wait()
	h.note("load stopped")

	e := h.do("0", cmd{"close", "", "", 0, "close", 0})
	closeAns := ""
	if e.OK && e.Bad == "" {
		closeAns = strings.TrimPrefix(e.Answer, "0 ok ")
	}
	exit := h.d.finish(10 * time.Second)
	h.note("close: %q; driver: %s", e.Answer, exit)

	h.mu.Lock()
	r := Run{Events: h.events, Bound: h.bound, Recovered: recovered, RecoveryEnd: recoveryEnd,
		Handles: []string{"h1", "h2", "s1"}, Unordered: unordered, Close: closeAns, Exit: exit, Stray: h.d.strays()}
	h.mu.Unlock()
	return h.report(r, "")
}

// report prints the run's summary and verdict and returns the exit code.
func (h *harness) report(r Run, early string) int {
	fails := []Failure{}
	if early != "" {
		fails = append(fails, Failure{Check: "setup of handles", Detail: early})
	} else {
		fails = Check(r)
	}
	fmt.Printf("conformance: %s, %s (plant %q), bound %v = call %v + allowance %v, attempt %v\n",
		h.cfg.name, h.mode(), h.cfg.plant, h.bound, h.cfg.call, h.cfg.allowance, h.cfg.attempt)
	type stat struct {
		ops, ids int64
		errs     map[string]int
		maxLat   time.Duration
		what     map[string]bool
	}
	stats := map[string]*stat{}
	for _, e := range r.Events {
		s := stats[e.Lane]
		if s == nil {
			s = &stat{errs: map[string]int{}, what: map[string]bool{}}
			stats[e.Lane] = s
		}
		s.ops++
		s.what[e.Op+" "+e.Handle] = true
		for _, x := range e.IDs {
			s.ids += x.Last - x.First + 1
		}
		if !e.OK && !e.Recv.IsZero() {
			s.errs[e.Kind]++
		}
		if !e.Recv.IsZero() {
			s.maxLat = max(s.maxLat, e.Recv.Sub(e.Sent))
		}
	}
	ids := make([]string, 0, len(stats))
	for l := range stats {
		ids = append(ids, l)
	}
	sort.Strings(ids)
	fmt.Printf("%-5s %-34s %8s %14s %10s  %s\n", "lane", "ops", "commands", "IDs", "max wait", "errors")
	for _, l := range ids {
		s := stats[l]
		var what, errs []string
		for w := range s.what {
			what = append(what, strings.TrimSpace(w))
		}
		sort.Strings(what)
		for k, v := range s.errs {
			errs = append(errs, fmt.Sprintf("%s %d", k, v))
		}
		sort.Strings(errs)
		fmt.Printf("%-5s %-34s %8d %14d %10v  %s\n", l, strings.Join(what, ","), s.ops, s.ids, s.maxLat.Round(time.Millisecond), strings.Join(errs, ", "))
	}
	fmt.Println("timeline:")
	h.mu.Lock()
	for _, t := range h.timeline {
		fmt.Println("  " + t)
	}
	h.mu.Unlock()

	if len(fails) == 0 {
		fmt.Printf("VALID (%s)\n", h.mode())
		if h.cfg.expectFail {
			fmt.Println("--expect-fail: the run found no violation, but one was expected")
			return 1
		}
		return 0
	}
	fmt.Printf("INVALID (%s): %d failures\n", h.mode(), len(fails))
	per := map[string]int{}
	first := map[string]time.Time{} // per check, the earliest moment the history showed it
	for _, f := range fails {
		if per[f.Check]++; per[f.Check] <= 5 {
			fmt.Println("  " + f.String())
		}
		if !f.At.IsZero() && (first[f.Check].IsZero() || f.At.Before(first[f.Check])) {
			first[f.Check] = f.At
		}
	}
	for k, v := range per {
		if v > 5 {
			fmt.Printf("  … and %d more of %s\n", v-5, k)
		}
	}
	var caught []string
	for _, k := range sortedKeys(per) {
		if at := first[k]; !at.IsZero() && !h.loadStart.IsZero() {
			k += fmt.Sprintf(", first seen %v after the load started", at.Sub(h.loadStart).Round(time.Millisecond))
		}
		caught = append(caught, k)
	}
	fmt.Printf("caught: %s\n", strings.Join(caught, "; "))
	if h.cfg.expectFail {
		fmt.Printf("--expect-fail: caught, as expected (%s)\n", strings.Join(sortedKeys(per), ", "))
		return 0
	}
	fmt.Printf("--- driver stderr (last 40 lines) ---\n%s\n", h.d.stderrTail(40))
	fmt.Print(h.c.tails(20))
	return 1
}

// mode names the sequence handles' mode for the report.
func (h *harness) mode() string {
	m := "mode ordered"
	if h.cfg.unordered {
		m = "mode unordered (h1, h2 opened unordered)"
	}
	if h.cfg.fork {
		m += ", forking (lane 10)"
	}
	return m
}

func sortedKeys(m map[string]int) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
