package main

// scale: the "Scale of the state" figures of issue 17. Against a running
// cluster of real ticketd processes on this machine (scripts/scale.sh starts
// a fresh one per size), it creates N sequences through the HTTP API and
// measures what they cost: creation rate, resident memory and Go heap per
// sequence on the leader and a follower (after the creations and again after
// one reservation on every sequence), the time and size of a snapshot, the
// time a follower takes to come back after SIGTERM and after SIGKILL, and the
// time a new member takes to catch up by installing a snapshot.
//
// Processes: the nodes it is given are the caller's; the follower it
// restarts and the new member it starts are its own children, started with
// the follower's own command line (read from /proc/PID/cmdline). Every pid it
// starts is appended to --pid-file so the caller can stop them; it stops the
// new member itself before it returns. Linux only (/proc).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ticketd/ticketd/api"
)

// scaleReport is the JSON of one size.
type scaleReport struct {
	Sequences   int    `json:"sequences"`
	Concurrency int    `json:"concurrency"`
	Leader      string `json:"leader"`
	Follower    string `json:"follower"`
	// LogEntries is the leader's commit index once every sequence exists
	// (what creating N sequences wrote to the log, from a fresh cluster).
	LogEntries uint64 `json:"log_entries_after_create"`

	Create  scalePhase `json:"create"`
	Reserve scalePhase `json:"reserve_one_each"`

	// Memory holds every reading; PerSequence the differences to "before",
	// divided by N.
	Memory      []memReading `json:"memory"`
	PerSequence []memPerSeq  `json:"memory_per_sequence"`
	// IssuerEvicted is the leader's ticketd_issuer_sequences_evicted_total
	// after the reservations (-1 when the metric is not exposed).
	IssuerEvicted float64 `json:"issuer_sequences_evicted"`

	Snapshots []snapResult    `json:"snapshots"`
	Restarts  []restartResult `json:"restarts"`
	Join      *joinResult     `json:"join,omitempty"`

	Notes []string `json:"notes,omitempty"`
}

// scalePhase is one pass over all N sequences.
type scalePhase struct {
	Done    int     `json:"done"`
	Seconds float64 `json:"seconds"`
	PerSec  float64 `json:"per_sec"`
	P50Ms   float64 `json:"p50_ms"`
	P99Ms   float64 `json:"p99_ms"`
	MaxMs   float64 `json:"max_ms"`
	Retries int     `json:"retries"`
	Failed  int     `json:"failed"`
}

// memReading is one node's memory at one stage.
type memReading struct {
	Stage     string `json:"stage"` // before, after_create, after_reserve, after_restart_*, after_join
	Node      string `json:"node"`
	Role      string `json:"role"` // leader, follower, new_member
	RSSBytes  int64  `json:"rss_bytes"`
	HeapInuse int64  `json:"heap_inuse_bytes"` // -1 when /metrics does not say
	// HeapIdle − HeapReleased is heap memory the runtime holds in RSS but
	// does not use (freed spans not yet returned to the kernel).
	HeapIdle     int64 `json:"heap_idle_bytes"`
	HeapReleased int64 `json:"heap_released_bytes"`
}

// memPerSeq is (reading − before) / N for one node and stage.
type memPerSeq struct {
	Stage           string  `json:"stage"`
	Role            string  `json:"role"`
	RSSPerSeq       float64 `json:"rss_bytes_per_sequence"`
	HeapInusePerSeq float64 `json:"heap_inuse_bytes_per_sequence"`
}

// snapResult is one POST /v1/cluster/snapshot.
type snapResult struct {
	Node    string  `json:"node"`
	Role    string  `json:"role"`
	Seconds float64 `json:"seconds"` // the API call, capture to fsynced file and log compaction
	// PersistSeconds is the node's own ticketd_raft_snapshot_duration_seconds
	// for it (writing the state out), -1 if unknown.
	PersistSeconds float64 `json:"persist_seconds"`
	Index          uint64  `json:"index"`
	Dir            string  `json:"dir"`
	StateBytes     int64   `json:"state_bytes"`
	Error          string  `json:"error,omitempty"`
}

// restartResult is one stop and start of the follower; every time is from
// the start of the new process.
type restartResult struct {
	Signal          string  `json:"signal"`
	StopSeconds     float64 `json:"stop_seconds"` // signal to process gone
	LivezSeconds    float64 `json:"livez_seconds"`
	ReadySeconds    float64 `json:"ready_seconds"`
	CaughtUpSeconds float64 `json:"caught_up_seconds"`
	TargetIndex     uint64  `json:"target_index"`
	Restores        float64 `json:"snapshot_restores"`
	Error           string  `json:"error,omitempty"`
}

// joinResult is the new member's catch-up; times are from the POST that
// added it.
type joinResult struct {
	Node              string  `json:"node"`
	StartSeconds      float64 `json:"process_livez_seconds"` // process start to /livez, before the add
	AddSeconds        float64 `json:"add_seconds"`           // the POST /v1/cluster/members itself
	CaughtUpSeconds   float64 `json:"caught_up_seconds"`
	ReadySeconds      float64 `json:"ready_seconds"`
	TargetIndex       uint64  `json:"target_index"`
	LeaderSnapshotIdx uint64  `json:"leader_snapshot_index"`
	TrailingLogs      uint64  `json:"trailing_logs"`
	// LogAloneEnough is true when the leader still held log entry 1, so the
	// member could have caught up from the log without a snapshot.
	LogAloneEnough    bool    `json:"log_alone_enough"`
	Restores          float64 `json:"snapshot_restores"`
	SnapshotInstalled bool    `json:"snapshot_installed"`
	Removed           bool    `json:"removed"`
	Error             string  `json:"error,omitempty"`
}

// nodeProc is one ticketd process as its command line describes it.
type nodeProc struct {
	pid      int
	argv     []string
	id       string
	dataDir  string
	httpAddr string
	cmd      *exec.Cmd // set when we started it
}

func (n *nodeProc) url() string { return "http://" + n.httpAddr }

type scaleRun struct {
	client  *http.Client
	token   string
	pidFile string
	logDir  string
	gc      bool
	noteMu  sync.Mutex
	rep     *scaleReport
}

func runScale(ctx context.Context, args []string) error {
	if len(args) > 0 && args[0] == "table" {
		return runScaleTable(args[1:], os.Stdout)
	}
	fs := flag.NewFlagSet("scale", flag.ExitOnError)
	pids := fs.String("pids", "", "comma-separated pids of the running ticketd nodes (their command lines name id, data dir and HTTP address)")
	n := fs.Int("sequences", 10000, "how many sequences to create")
	conc := fs.Int("concurrency", 64, "concurrent HTTP workers for creations and reservations")
	prefix := fs.String("prefix", "scale", "sequence name prefix")
	token := fs.String("token", os.Getenv("TICKETD_TOKEN"), "admin bearer token (none with --dev)")
	phaseTimeout := fs.Duration("phase-timeout", 15*time.Minute, "bound on each pass over all sequences")
	waitTimeout := fs.Duration("wait-timeout", 5*time.Minute, "bound on each wait for a node (ready, caught up, gone)")
	trailing := fs.Uint64("trailing-logs", 0, "the nodes' --trailing-logs (0: read from the leader's command line, else 10240, ticketd's default)")
	sigkill := fs.Bool("sigkill", true, "also time a restart after SIGKILL")
	joinID := fs.String("join-id", "n4", "ID of the new member ('' skips the new-member step)")
	joinHTTP := fs.String("join-http", "127.0.0.1:18684", "HTTP address of the new member")
	joinRaft := fs.String("join-raft", "127.0.0.1:18694", "Raft address of the new member")
	joinDir := fs.String("join-data-dir", "", "data dir of the new member (must not exist or be empty; required with --join-id)")
	logDir := fs.String("log-dir", ".", "where the processes this command starts write their logs")
	pidFile := fs.String("pid-file", "", "append \"<id> <pid>\" of every process this command starts")
	gc := fs.Bool("gc", true, "run a GC on the node (GET /debug/pprof/heap?gc=1, needs --pprof) before reading its heap")
	jsonOut := fs.String("json", "", "write the report here")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *n < 1 || *conc < 1 {
		return errors.New("--sequences and --concurrency must be positive")
	}
	if *joinID != "" && *joinDir == "" {
		return errors.New("--join-data-dir is required with --join-id")
	}
	nodes, err := nodesFromPids(*pids)
	if err != nil {
		return err
	}
	tr := newTransport(*conc)
	defer tr.CloseIdleConnections()
	r := &scaleRun{
		client:  &http.Client{Transport: tr, Timeout: 30 * time.Second},
		token:   *token,
		pidFile: *pidFile,
		logDir:  *logDir,
		gc:      *gc,
		rep:     &scaleReport{Sequences: *n, Concurrency: *conc, IssuerEvicted: -1},
	}
	rep := r.rep
	// The report is written whatever happens after this point, so a failed
	// or interrupted run still leaves what it measured.
	defer func() {
		if *jsonOut != "" {
			if werr := writeJSON(*jsonOut, rep); werr != nil {
				fmt.Fprintln(os.Stderr, "scale: writing report:", werr)
			}
		}
	}()

	leader, follower, err := r.roles(ctx, nodes, *waitTimeout)
	if err != nil {
		return err
	}
	rep.Leader, rep.Follower = leader.id, follower.id
	scaleLogf("scale: %d sequences, leader %s (pid %d), follower %s (pid %d)", *n, leader.id, leader.pid, follower.id, follower.pid)
	if *trailing == 0 {
		*trailing = 10240
		if v, ok := scaleArgValue(leader.argv, "--trailing-logs"); ok {
			if t, err := strconv.ParseUint(v, 10, 64); err == nil {
				*trailing = t
			}
		}
	}

	before := map[string]memReading{}
	for _, nd := range []struct {
		p    *nodeProc
		role string
	}{{leader, "leader"}, {follower, "follower"}} {
		m := r.memory(ctx, "before", nd.p, nd.role)
		before[nd.role] = m
	}
	perSeq := func(stage string, p *nodeProc, role string) {
		m := r.memory(ctx, stage, p, role)
		rep.PerSequence = append(rep.PerSequence, perSequence(before[role], m, *n))
	}

	names := make([]string, *n)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%07d", *prefix, i)
	}

	// 1. Creation.
	scaleLogf("scale: creating %d sequences with %d workers on the leader", *n, *conc)
	rep.Create = r.pass(ctx, "create", names, *conc, *phaseTimeout, func(ctx context.Context, name string) (int, error) {
		return r.do(ctx, http.MethodPut, leader.url()+"/v1/sequences/"+url.PathEscape(name), nil)
	})
	if rep.Create.Failed > 0 || rep.Create.Done < *n {
		return fmt.Errorf("created %d of %d sequences (%d failed)", rep.Create.Done, *n, rep.Create.Failed)
	}
	st, err := r.status(ctx, leader)
	if err != nil {
		return err
	}
	rep.LogEntries = st.CommitIndex
	if _, err := r.caughtUp(ctx, follower, st.CommitIndex, time.Now(), *waitTimeout); err != nil {
		return fmt.Errorf("follower after the creations: %w", err)
	}
	perSeq("after_create", leader, "leader")
	perSeq("after_create", follower, "follower")

	// 2. One reservation on every sequence: the leader now keeps per-sequence
	// issuing state for each (as far as its bound lets it).
	scaleLogf("scale: one reservation on each sequence")
	body := []byte(`{"count":1}`)
	rep.Reserve = r.pass(ctx, "reserve", names, *conc, *phaseTimeout, func(ctx context.Context, name string) (int, error) {
		return r.do(ctx, http.MethodPost, leader.url()+rangesPath(name), body)
	})
	if rep.Reserve.Failed > 0 {
		r.note("%d of %d reservations failed", rep.Reserve.Failed, *n)
	}
	if st, err = r.status(ctx, leader); err != nil {
		return err
	}
	if _, err := r.caughtUp(ctx, follower, st.CommitIndex, time.Now(), *waitTimeout); err != nil {
		return fmt.Errorf("follower after the reservations: %w", err)
	}
	perSeq("after_reserve", leader, "leader")
	perSeq("after_reserve", follower, "follower")
	if mt, err := r.metrics(ctx, leader); err == nil {
		if v, ok := scaleMetricSum(mt, "ticketd_issuer_sequences_evicted_total"); ok {
			rep.IssuerEvicted = v
		}
	}

	// 3. Snapshots: a fresh entry first (a node with nothing new since its
	// last snapshot refuses to take one), applied on the follower too.
	if _, err := r.do(ctx, http.MethodPut, leader.url()+"/v1/sequences/"+url.PathEscape(*prefix+"-snapmark"), nil); err != nil {
		return fmt.Errorf("marker sequence: %w", err)
	}
	if st, err = r.status(ctx, leader); err != nil {
		return err
	}
	if _, err := r.caughtUp(ctx, follower, st.CommitIndex, time.Now(), *waitTimeout); err != nil {
		return err
	}
	leaderSnap := r.snapshot(ctx, leader, "leader")
	rep.Snapshots = append(rep.Snapshots, leaderSnap, r.snapshot(ctx, follower, "follower"))

	// 4. Restarts of the follower.
	sigs := []syscall.Signal{syscall.SIGTERM}
	if *sigkill {
		sigs = append(sigs, syscall.SIGKILL)
	}
	for _, sig := range sigs {
		res := r.restart(ctx, leader, follower, sig, *waitTimeout)
		rep.Restarts = append(rep.Restarts, res)
		if res.Error != "" {
			return fmt.Errorf("restart after %s: %s", res.Signal, res.Error)
		}
		r.memory(ctx, "after_restart_"+strings.ToLower(res.Signal), follower, "follower")
	}

	// 5. A new member.
	if *joinID != "" {
		j := r.join(ctx, leader, follower, *joinID, *joinHTTP, *joinRaft, *joinDir, *trailing, *waitTimeout)
		rep.Join = &j
		if j.Error != "" {
			return fmt.Errorf("new member: %s", j.Error)
		}
	}
	return nil
}

// roles waits until the nodes agree on a ready leader and picks the first
// other node as the follower.
func (r *scaleRun) roles(ctx context.Context, nodes []*nodeProc, timeout time.Duration) (leader, follower *nodeProc, err error) {
	urls := make([]string, len(nodes))
	for i, nd := range nodes {
		urls[i] = nd.url()
	}
	deadline := time.Now().Add(timeout)
	for {
		id, _, why := leaderOnce(ctx, r.client, urls)
		if why == nil {
			for _, nd := range nodes {
				if nd.id == id {
					leader = nd
				} else if follower == nil {
					follower = nd
				}
			}
			if leader == nil || follower == nil {
				return nil, nil, fmt.Errorf("leader %q is not among the nodes given, or there is no follower", id)
			}
			return leader, follower, nil
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return nil, nil, fmt.Errorf("cluster not ready: %w", why)
		}
		scalePause(ctx, 200*time.Millisecond)
	}
}

func (r *scaleRun) note(format string, a ...any) {
	r.noteMu.Lock()
	defer r.noteMu.Unlock()
	s := fmt.Sprintf(format, a...)
	r.rep.Notes = append(r.rep.Notes, s)
	scaleLogf("scale: note: %s", s)
}

// do sends one request and returns the status; a 2xx is success, anything
// else an error that names the answer.
func (r *scaleRun) do(ctx context.Context, method, u string, body []byte) (int, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if r.token != "" {
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return 0, err
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return resp.StatusCode, fmt.Errorf("%s %s: %s: %s", method, u, resp.Status, bytes.TrimSpace(b))
	}
	return resp.StatusCode, nil
}

// retryable says whether a failed request may simply be sent again: no
// answer, or the node asked us to come back (no leader yet, overloaded).
func scaleRetryable(code int) bool {
	return code == 0 || code == http.StatusServiceUnavailable || code == http.StatusTooManyRequests
}

// pass runs op once per name with conc workers, each request retried (at
// most 20 times) while the answer says to; bounded by timeout as a whole.
func (r *scaleRun) pass(ctx context.Context, what string, names []string, conc int, timeout time.Duration, op func(context.Context, string) (int, error)) scalePhase {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var next, done, retries, failed atomic.Int64
	lats := make([][]time.Duration, conc)
	var firstErr atomic.Value
	start := time.Now()
	stopProgress := make(chan struct{})
	go func() {
		t := time.NewTicker(5 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-stopProgress:
				return
			case <-t.C:
				d := done.Load()
				scaleLogf("scale: %s %d/%d (%.0f/s)", what, d, len(names), float64(d)/time.Since(start).Seconds())
			}
		}
	}()
	var wg sync.WaitGroup
	for w := 0; w < conc; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= len(names) {
					return
				}
				t0 := time.Now()
				var err error
				for attempt := 0; attempt < 20; attempt++ {
					var code int
					code, err = op(ctx, names[i])
					if err == nil || !scaleRetryable(code) || ctx.Err() != nil {
						break
					}
					retries.Add(1)
					scalePause(ctx, 50*time.Millisecond)
				}
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
					continue
				}
				lats[w] = append(lats[w], time.Since(t0))
				done.Add(1)
			}
		}(w)
	}
	wg.Wait()
	el := time.Since(start)
	close(stopProgress)
	var all []time.Duration
	for _, l := range lats {
		all = append(all, l...)
	}
	s := summarize(all)
	ph := scalePhase{
		Done: int(done.Load()), Seconds: el.Seconds(), PerSec: float64(done.Load()) / el.Seconds(),
		P50Ms: ms(s.P50), P99Ms: ms(s.P99), MaxMs: ms(s.Max),
		Retries: int(retries.Load()), Failed: int(failed.Load()),
	}
	if e, ok := firstErr.Load().(error); ok {
		r.note("%s: %d failed, first error: %v", what, ph.Failed, e)
	}
	if ctx.Err() != nil && ph.Done < len(names) {
		r.note("%s: stopped after %s with %d of %d done", what, el.Round(time.Millisecond), ph.Done, len(names))
	}
	scaleLogf("scale: %s: %d in %.2f s = %.0f/s, p50 %.2f ms, p99 %.2f ms, %d retries, %d failed",
		what, ph.Done, ph.Seconds, ph.PerSec, ph.P50Ms, ph.P99Ms, ph.Retries, ph.Failed)
	return ph
}

func (r *scaleRun) status(ctx context.Context, p *nodeProc) (api.ClusterStatus, error) {
	var st api.ClusterStatus
	code, err := r.get(ctx, p.url()+"/v1/cluster", &st)
	if err == nil && code != http.StatusOK {
		err = fmt.Errorf("%s/v1/cluster: status %d", p.url(), code)
	}
	return st, err
}

func (r *scaleRun) get(ctx context.Context, u string, out any) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, err
	}
	if r.token != "" {
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return 0, err
	}
	if resp.StatusCode == http.StatusOK && out != nil {
		switch o := out.(type) {
		case *[]byte:
			*o = b
		default:
			if err := json.Unmarshal(b, out); err != nil {
				return 0, fmt.Errorf("%s: bad JSON: %w", u, err)
			}
		}
	}
	return resp.StatusCode, nil
}

func (r *scaleRun) metrics(ctx context.Context, p *nodeProc) ([]byte, error) {
	var b []byte
	code, err := r.get(ctx, p.url()+"/metrics", &b)
	if err == nil && code != http.StatusOK {
		err = fmt.Errorf("%s/metrics: status %d", p.url(), code)
	}
	return b, err
}

// caughtUp polls p until it has applied index; it returns the time since
// from.
func (r *scaleRun) caughtUp(ctx context.Context, p *nodeProc, index uint64, from time.Time, timeout time.Duration) (time.Duration, error) {
	deadline := time.Now().Add(timeout)
	for {
		st, err := r.status(ctx, p)
		if err == nil && st.AppliedIndex >= index {
			return time.Since(from), nil
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return 0, fmt.Errorf("%s has not applied index %d after %s (applied %d, err %v)", p.id, index, timeout, st.AppliedIndex, err)
		}
		scalePause(ctx, 10*time.Millisecond)
	}
}

// waitCode polls u until it answers want; it returns the time since from.
func (r *scaleRun) waitCode(ctx context.Context, u string, want int, from time.Time, timeout time.Duration) (time.Duration, error) {
	deadline := time.Now().Add(timeout)
	for {
		code, err := r.get(ctx, u, nil)
		if err == nil && code == want {
			return time.Since(from), nil
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return 0, fmt.Errorf("%s: no %d after %s (last %d, %v)", u, want, timeout, code, err)
		}
		scalePause(ctx, 10*time.Millisecond)
	}
}

// memory reads p's VmRSS and Go heap in use and records them.
func (r *scaleRun) memory(ctx context.Context, stage string, p *nodeProc, role string) memReading {
	m := memReading{Stage: stage, Node: p.id, Role: role, RSSBytes: -1, HeapInuse: -1, HeapIdle: -1, HeapReleased: -1}
	if r.gc {
		// A GC first, so that the heap figure is live data rather than
		// whatever garbage the last pass left; RSS keeps what the runtime
		// has not returned to the kernel yet either way.
		if code, err := r.get(ctx, p.url()+"/debug/pprof/heap?gc=1", nil); err != nil || code != http.StatusOK {
			r.note("no GC before reading %s's heap (GET /debug/pprof/heap?gc=1: %d %v; start nodes with --pprof)", p.id, code, err)
			r.gc = false
		}
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.pid)); err == nil {
		if v, ok := parseVmRSS(b); ok {
			m.RSSBytes = v
		}
	}
	if mt, err := r.metrics(ctx, p); err == nil {
		for name, dst := range map[string]*int64{"go_memstats_heap_inuse_bytes": &m.HeapInuse,
			"go_memstats_heap_idle_bytes": &m.HeapIdle, "go_memstats_heap_released_bytes": &m.HeapReleased} {
			if v, ok := scaleMetricSum(mt, name); ok {
				*dst = int64(v)
			}
		}
	}
	r.rep.Memory = append(r.rep.Memory, m)
	scaleLogf("scale: memory %s %s %s: RSS %.1f MiB, heap in use %.1f MiB, idle not released %.1f MiB", stage, role, p.id,
		float64(m.RSSBytes)/(1<<20), float64(m.HeapInuse)/(1<<20), float64(m.HeapIdle-m.HeapReleased)/(1<<20))
	return m
}

// snapshot has p take a snapshot now and measures it.
func (r *scaleRun) snapshot(ctx context.Context, p *nodeProc, role string) snapResult {
	res := snapResult{Node: p.id, Role: role, PersistSeconds: -1}
	sum0, cnt0 := r.snapMetric(ctx, p)
	t0 := time.Now()
	_, err := r.do(ctx, http.MethodPost, p.url()+"/v1/cluster/snapshot", nil)
	res.Seconds = time.Since(t0).Seconds()
	if err != nil {
		res.Error = err.Error()
		r.note("snapshot on %s: %v", p.id, err)
		return res
	}
	if sum1, cnt1 := r.snapMetric(ctx, p); cnt0 >= 0 && cnt1 == cnt0+1 {
		res.PersistSeconds = sum1 - sum0
	}
	dir, idx, err := newestSnapshot(filepath.Join(p.dataDir, "snapshots"))
	if err != nil {
		res.Error = err.Error()
		return res
	}
	res.Dir, res.Index = dir, idx
	if fi, err := os.Stat(filepath.Join(dir, "state.bin")); err == nil {
		res.StateBytes = fi.Size()
	} else {
		res.Error = err.Error()
	}
	scaleLogf("scale: snapshot on %s %s: %.3f s (persist %.3f s), index %d, state.bin %d bytes", role, p.id, res.Seconds, res.PersistSeconds, res.Index, res.StateBytes)
	return res
}

// snapMetric returns the sum and count of p's snapshot-duration histogram
// (-1, -1 if unknown).
func (r *scaleRun) snapMetric(ctx context.Context, p *nodeProc) (sum, count float64) {
	mt, err := r.metrics(ctx, p)
	if err != nil {
		return -1, -1
	}
	s, ok1 := scaleMetricSum(mt, "ticketd_raft_snapshot_duration_seconds_sum")
	c, ok2 := scaleMetricSum(mt, "ticketd_raft_snapshot_duration_seconds_count")
	if !ok1 || !ok2 {
		return -1, -1
	}
	return s, c
}

// stopProc signals p and waits until it is gone (a zombie counts: its
// parent may be blocked running us).
func (r *scaleRun) stopProc(ctx context.Context, p *nodeProc, sig syscall.Signal, timeout time.Duration) (time.Duration, error) {
	t0 := time.Now()
	if err := syscall.Kill(p.pid, sig); err != nil {
		return 0, fmt.Errorf("kill %d: %w", p.pid, err)
	}
	deadline := t0.Add(timeout)
	for !scaleProcGone(p.pid) {
		if ctx.Err() != nil || time.Now().After(deadline) {
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
			return 0, fmt.Errorf("pid %d still there %s after %s", p.pid, timeout, sig)
		}
		time.Sleep(5 * time.Millisecond)
	}
	d := time.Since(t0)
	if p.cmd != nil {
		_ = p.cmd.Wait() // ours: reap it
		p.cmd = nil
	}
	return d, nil
}

// startProc starts argv as p (output appended to the log dir) and records
// its pid.
func (r *scaleRun) startProc(p *nodeProc, argv []string) error {
	lf, err := os.OpenFile(filepath.Join(r.logDir, "scale-"+p.id+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer lf.Close()
	fmt.Fprintf(lf, "=== start %s (ticketd-bench scale)\n", time.Now().Format("15:04:05.000000"))
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = lf, lf
	if err := cmd.Start(); err != nil {
		return err
	}
	p.pid, p.argv, p.cmd = cmd.Process.Pid, argv, cmd
	if r.pidFile != "" {
		if f, err := os.OpenFile(r.pidFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err == nil {
			fmt.Fprintf(f, "%s %d\n", p.id, p.pid)
			f.Close()
		}
	}
	return nil
}

// restart stops the follower with sig and starts it again with the same
// command line; times to /livez, /readyz and to having applied the leader's
// commit index of before the stop.
func (r *scaleRun) restart(ctx context.Context, leader, follower *nodeProc, sig syscall.Signal, timeout time.Duration) restartResult {
	res := restartResult{Signal: scaleSigName(sig), Restores: -1}
	fail := func(err error) restartResult { res.Error = err.Error(); return res }
	st, err := r.status(ctx, leader)
	if err != nil {
		return fail(err)
	}
	res.TargetIndex = st.CommitIndex
	argv := follower.argv
	scaleLogf("scale: %s of follower %s (pid %d)", res.Signal, follower.id, follower.pid)
	stop, err := r.stopProc(ctx, follower, sig, timeout)
	if err != nil {
		return fail(err)
	}
	res.StopSeconds = stop.Seconds()
	t0 := time.Now()
	if err := r.startProc(follower, argv); err != nil {
		return fail(err)
	}
	d, err := r.waitCode(ctx, follower.url()+"/livez", http.StatusOK, t0, timeout)
	if err != nil {
		return fail(err)
	}
	res.LivezSeconds = d.Seconds()
	// Ready and caught up are polled together: whichever comes first is
	// timed on its own.
	deadline := time.Now().Add(timeout)
	for res.ReadySeconds == 0 || res.CaughtUpSeconds == 0 {
		if res.ReadySeconds == 0 {
			if code, err := r.get(ctx, follower.url()+"/readyz", nil); err == nil && code == http.StatusOK {
				res.ReadySeconds = time.Since(t0).Seconds()
			}
		}
		if res.CaughtUpSeconds == 0 {
			if st, err := r.status(ctx, follower); err == nil && st.AppliedIndex >= res.TargetIndex {
				res.CaughtUpSeconds = time.Since(t0).Seconds()
			}
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return fail(fmt.Errorf("%s not ready and caught up %s after its start", follower.id, timeout))
		}
		scalePause(ctx, 10*time.Millisecond)
	}
	if mt, err := r.metrics(ctx, follower); err == nil {
		if v, ok := scaleMetricSum(mt, "ticketd_raft_snapshot_restores_total"); ok {
			res.Restores = v
		}
	}
	scaleLogf("scale: %s restart of %s: stop %.3f s; from start: livez %.3f s, ready %.3f s, caught up %.3f s (index %d), snapshot restores %v",
		res.Signal, follower.id, res.StopSeconds, res.LivezSeconds, res.ReadySeconds, res.CaughtUpSeconds, res.TargetIndex, res.Restores)
	return res
}

// join starts a new, empty node, adds it through the leader, times its
// catch-up, checks that it installed a snapshot, then removes and stops it.
func (r *scaleRun) join(ctx context.Context, leader, like *nodeProc, id, httpAddr, raftAddr, dataDir string, trailing uint64, timeout time.Duration) joinResult {
	res := joinResult{Node: id, TrailingLogs: trailing, Restores: -1}
	fail := func(err error) joinResult { res.Error = err.Error(); return res }
	if mt, err := r.metrics(ctx, leader); err == nil {
		if v, ok := scaleMetricSum(mt, "ticketd_raft_last_snapshot_index"); ok {
			res.LeaderSnapshotIdx = uint64(v)
		}
	}
	// Raft compacts the log up to snapshot index − trailing logs: only when
	// that removed entry 1 must an empty member be sent a snapshot.
	res.LogAloneEnough = res.LeaderSnapshotIdx <= trailing
	if res.LogAloneEnough {
		r.note("leader's snapshot index %d ≤ trailing logs %d: the new member can catch up from the log alone", res.LeaderSnapshotIdx, trailing)
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return fail(err)
	}
	p := &nodeProc{id: id, dataDir: dataDir, httpAddr: httpAddr}
	argv := newMemberArgv(like.argv, id, dataDir, httpAddr, raftAddr)
	t0 := time.Now()
	if err := r.startProc(p, argv); err != nil {
		return fail(err)
	}
	defer func() {
		if p.cmd != nil {
			if _, err := r.stopProc(context.WithoutCancel(ctx), p, syscall.SIGTERM, 30*time.Second); err != nil {
				r.note("stopping %s: %v", id, err)
			}
		}
	}()
	d, err := r.waitCode(ctx, p.url()+"/livez", http.StatusOK, t0, timeout)
	if err != nil {
		return fail(err)
	}
	res.StartSeconds = d.Seconds()
	body, _ := json.Marshal(api.JoinRequest{ID: id, RaftAddr: raftAddr, HTTPAddr: httpAddr})
	t1 := time.Now()
	if _, err := r.do(ctx, http.MethodPost, leader.url()+"/v1/cluster/members", body); err != nil {
		return fail(err)
	}
	res.AddSeconds = time.Since(t1).Seconds()
	st, err := r.status(ctx, leader)
	if err != nil {
		return fail(err)
	}
	res.TargetIndex = st.CommitIndex
	scaleLogf("scale: added %s; waiting until it has applied index %d", id, res.TargetIndex)
	d, err = r.caughtUp(ctx, p, res.TargetIndex, t1, timeout)
	if err != nil {
		return fail(err)
	}
	res.CaughtUpSeconds = d.Seconds()
	if d, err = r.waitCode(ctx, p.url()+"/readyz", http.StatusOK, t1, timeout); err == nil {
		res.ReadySeconds = d.Seconds()
	}
	if mt, err := r.metrics(ctx, p); err == nil {
		if v, ok := scaleMetricSum(mt, "ticketd_raft_snapshot_restores_total"); ok {
			res.Restores = v
			res.SnapshotInstalled = v >= 1
		}
	}
	r.memory(ctx, "after_join", p, "new_member")
	if !res.SnapshotInstalled {
		r.note("new member %s caught up without installing a snapshot (restores %v)", id, res.Restores)
	}
	scaleLogf("scale: new member %s: caught up %.3f s after the add (index %d), ready %.3f s, snapshot restores %v",
		id, res.CaughtUpSeconds, res.TargetIndex, res.ReadySeconds, res.Restores)
	if _, err := r.do(ctx, http.MethodDelete, leader.url()+"/v1/cluster/members/"+url.PathEscape(id), nil); err != nil {
		r.note("removing %s: %v", id, err)
	} else {
		res.Removed = true
	}
	return res
}

func scaleSigName(s syscall.Signal) string {
	switch s {
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGKILL:
		return "SIGKILL"
	}
	return s.String()
}

func scalePause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func scaleLogf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "%s %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, a...))
}

// ---- pure helpers (scale_test.go) ------------------------------------------

// nodesFromPids reads the command line of each pid.
func nodesFromPids(s string) ([]*nodeProc, error) {
	var out []*nodeProc
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		pid, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("--pids: %q: %w", f, err)
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			return nil, fmt.Errorf("pid %d: %w", pid, err)
		}
		p, err := parseNodeArgv(splitCmdline(b))
		if err != nil {
			return nil, fmt.Errorf("pid %d: %w", pid, err)
		}
		p.pid = pid
		out = append(out, p)
	}
	if len(out) < 2 {
		return nil, errors.New("--pids: need the pids of at least two nodes")
	}
	return out, nil
}

// splitCmdline splits /proc/PID/cmdline (NUL-terminated arguments).
func splitCmdline(b []byte) []string {
	b = bytes.TrimRight(b, "\x00")
	if len(b) == 0 {
		return nil
	}
	return strings.Split(string(b), "\x00")
}

// argValue finds flag name's value in argv, as "--name v" or "--name=v"
// (one or two dashes).
func scaleArgValue(argv []string, name string) (string, bool) {
	bare := strings.TrimLeft(name, "-")
	for i, a := range argv {
		if !strings.HasPrefix(a, "-") {
			continue
		}
		k, v, hasEq := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if k != bare {
			continue
		}
		if hasEq {
			return v, true
		}
		if i+1 < len(argv) {
			return argv[i+1], true
		}
	}
	return "", false
}

// parseNodeArgv reads id, data dir and HTTP address from a `ticketd serve`
// command line.
func parseNodeArgv(argv []string) (*nodeProc, error) {
	if len(argv) < 2 || argv[1] != "serve" {
		return nil, fmt.Errorf("not a `ticketd serve` command line: %q", argv)
	}
	p := &nodeProc{argv: argv, httpAddr: "127.0.0.1:8080"}
	var ok bool
	if p.id, ok = scaleArgValue(argv, "--id"); !ok {
		return nil, fmt.Errorf("no --id in %q", argv)
	}
	if p.dataDir, ok = scaleArgValue(argv, "--data-dir"); !ok {
		return nil, fmt.Errorf("no --data-dir in %q", argv)
	}
	if v, ok := scaleArgValue(argv, "--http-addr"); ok {
		p.httpAddr = v
	}
	if !filepath.IsAbs(p.dataDir) {
		return nil, fmt.Errorf("--data-dir %q is relative: start the nodes with absolute paths", p.dataDir)
	}
	return p, nil
}

// newMemberArgv is like's command line for a new, empty member: its own
// id, data dir and addresses, and none of the bootstrap or join flags (it
// waits to be added).
func newMemberArgv(like []string, id, dataDir, httpAddr, raftAddr string) []string {
	drop := map[string]bool{"initial-cluster": true, "bootstrap": false, "join": true, "id": true, "data-dir": true,
		"http-addr": true, "raft-addr": true, "http-advertise": true, "raft-advertise": true}
	out := []string{like[0], "serve"}
	for i := 2; i < len(like); i++ {
		a := like[i]
		k, _, hasEq := strings.Cut(strings.TrimLeft(a, "-"), "=")
		takesValue, known := drop[k]
		if !strings.HasPrefix(a, "-") || !known {
			out = append(out, a)
			continue
		}
		if takesValue && !hasEq {
			i++ // skip its value too
		}
	}
	return append(out, "--id", id, "--data-dir", dataDir, "--http-addr", httpAddr, "--raft-addr", raftAddr)
}

// parseVmRSS reads VmRSS (in kB) from /proc/PID/status, in bytes.
func parseVmRSS(b []byte) (int64, bool) {
	for _, line := range strings.Split(string(b), "\n") {
		rest, ok := strings.CutPrefix(line, "VmRSS:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, false
		}
		v, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, false
		}
		return v * 1024, true
	}
	return 0, false
}

// metricSum adds up every sample of metric name (all label sets) in a
// Prometheus text exposition.
func scaleMetricSum(text []byte, name string) (float64, bool) {
	var sum float64
	found := false
	for _, line := range strings.Split(string(text), "\n") {
		if !strings.HasPrefix(line, name) {
			continue
		}
		rest := line[len(name):]
		if rest == "" || (rest[0] != ' ' && rest[0] != '{') {
			continue // a longer name with this prefix
		}
		f := strings.Fields(rest[strings.LastIndexByte(rest, '}')+1:])
		if len(f) < 1 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		sum += v
		found = true
	}
	return sum, found
}

// procGone reads /proc/PID/stat: true when the process no longer exists or
// is a zombie.
func scaleProcGone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	return scaleStatZombie(b)
}

// statZombie says whether a /proc/PID/stat line is of a dead process.
func scaleStatZombie(b []byte) bool {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return false
	}
	return b[i+2] == 'Z' || b[i+2] == 'X'
}

// snapName is a hashicorp/raft FileSnapshotStore directory name:
// <term>-<index>-<unix ms>, with ".tmp" while being written.
func parseSnapName(s string) (term, index, ms uint64, ok bool) {
	if strings.HasSuffix(s, ".tmp") {
		return 0, 0, 0, false
	}
	f := strings.Split(s, "-")
	if len(f) != 3 {
		return 0, 0, 0, false
	}
	var v [3]uint64
	for i := range f {
		x, err := strconv.ParseUint(f[i], 10, 64)
		if err != nil {
			return 0, 0, 0, false
		}
		v[i] = x
	}
	return v[0], v[1], v[2], true
}

// newestSnapshot picks the directory FileSnapshotStore would restore from:
// the highest term, then index, then time.
func newestSnapshot(dir string) (string, uint64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", 0, err
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		names = append(names, e.Name())
	}
	best, idx, ok := pickNewestSnapshot(names)
	if !ok {
		return "", 0, fmt.Errorf("no snapshot in %s", dir)
	}
	return filepath.Join(dir, best), idx, nil
}

func pickNewestSnapshot(names []string) (string, uint64, bool) {
	type snap struct {
		name          string
		term, idx, ms uint64
	}
	var ss []snap
	for _, n := range names {
		if t, i, m, ok := parseSnapName(n); ok {
			ss = append(ss, snap{n, t, i, m})
		}
	}
	if len(ss) == 0 {
		return "", 0, false
	}
	sort.Slice(ss, func(a, b int) bool {
		x, y := ss[a], ss[b]
		if x.term != y.term {
			return x.term > y.term
		}
		if x.idx != y.idx {
			return x.idx > y.idx
		}
		return x.ms > y.ms
	})
	return ss[0].name, ss[0].idx, true
}

// perSequence is (after − before) / n for RSS and heap (heap −1 when either
// reading lacks it).
func perSequence(before, after memReading, n int) memPerSeq {
	m := memPerSeq{Stage: after.Stage, Role: after.Role, HeapInusePerSeq: -1, RSSPerSeq: -1}
	if n <= 0 {
		return m
	}
	if before.RSSBytes >= 0 && after.RSSBytes >= 0 {
		m.RSSPerSeq = float64(after.RSSBytes-before.RSSBytes) / float64(n)
	}
	if before.HeapInuse >= 0 && after.HeapInuse >= 0 {
		m.HeapInusePerSeq = float64(after.HeapInuse-before.HeapInuse) / float64(n)
	}
	return m
}

// ---- table -----------------------------------------------------------------

// runScaleTable prints the markdown table of one or more scale reports,
// one column per size.
func runScaleTable(files []string, w io.Writer) error {
	if len(files) == 0 {
		return errors.New("usage: ticketd-bench scale table REPORT.json...")
	}
	var reps []scaleReport
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var r scaleReport
		if err := json.Unmarshal(b, &r); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		reps = append(reps, r)
	}
	sort.SliceStable(reps, func(i, j int) bool { return reps[i].Sequences < reps[j].Sequences })
	_, err := io.WriteString(w, scaleTable(reps))
	return err
}

func scaleTable(reps []scaleReport) string {
	var b strings.Builder
	b.WriteString("| sequences |")
	sep := "|---|"
	for _, r := range reps {
		fmt.Fprintf(&b, " %s |", scaleThousands(r.Sequences))
		sep += "--:|"
	}
	b.WriteString("\n" + sep + "\n")
	row := func(label string, cell func(r scaleReport) string) {
		b.WriteString("| " + label + " |")
		for _, r := range reps {
			b.WriteString(" " + cell(r) + " |")
		}
		b.WriteString("\n")
	}
	rate := func(p scalePhase, n int) string {
		if p.Done == 0 {
			return "–"
		}
		s := fmt.Sprintf("%s/s (p99 %.1f ms)", scaleThousands(int(p.PerSec+0.5)), p.P99Ms)
		if p.Done < n {
			s += fmt.Sprintf(", %d of %d", p.Done, n)
		}
		return s
	}
	mem := func(stage, role string, heap bool) func(r scaleReport) string {
		return func(r scaleReport) string {
			for _, m := range r.PerSequence {
				if m.Stage == stage && m.Role == role {
					v := m.RSSPerSeq
					if heap {
						v = m.HeapInusePerSeq
					}
					if v == -1 {
						return "–"
					}
					return fmt.Sprintf("%.0f B", v)
				}
			}
			return "–"
		}
	}
	snap := func(role string) func(r scaleReport) string {
		return func(r scaleReport) string {
			for _, s := range r.Snapshots {
				if s.Role == role {
					if s.Error != "" && s.StateBytes == 0 {
						return "error"
					}
					return fmt.Sprintf("%s (%s, %.0f B/seq)", scaleSecs(s.Seconds), scaleMiB(s.StateBytes), float64(s.StateBytes)/float64(r.Sequences))
				}
			}
			return "–"
		}
	}
	restart := func(sig string) func(r scaleReport) string {
		return func(r scaleReport) string {
			for _, x := range r.Restarts {
				if x.Signal == sig {
					if x.Error != "" {
						return "error"
					}
					return fmt.Sprintf("%s (ready %s, stop %s)", scaleSecs(x.CaughtUpSeconds), scaleSecs(x.ReadySeconds), scaleSecs(x.StopSeconds))
				}
			}
			return "–"
		}
	}
	row("creation rate, PUT /v1/sequences/NAME via the leader", func(r scaleReport) string { return rate(r.Create, r.Sequences) })
	row("log entries to create them", func(r scaleReport) string { return scaleThousands(int(r.LogEntries)) })
	row("RSS per sequence, leader / follower", func(r scaleReport) string {
		return mem("after_create", "leader", false)(r) + " / " + mem("after_create", "follower", false)(r)
	})
	row("Go heap in use per sequence, leader / follower", func(r scaleReport) string {
		return mem("after_create", "leader", true)(r) + " / " + mem("after_create", "follower", true)(r)
	})
	row("first reservation on each sequence (count 1)", func(r scaleReport) string { return rate(r.Reserve, r.Sequences) })
	row("RSS per sequence after it, leader / follower", func(r scaleReport) string {
		return mem("after_reserve", "leader", false)(r) + " / " + mem("after_reserve", "follower", false)(r)
	})
	row("Go heap per sequence after it, leader / follower", func(r scaleReport) string {
		return mem("after_reserve", "leader", true)(r) + " / " + mem("after_reserve", "follower", true)(r)
	})
	row("RSS of the leader after it / of the new member after its install", func(r scaleReport) string {
		abs := func(stage, role string) string {
			for _, m := range r.Memory {
				if m.Stage == stage && m.Role == role && m.RSSBytes >= 0 {
					return scaleMiB(m.RSSBytes)
				}
			}
			return "–"
		}
		return abs("after_reserve", "leader") + " / " + abs("after_join", "new_member")
	})
	row("sequences evicted from the leader's issuer", func(r scaleReport) string {
		if r.IssuerEvicted < 0 {
			return "–"
		}
		return scaleThousands(int(r.IssuerEvicted))
	})
	row("snapshot on the leader: time (state.bin)", snap("leader"))
	row("snapshot on a follower: time (state.bin)", snap("follower"))
	row("follower restart after SIGTERM: caught up", restart("SIGTERM"))
	row("follower restart after SIGKILL: caught up", restart("SIGKILL"))
	row("new member: caught up after the add", func(r scaleReport) string {
		j := r.Join
		if j == nil {
			return "–"
		}
		if j.Error != "" {
			return "error"
		}
		how := "snapshot installed"
		if !j.SnapshotInstalled {
			how = "from the log, no snapshot"
		}
		return fmt.Sprintf("%s (%s)", scaleSecs(j.CaughtUpSeconds), how)
	})
	return b.String()
}

func scaleSecs(s float64) string {
	if s < 1 {
		return fmt.Sprintf("%.0f ms", s*1000)
	}
	return fmt.Sprintf("%.2f s", s)
}

func scaleMiB(b int64) string {
	if b < 1<<20 {
		return fmt.Sprintf("%.0f KiB", float64(b)/1024)
	}
	return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
}

// thousands formats n with "," every three digits.
func scaleThousands(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var out []byte
	for i := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}
