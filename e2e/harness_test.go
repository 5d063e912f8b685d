package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/internal/proc"
	"github.com/ticketd/ticketd/internal/testkit"
)

// testTimings are the Raft timings every test node runs with: fast, but not
// so twitchy that a busy 2-core machine running the race detector flaps.
var testTimings = []string{
	"--dev", // authentication has its own tests
	"--heartbeat-timeout", "300ms",
	"--election-timeout", "300ms",
	"--leader-lease-timeout", "150ms",
	"--shutdown-timeout", "5s",
}

// node is one ticketd process, restartable with the same flags and
// environment on the same addresses and data dir.
type node struct {
	id       string
	dataDir  string
	httpAddr string
	raftAddr string
	args     []string // the whole command line after the binary, the same on every run
	env      []string // extra environment, the same on every run

	mu   sync.Mutex
	runs []*proc.Process // one per run, oldest first; the last is the current one
}

func (n *node) url() string { return "http://" + n.httpAddr }

// current is the node's current (or last) run, nil before the first start.
func (n *node) current() *proc.Process {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.runs) == 0 {
		return nil
	}
	return n.runs[len(n.runs)-1]
}

// running reports whether the node's current process is alive.
func (n *node) running() bool {
	p := n.current()
	return p != nil && p.Alive()
}

// lastLog is the output of the node's current (or last) run.
func (n *node) lastLog() string {
	if p := n.current(); p != nil {
		return p.Log()
	}
	return ""
}

// exitStatus describes how the current run ended ("" while it runs).
func (n *node) exitStatus() string {
	if p := n.current(); p != nil && p.State() != nil {
		return p.State().String()
	}
	return ""
}

// signal sends sig to the node's current process.
func (n *node) signal(sig syscall.Signal) error {
	p := n.current()
	if p == nil {
		return fmt.Errorf("%s was never started", n.id)
	}
	return p.Signal(sig)
}

// cluster is a set of ticketd processes of one test.
type cluster struct {
	t     *testing.T
	bin   string
	base  string
	mu    sync.Mutex
	nodes []*node
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	c := &cluster{t: t, bin: binary(t), base: t.TempDir()}
	// Cleanups run last-registered first: kill the processes, then print
	// their logs, then (TempDir's own cleanup) remove the data.
	t.Cleanup(c.dumpLogsOnFailure)
	t.Cleanup(c.killAll)
	return c
}

// freeAddrs returns k distinct 127.0.0.1 addresses that were free a moment
// ago. A node that then fails to bind is retried by start.
func freeAddrs(t *testing.T, k int) []string {
	t.Helper()
	addrs, err := proc.FreeAddrs(k)
	if err != nil {
		t.Fatal(err)
	}
	return addrs
}

// newNode declares a node with `ticketd serve` flags for its id, data dir
// and addresses, the test timings, and extra flags; it does not start it.
func (c *cluster) newNode(id, httpAddr, raftAddr string, extra ...string) *node {
	n := &node{id: id, dataDir: filepath.Join(c.base, "data", id), httpAddr: httpAddr, raftAddr: raftAddr}
	n.args = append([]string{"serve", "--id", id, "--data-dir", n.dataDir, "--http-addr", httpAddr, "--raft-addr", raftAddr}, testTimings...)
	n.args = append(n.args, extra...)
	c.track(n)
	return n
}

// track makes the cluster kill n and print its logs at the end of the test.
func (c *cluster) track(n *node) {
	c.mu.Lock()
	c.nodes = append(c.nodes, n)
	c.mu.Unlock()
}

// startStatic starts k nodes n1..nk bootstrapped from one --initial-cluster
// and waits until every one is ready.
func (c *cluster) startStatic(k int) []*node {
	c.t.Helper()
	addrs := freeAddrs(c.t, 2*k)
	var peers []string
	for i := 0; i < k; i++ {
		peers = append(peers, fmt.Sprintf("n%d=%s", i+1, addrs[2*i+1]))
	}
	initial := strings.Join(peers, ",")
	var nodes []*node
	for i := 0; i < k; i++ {
		nodes = append(nodes, c.newNode(fmt.Sprintf("n%d", i+1), addrs[2*i], addrs[2*i+1], "--initial-cluster", initial))
	}
	for _, n := range nodes {
		c.start(n)
	}
	c.waitReady(20*time.Second, nodes...)
	return nodes
}

// spawn starts one run of n's process, logging to a new file.
func (c *cluster) spawn(n *node) {
	c.t.Helper()
	n.mu.Lock()
	defer n.mu.Unlock()
	p, err := proc.Start(proc.Spec{Path: c.bin, Args: n.args, Env: n.env,
		Log: filepath.Join(c.base, "logs", fmt.Sprintf("%s.run%d.log", n.id, len(n.runs)+1))})
	if err != nil {
		c.t.Fatalf("start %s: %v", n.id, err)
	}
	n.runs = append(n.runs, p)
}

// start starts n and waits until its API answers /livez (which it does
// only after both its ports are bound). A port that is still taken, by a
// lingering socket or another test's client, is retried.
func (c *cluster) start(n *node) {
	c.t.Helper()
	const attempts = 20
	for i := 1; ; i++ {
		c.spawn(n)
		err := waitLive(n, 15*time.Second)
		if err == nil {
			return
		}
		if i < attempts && !n.running() && strings.Contains(n.lastLog(), "address already in use") {
			time.Sleep(250 * time.Millisecond)
			continue
		}
		c.t.Fatalf("start %s: %v", n.id, err)
	}
}

// waitLive polls /livez until it answers 200, the process exits, or the
// timeout passes.
func waitLive(n *node, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if !n.running() {
			return fmt.Errorf("process exited (%s)", n.exitStatus())
		}
		if code, _ := kit.Do(http.MethodGet, n.url()+"/livez", nil, nil); code == http.StatusOK {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("/livez did not answer 200 within %v", timeout)
}

// waitReady polls /readyz on every node until each answers 200.
func (c *cluster) waitReady(timeout time.Duration, nodes ...*node) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for _, n := range nodes {
		for {
			if !n.running() {
				c.t.Fatalf("%s exited while waiting for it to be ready (%s)", n.id, n.exitStatus())
			}
			if code, _ := kit.Do(http.MethodGet, n.url()+"/readyz", nil, nil); code == http.StatusOK {
				break
			}
			if time.Now().After(deadline) {
				c.t.Fatalf("%s not ready within %v", n.id, timeout)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// leader waits for a running node that reports itself leader in
// GET /v1/cluster (the one with the highest term if two do) and that is
// not excluded.
func (c *cluster) leader(timeout time.Duration, nodes []*node, exclude ...*node) *node {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var best *node
		var bestTerm uint64
		for _, n := range nodes {
			if !n.running() || slices.Contains(exclude, n) {
				continue
			}
			var st api.ClusterStatus
			if code, err := kit.Do(http.MethodGet, n.url()+"/v1/cluster", nil, &st); err != nil || code != http.StatusOK {
				continue
			}
			if st.State == "Leader" && st.Node == n.id && st.Term >= bestTerm {
				best, bestTerm = n, st.Term
			}
		}
		if best != nil {
			return best
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("no leader among the running nodes within %v", timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kill9 sends SIGKILL to n and waits for the process to be reaped.
func (c *cluster) kill9(nodes ...*node) {
	c.t.Helper()
	for _, n := range nodes {
		if n.running() {
			_ = n.signal(syscall.SIGKILL)
		}
	}
	for _, n := range nodes {
		if err := waitExit(n, 10*time.Second); err != nil {
			c.t.Fatalf("kill -9 %s: %v", n.id, err)
		}
	}
}

// sigterm sends SIGTERM to n and waits up to timeout for it to exit; it
// returns the exit code and how long the exit took.
func (c *cluster) sigterm(n *node, timeout time.Duration) (int, time.Duration) {
	c.t.Helper()
	p := n.current()
	start := time.Now()
	if err := n.signal(syscall.SIGTERM); err != nil {
		c.t.Fatalf("SIGTERM %s: %v", n.id, err)
	}
	if err := p.Wait(timeout); err != nil {
		_ = p.Signal(syscall.SIGKILL)
		<-p.Done()
		c.t.Fatalf("%s still running %v after SIGTERM; killed it", n.id, timeout)
	}
	return p.State().ExitCode(), time.Since(start)
}

// waitExit waits up to timeout for n's current process to exit; a node
// never started has nothing to wait for.
func waitExit(n *node, timeout time.Duration) error {
	p := n.current()
	if p == nil {
		return nil
	}
	return p.Wait(timeout)
}

// restart starts a stopped node again with the same flags and environment
// and checks that it resumed its Raft state rather than bootstrapping.
func (c *cluster) restart(n *node) {
	c.t.Helper()
	if n.running() {
		c.t.Fatalf("restart %s: still running", n.id)
	}
	c.start(n)
	c.checkResumed(n)
}

// checkResumed fails the test unless n's current run logged that it resumed
// the state in its data dir and did not bootstrap a new cluster.
func (c *cluster) checkResumed(n *node) {
	c.t.Helper()
	log := n.lastLog()
	if strings.Contains(log, "bootstrapping a new cluster") {
		c.t.Fatalf("%s bootstrapped a second time on restart", n.id)
	}
	if !strings.Contains(log, "data dir holds raft state; resuming it") {
		c.t.Fatalf("%s did not log that it resumed its data dir on restart", n.id)
	}
}

func (c *cluster) killAll() {
	c.mu.Lock()
	nodes := append([]*node(nil), c.nodes...)
	c.mu.Unlock()
	for _, n := range nodes {
		if n.running() {
			_ = n.signal(syscall.SIGKILL)
		}
	}
	for _, n := range nodes {
		if err := waitExit(n, 10*time.Second); err != nil {
			c.t.Errorf("cleanup: %s: %v", n.id, err)
		}
	}
}

// dumpLogsOnFailure prints the tail of every node's log of every run when
// the test failed, or always with TICKETD_E2E_LOGS=1 in the environment.
func (c *cluster) dumpLogsOnFailure() {
	if !c.t.Failed() && os.Getenv("TICKETD_E2E_LOGS") == "" {
		return
	}
	const tail = 40
	c.mu.Lock()
	nodes := append([]*node(nil), c.nodes...)
	c.mu.Unlock()
	for _, n := range nodes {
		n.mu.Lock()
		runs := append([]*proc.Process(nil), n.runs...)
		n.mu.Unlock()
		for _, p := range runs {
			lines := p.Tail(tail)
			c.t.Logf("--- %s (last %d lines) ---\n%s", filepath.Base(p.LogPath()), len(lines), strings.Join(lines, "\n"))
		}
	}
}

// kit is the one JSON-over-HTTP client of the tests (internal/testkit), for
// probes and one-off calls: short timeouts, no retries. An answer of any
// status is an answer; callers check the status.
var kit = testkit.Client{Timeout: 2 * time.Second}

// createSequence creates seq through n, retrying while the cluster settles.
func createSequence(t *testing.T, n *node, seq string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, err := kit.Do(http.MethodPut, n.url()+"/v1/sequences/"+seq, nil, nil)
		if err == nil && (code == http.StatusCreated || code == http.StatusOK) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("create %s via %s: %d %v", seq, n.id, code, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// reserveVia reserves count IDs through n, retrying 503s (whose outcome is
// unknown: a gap, never a duplicate) for a bounded time.
func reserveVia(t *testing.T, n *node, seq string, count int64) api.Range {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var r api.Range
		code, err := kit.Do(http.MethodPost, n.url()+"/v1/sequences/"+seq+"/ranges", api.ReserveRequest{Count: count}, &r)
		if err == nil && code == http.StatusOK {
			if r.Last-r.First+1 != count || r.First < 1 || r.Sequence != seq {
				t.Fatalf("reserve %d via %s: bad range %+v", count, n.id, r)
			}
			return r
		}
		if code != http.StatusServiceUnavailable && code != 0 || time.Now().After(deadline) {
			t.Fatalf("reserve via %s: %d %v", n.id, code, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// op is one acknowledged reservation: the range and when the request was
// sent and its answer read, so the real-time order can be checked.
type op struct {
	via        string
	start, ack time.Time
	r          api.Range
}

// history collects acknowledged reservations and failed attempts.
type history struct {
	t0    time.Time
	mu    sync.Mutex
	ops   []op
	fails map[string]int
	bad   []string // answers that broke the API's promises on their own
}

func newHistory() *history { return &history{t0: time.Now(), fails: map[string]int{}} }

func (h *history) add(o op) {
	h.mu.Lock()
	h.ops = append(h.ops, o)
	h.mu.Unlock()
}

func (h *history) fail(kind string) {
	h.mu.Lock()
	h.fails[kind]++
	h.mu.Unlock()
}

func (h *history) badAnswer(s string) {
	h.mu.Lock()
	h.bad = append(h.bad, s)
	h.mu.Unlock()
}

func (h *history) snapshot() []op {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]op(nil), h.ops...)
}

func (h *history) len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.ops)
}

func (h *history) since(t time.Time) string {
	return "+" + t.Sub(h.t0).Round(time.Millisecond).String()
}

// failSummary is e.g. "status 503: 12, transport error: 40".
func (h *history) failSummary() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var parts []string
	for k, v := range h.fails {
		parts = append(parts, fmt.Sprintf("%s: %d", k, v))
	}
	sort.Strings(parts)
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// firstStartedAfter returns the earliest-acknowledged op sent after t.
func (h *history) firstStartedAfter(t time.Time) (op, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var best op
	found := false
	for _, o := range h.ops {
		if o.start.After(t) && (!found || o.ack.Before(best.ack)) {
			best, found = o, true
		}
	}
	return best, found
}

// waitFor waits until cond holds on the history, polling every 5 ms.
func (h *history) waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v (%d ranges acknowledged; failures: %s)", what, timeout, h.len(), h.failSummary())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// check verifies the history: every answer well formed, ranges pairwise
// disjoint, and the real-time order: a reservation sent after another one
// was acknowledged got a strictly greater range.
func (h *history) check(t *testing.T) {
	t.Helper()
	h.mu.Lock()
	bad := append([]string(nil), h.bad...)
	h.mu.Unlock()
	if len(bad) > 0 {
		t.Fatalf("%d malformed answers, first: %s", len(bad), bad[0])
	}
	ops := h.snapshot()
	if err := checkDisjoint(ops); err != nil {
		t.Fatal(err)
	}
	if err := h.checkRealTime(ops); err != nil {
		t.Fatal(err)
	}
}

func checkDisjoint(ops []op) error {
	rs := append([]op(nil), ops...)
	sort.Slice(rs, func(i, j int) bool { return rs[i].r.First < rs[j].r.First })
	for i := 1; i < len(rs); i++ {
		if rs[i].r.First <= rs[i-1].r.Last {
			return fmt.Errorf("ID reissued: ranges %d..%d (via %s) and %d..%d (via %s) overlap",
				rs[i-1].r.First, rs[i-1].r.Last, rs[i-1].via, rs[i].r.First, rs[i].r.Last, rs[i].via)
		}
	}
	return nil
}

func (h *history) checkRealTime(ops []op) error {
	byStart := append([]op(nil), ops...)
	sort.Slice(byStart, func(i, j int) bool { return byStart[i].start.Before(byStart[j].start) })
	byAck := append([]op(nil), ops...)
	sort.Slice(byAck, func(i, j int) bool { return byAck[i].ack.Before(byAck[j].ack) })
	var top op // the highest range acknowledged before the current op was sent
	j := 0
	for _, b := range byStart {
		for ; j < len(byAck) && byAck[j].ack.Before(b.start); j++ {
			if byAck[j].r.Last > top.r.Last {
				top = byAck[j]
			}
		}
		if j > 0 && b.r.First <= top.r.Last {
			return fmt.Errorf("not linearizable: range %d..%d (via %s, sent %s) is not above range %d..%d (via %s, acknowledged %s, before it was sent)",
				b.r.First, b.r.Last, b.via, h.since(b.start), top.r.First, top.r.Last, top.via, h.since(top.ack))
		}
	}
	return nil
}

// maxLast is the highest ID of the ops acknowledged before t.
func maxLastAckedBefore(ops []op, t time.Time) int64 {
	var m int64
	for _, o := range ops {
		if o.ack.Before(t) {
			m = max(m, o.r.Last)
		}
	}
	return m
}

// loader reserves continuously through a fixed list of nodes, round-robin,
// from several goroutines, recording what was acknowledged.
type loader struct {
	h    *history
	stop chan struct{}
	once sync.Once
	wg   sync.WaitGroup
}

// loadKit is shared by the load goroutines: a bounded attempt, kept-alive
// connections.
var loadKit = testkit.Client{
	HTTP:    &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16, IdleConnTimeout: 30 * time.Second}},
	Timeout: 3 * time.Second,
}

func startLoad(t *testing.T, nodes []*node, seq string, workers int, count int64) *loader {
	l := &loader{h: newHistory(), stop: make(chan struct{})}
	deadline := time.Now().Add(2 * time.Minute) // a backstop; tests halt far earlier
	for w := 0; w < workers; w++ {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for i := 0; i < 1_000_000 && time.Now().Before(deadline); i++ {
				select {
				case <-l.stop:
					return
				default:
				}
				n := nodes[(w+i)%len(nodes)]
				if err := l.reserveOnce(n, seq, count); err != nil {
					select {
					case <-l.stop:
						return
					case <-time.After(5 * time.Millisecond):
					}
				}
			}
		}()
	}
	t.Cleanup(l.halt)
	return l
}

func (l *loader) reserveOnce(n *node, seq string, count int64) error {
	start := time.Now()
	resp, err := loadKit.Call(http.MethodPost, n.url()+"/v1/sequences/"+seq+"/ranges", api.ReserveRequest{Count: count})
	ack := time.Now()
	if err != nil {
		// No whole answer: refused, timed out or cut mid-answer.
		l.h.fail("transport error")
		return err
	}
	if resp.Status != http.StatusOK {
		l.h.fail(fmt.Sprintf("status %d", resp.Status))
		return errors.New(http.StatusText(resp.Status))
	}
	data := resp.Body
	var r api.Range
	if err := json.Unmarshal(data, &r); err != nil || r.Last-r.First+1 != count || r.First < 1 || r.Sequence != seq {
		l.h.badAnswer(fmt.Sprintf("via %s: %s (%v)", n.id, data, err))
		return errors.New("bad answer")
	}
	l.h.add(op{via: n.id, start: start, ack: ack, r: r})
	return nil
}

// halt stops the load and waits for the goroutines; idempotent.
func (l *loader) halt() {
	l.once.Do(func() { close(l.stop) })
	l.wg.Wait()
}

// runCLI runs the ticketd binary as a client command with a clean
// environment plus env, bounded in time.
func runCLI(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(t), args...)
	cmd.Env = append(proc.ChildEnv(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
	default:
		t.Fatalf("run ticketd %q: %v", args, err)
	}
	if ctx.Err() != nil {
		t.Fatalf("ticketd %q did not finish within 30s", args)
	}
	return out.String(), errb.String(), cmd.ProcessState.ExitCode()
}
