package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/client"
)

// Issue #34 on real processes: a 3-node primary and a disaster-recovery
// standby, the standby's link cut and healed, the whole primary SIGKILLed
// under load, the standby promoted with `ticketd promote` and started as a
// one-node cluster. Nothing the primary acknowledged is handed out again,
// and no worker id the old region held is leased again before it rested.

const (
	drSeq     = "orders"
	drNS      = "sf"
	drTTL     = 2 * time.Second
	drRecycle = 3 * time.Second
	// drWorkers is the namespace's worker ids: as many as the old region
	// holds (three nodes and one SDK generator), so that the promoted
	// cluster's generators can only get an id the old region held.
	drWorkers = 4
)

// linkProxy forwards TCP connections to target until it is cut: then it
// closes every connection it carries and every new one at once. It stands
// in front of the standby's Raft port, the only way the primary reaches it.
type linkProxy struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]struct{}
}

func startLinkProxy(t *testing.T, target string) *linkProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &linkProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *linkProxy) addr() string { return p.ln.Addr().String() }

func (p *linkProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(c) {
			continue
		}
		p.wg.Add(1)
		go p.pipe(c)
	}
}

// track adds c to the live connections, or closes it if the link is cut.
func (p *linkProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		_ = c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *linkProxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		_ = c.Close()
		delete(p.conns, c)
	}
}

func (p *linkProxy) pipe(down net.Conn) {
	defer p.wg.Done()
	up, err := net.DialTimeout("tcp", p.target, time.Second)
	if err != nil {
		p.untrack(down)
		return
	}
	if !p.track(up) {
		p.untrack(down)
		return
	}
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, down); done <- struct{}{} }()
	go func() { _, _ = io.Copy(down, up); done <- struct{}{} }()
	<-done
	p.untrack(down, up) // ends the other copy too
	<-done
}

// setCut cuts the link (closing what it carries) or heals it.
func (p *linkProxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for c := range p.conns {
			_ = c.Close()
			delete(p.conns, c)
		}
	}
}

func (p *linkProxy) close() {
	_ = p.ln.Close()
	p.setCut(true)
	p.wg.Wait()
}

// sfUse is one answer of Snowflake IDs: who made them, under which worker
// id (decoded from the IDs), and when the caller had them.
type sfUse struct {
	via    string
	worker int64
	at     time.Time
	ids    []int64
}

// drLoad is the primary's load: eight SDK clients reserving ranges (six
// with Reserve, two through a Sequence's cache), two callers taking
// Snowflake IDs from the nodes' own generators, one SDK Snowflake
// generator with a worker-id lease of its own. It records what was handed
// to the caller.
type drLoad struct {
	layout api.Namespace
	h      *history // Reserve answers: disjoint and in real-time order
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	cached []op // what Sequence.NextN handed out, taken from ranges reserved earlier
	sf     []sfUse
	fails  map[string]int
}

func (l *drLoad) fail(kind string) {
	l.mu.Lock()
	l.fails[kind]++
	l.mu.Unlock()
}

func (l *drLoad) addSF(u sfUse) {
	l.mu.Lock()
	l.sf = append(l.sf, u)
	l.mu.Unlock()
}

func (l *drLoad) addCached(o op) {
	l.mu.Lock()
	l.cached = append(l.cached, o)
	l.mu.Unlock()
}

func (l *drLoad) snapshot() (cached []op, sf []sfUse) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.cached), slices.Clone(l.sf)
}

// worker decodes the worker id of a Snowflake ID: timestamp | worker | sequence.
func (l *drLoad) worker(id int64) int64 {
	return (id >> l.layout.SequenceBits) & (1<<l.layout.WorkerBits - 1)
}

// use names an answer's worker and checks that all its IDs are that worker's.
func (l *drLoad) use(via string, ids []int64, at time.Time) (sfUse, error) {
	u := sfUse{via: via, worker: l.worker(ids[0]), at: at, ids: ids}
	for _, id := range ids {
		if w := l.worker(id); w != u.worker {
			return u, fmt.Errorf("%s: one answer holds IDs of workers %d and %d", via, u.worker, w)
		}
	}
	return u, nil
}

func newDRLoad(layout api.Namespace) *drLoad {
	ctx, cancel := context.WithCancel(context.Background())
	return &drLoad{layout: layout, h: newHistory(), ctx: ctx, cancel: cancel, fails: map[string]int{}}
}

func urls(nodes []*node) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.url())
	}
	return out
}

func newSDK(t *testing.T, nodes []*node) *client.Client {
	t.Helper()
	c, err := client.New(urls(nodes), client.WithTimeout(time.Second), client.WithCallTimeout(2*time.Second),
		client.WithBackoff(20*time.Millisecond, 200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// start runs the load against nodes until halt.
func (l *drLoad) start(t *testing.T, nodes []*node, tag string) {
	deadline := time.Now().Add(2 * time.Minute) // a backstop; the test halts far earlier
	loop := func(body func(i int)) {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for i := 0; i < 1_000_000 && l.ctx.Err() == nil && time.Now().Before(deadline); i++ {
				body(i)
			}
		}()
	}
	pause := func(d time.Duration) {
		select {
		case <-l.ctx.Done():
		case <-time.After(d):
		}
	}
	for k := range 8 {
		sdk := newSDK(t, nodes)
		via := fmt.Sprintf("%s-sdk%d", tag, k)
		if k < 6 {
			loop(func(int) {
				ctx, cancel := context.WithTimeout(l.ctx, 2*time.Second)
				defer cancel()
				start := time.Now()
				r, err := sdk.Reserve(ctx, drSeq, 100+rand.Int64N(901))
				if err != nil {
					l.fail("reserve: " + errKind(err))
					pause(10 * time.Millisecond)
					return
				}
				l.h.add(op{via: via, start: start, ack: time.Now(), r: api.Range{Sequence: drSeq, First: r.First, Last: r.Last}})
			})
			continue
		}
		seq := sdk.Sequence(drSeq, client.WithRangeSize(100, 1000))
		loop(func(int) {
			ctx, cancel := context.WithTimeout(l.ctx, 2*time.Second)
			defer cancel()
			rs, err := seq.NextN(ctx, 1+rand.IntN(200))
			if err != nil {
				l.fail("sequence: " + errKind(err))
				pause(10 * time.Millisecond)
				return
			}
			now := time.Now()
			for _, r := range rs {
				l.addCached(op{via: via + " (cache)", ack: now, r: api.Range{Sequence: drSeq, First: r.First, Last: r.Last}})
			}
			pause(2 * time.Millisecond)
		})
	}
	for k := range 2 {
		hc := &http.Client{Timeout: time.Second}
		loop(func(i int) {
			n := nodes[(k+i)%len(nodes)]
			o := postSnowflake(hc, n, drNS, 1+rand.IntN(50))
			if o.status != http.StatusOK {
				l.fail(fmt.Sprintf("ids via node: %d %s", o.status, o.problem))
				pause(10 * time.Millisecond)
				return
			}
			u, err := l.use(n.id, o.ids, o.done)
			if err != nil || u.worker != o.worker {
				l.fail(fmt.Sprintf("ids via node: answer of worker %d holds IDs of %d (%v)", o.worker, u.worker, err))
				return
			}
			l.addSF(u)
			pause(2 * time.Millisecond)
		})
	}
	sdk := newSDK(t, nodes)
	gen, err := sdk.Snowflake(drNS, client.WithHolder(tag+"-sdk-generator"))
	if err != nil {
		t.Fatal(err)
	}
	loop(func(int) {
		ctx, cancel := context.WithTimeout(l.ctx, 2*time.Second)
		defer cancel()
		ids, err := gen.NextN(ctx, 10)
		if err != nil {
			l.fail("sdk generator: " + errKind(err))
			pause(10 * time.Millisecond)
			return
		}
		u, uerr := l.use(tag+"-sdk-generator", ids, time.Now())
		if uerr != nil {
			l.fail(uerr.Error())
			return
		}
		l.addSF(u)
		pause(5 * time.Millisecond)
	})
	t.Cleanup(l.halt)
}

func errKind(err error) string {
	switch {
	case errors.Is(err, client.ErrUnavailable):
		return "unavailable"
	case errors.Is(err, client.ErrLeaseExpired):
		return "lease expired"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return "timeout"
	}
	return err.Error()
}

func (l *drLoad) halt() {
	l.cancel()
	l.wg.Wait()
}

func (l *drLoad) failSummary() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var parts []string
	for k, v := range l.fails {
		parts = append(parts, fmt.Sprintf("%s: %d", k, v))
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

// waitUntil polls cond every 20 ms; it fails the test after timeout.
func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() error) time.Time {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v: %v", what, timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// leaderStatus is GET /v1/cluster of the running node that leads.
func leaderStatus(nodes []*node) (api.ClusterStatus, error) {
	for _, n := range nodes {
		if !n.running() {
			continue
		}
		var st api.ClusterStatus
		if code, err := kit.Do(http.MethodGet, n.url()+"/v1/cluster", nil, &st); err == nil && code == http.StatusOK && st.State == "Leader" && st.Node == n.id {
			return st, nil
		}
	}
	return api.ClusterStatus{}, errors.New("no leader answered")
}

// waitStandbyState waits until the leader's GET /v1/cluster records the
// standby in state want.
func waitStandbyState(t *testing.T, nodes []*node, want string, timeout time.Duration) (time.Time, api.StandbyStatus) {
	t.Helper()
	var sb api.StandbyStatus
	at := waitUntil(t, timeout, "standby "+want, func() error {
		st, err := leaderStatus(nodes)
		switch {
		case err != nil:
			return err
		case st.Standby == nil:
			return fmt.Errorf("%s records no standby", st.Node)
		case st.Standby.State != want:
			return fmt.Errorf("%s records it %s", st.Node, st.Standby.State)
		}
		sb = *st.Standby
		return nil
	})
	return at, sb
}

// dirFingerprint hashes dir's files to show that a refused promotion
// changed nothing: every file's bytes, but of the Raft store (raft.db) its
// buckets' keys and values, since bolt rewrites its meta page whenever the
// store is opened for writing, a change of nothing.
func dirFingerprint(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fmt.Fprintf(h, "%s\n", strings.TrimPrefix(path, dir))
		if d.Name() == "raft.db" {
			return boltContent(h, path)
		}
		b, err := os.ReadFile(path)
		h.Write(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// boltContent writes every bucket's keys and values of a bolt file to w.
func boltContent(w io.Writer, path string) error {
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		return err
	}
	defer db.Close()
	var walk func(prefix string, b *bbolt.Bucket) error
	walk = func(prefix string, b *bbolt.Bucket) error {
		return b.ForEach(func(k, v []byte) error {
			if v == nil {
				return walk(prefix+string(k)+"/", b.Bucket(k))
			}
			fmt.Fprintf(w, "%s%x=%x\n", prefix, k, v)
			return nil
		})
	}
	return db.View(func(tx *bbolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bbolt.Bucket) error { return walk(string(name)+"/", b) })
	})
}

// promoteRefused runs `ticketd promote` with args, which must fail with a
// message that holds every one of why and, when dir is not "" (a running
// node's store cannot be read), change nothing in dir.
func promoteRefused(t *testing.T, dir string, why []string, args ...string) {
	t.Helper()
	var before string
	if dir != "" {
		before = dirFingerprint(t, dir)
	}
	out, errOut, code := runCLI(t, nil, append([]string{"promote"}, args...)...)
	if code == 0 {
		t.Fatalf("ticketd promote %v succeeded, want a refusal (%v):\n%s", args, why, out)
	}
	for _, w := range append(why, "nothing was changed") {
		if !strings.Contains(errOut, w) {
			t.Fatalf("ticketd promote %v exited %d; its message does not say %q:\n%s", args, code, w, errOut)
		}
	}
	if dir != "" && dirFingerprint(t, dir) != before {
		t.Fatalf("ticketd promote %v was refused but changed %s", args, dir)
	}
	t.Logf("refused as it should (exit %d): ticketd promote %s: %s", code, strings.Join(args, " "), firstLine(errOut))
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

func TestStandby_Processes_LinkCutPrimaryKilledPromoted_NothingReissued(t *testing.T) {
	began := time.Now()
	c := newCluster(t)
	addrs := freeAddrs(t, 8)
	initial := fmt.Sprintf("n1=%s,n2=%s,n3=%s", addrs[1], addrs[3], addrs[5])
	var primary []*node
	for i := range 3 {
		// The namespace does not exist yet: the generators ask for it
		// in the background until it does.
		primary = append(primary, c.newNode(fmt.Sprintf("n%d", i+1), addrs[2*i], addrs[2*i+1],
			"--initial-cluster", initial, "--snowflake-namespaces", drNS))
	}
	for _, n := range primary {
		c.start(n)
	}
	c.waitReady(20*time.Second, primary...)
	leader := c.leader(10*time.Second, primary)
	createSequence(t, leader, drSeq)
	var created api.NamespaceCreated
	nsReq := api.NamespaceRequest{LeaseTTLMs: ptr64(drTTL.Milliseconds()), RecycleDelayMs: ptr64(drRecycle.Milliseconds()), MaxWorkers: ptr64(drWorkers)}
	if code, err := kit.Do(http.MethodPut, leader.url()+"/v1/namespaces/"+drNS, nsReq, &created); err != nil || code != http.StatusCreated {
		t.Fatalf("create namespace %s: %d %v", drNS, code, err)
	}

	// The standby, reached by the primary only through the proxy.
	proxy := startLinkProxy(t, addrs[7])
	dr := c.newNode("dr", addrs[6], addrs[7], "--raft-advertise", proxy.addr(),
		"--join", leader.url(), "--standby", "--standby-timeout", "1s")
	c.start(dr)
	_, sb := waitStandbyState(t, primary, api.StandbyInSync, 20*time.Second)
	t.Logf("standby dr in sync (bound %d, timeout %d ms), its Raft port behind the proxy %s", sb.Bound, sb.TimeoutMs, proxy.addr())
	if code, _ := kit.Do(http.MethodPost, dr.url()+"/v1/sequences/"+drSeq+"/ranges", api.ReserveRequest{Count: 1}, nil); code != http.StatusServiceUnavailable {
		t.Fatalf("a reservation on the standby answered %d, want 503", code)
	}
	if o := postSnowflake(&http.Client{Timeout: 2 * time.Second}, dr, drNS, 1); o.status != http.StatusServiceUnavailable {
		t.Fatalf("Snowflake IDs from the standby answered %d, want 503", o.status)
	}

	old := newDRLoad(created.Namespace)
	old.start(t, primary, "old")
	h := old.h
	waitUntil(t, 20*time.Second, "load flowing", func() error {
		_, sf := old.snapshot()
		seen := map[string]bool{}
		for _, u := range sf {
			seen[u.via] = true
		}
		if h.len() < 100 || len(seen) < 4 {
			return fmt.Errorf("%d ranges, Snowflake IDs from %v (failures: %s)", h.len(), seen, old.failSummary())
		}
		return nil
	})

	// Cut the standby's link: after its timeout the leader records it out
	// of sync and serves on; healed, it is recorded in sync again.
	cutAt := time.Now()
	proxy.setCut(true)
	outAt, sb := waitStandbyState(t, primary, api.StandbyOutOfSync, 15*time.Second)
	t.Logf("link cut: standby recorded out of sync %v later (reason %q)", outAt.Sub(cutAt).Round(time.Millisecond), sb.Reason)
	// The leader counts the timeout from the standby's last progress,
	// which can precede the cut by one replication round (the leader
	// sends every commit timeout, 50 ms, and heartbeats every 50 ms).
	if outAt.Sub(cutAt) < time.Second-100*time.Millisecond {
		t.Fatalf("standby recorded out of sync %v after the cut, well before its 1s timeout", outAt.Sub(cutAt))
	}
	h.waitFor(t, 10*time.Second, "a reservation sent after the standby was recorded out of sync", func() bool {
		_, ok := h.firstStartedAfter(outAt)
		return ok
	})
	time.Sleep(500 * time.Millisecond) // serve on without the standby
	healAt := time.Now()
	servedCut := 0
	for _, o := range h.snapshot() {
		if o.start.After(outAt) && o.ack.Before(healAt) {
			servedCut++
		}
	}
	proxy.setCut(false)
	inAt, _ := waitStandbyState(t, primary, api.StandbyInSync, 20*time.Second)
	t.Logf("primary served %d reservations while the standby was out of sync; healed: in sync again %v later",
		servedCut, inAt.Sub(healAt).Round(time.Millisecond))
	h.waitFor(t, 10*time.Second, "a reservation sent after the standby was in sync again", func() bool {
		_, ok := h.firstStartedAfter(inAt)
		return ok
	})
	time.Sleep(500 * time.Millisecond)
	waitCertified(t, primary, dr)

	// The whole primary dies at once, mid-load.
	killAt := time.Now()
	c.kill9(primary...)
	old.halt()
	reserved := h.snapshot()
	cached, oldSF := old.snapshot()
	var oldTop int64
	for _, o := range append(slices.Clone(reserved), cached...) {
		oldTop = max(oldTop, o.r.Last)
	}
	oldLastUse := map[int64]time.Time{} // worker id -> when the old region last handed out its IDs
	for _, u := range oldSF {
		if u.at.After(oldLastUse[u.worker]) {
			oldLastUse[u.worker] = u.at
		}
	}
	t.Logf("primary killed: %d ranges reserved, %d handed out of Sequence caches, highest ID %d; %d Snowflake answers under workers %v; failed attempts: %s",
		len(reserved), len(cached), oldTop, len(oldSF), slices.Sorted(maps.Keys(oldLastUse)), old.failSummary())

	// Refusals, each with its reason, and nothing changed.
	promoteRefused(t, "", []string{"locked by another process", "stop it first"}, "--data-dir", dr.dataDir)
	code, took := c.sigterm(dr, 10*time.Second)
	t.Logf("standby stopped with SIGTERM: exit %d after %v", code, took.Round(time.Millisecond))
	if code != 0 {
		t.Fatalf("the standby exited %d after SIGTERM, want 0", code)
	}
	promoteRefused(t, primary[0].dataDir, []string{`"n1" is a voter`}, "--data-dir", primary[0].dataDir)
	promoteRefused(t, dr.dataDir, []string{"below the recorded bound of 10000000"}, "--data-dir", dr.dataDir, "--advance", "9999999")

	// One clock here: the skew allowed can be small beside the 1 s timeout.
	out, errOut, code := runCLI(t, nil, "promote", "--data-dir", dr.dataDir, "--primary-lost-at", killAt.UTC().Format(time.RFC3339Nano), "--max-clock-skew", "200ms")
	if code != 0 {
		t.Fatalf("ticketd promote exited %d:\n%s%s", code, out, errOut)
	}
	t.Logf("ticketd promote:\n%s", out)
	for _, want := range []string{"promoted dr (raft " + proxy.addr() + ")", "standby was in-sync", "raised by 10000000 (1 sequences)", "worker-id leases held"} {
		if !strings.Contains(out, want) {
			t.Fatalf("ticketd promote's output does not say %q", want)
		}
	}
	if m := regexp.MustCompile(`(\d+) worker-id leases held`).FindStringSubmatch(out); m == nil {
		t.Fatal("ticketd promote does not say how many leases it kept held")
	} else if n, _ := strconv.Atoi(m[1]); n < len(oldLastUse) {
		t.Fatalf("ticketd promote kept %d leases held; the old region held %d worker ids", n, len(oldLastUse))
	}
	promoteRefused(t, dr.dataDir, []string{"already promoted"}, "--data-dir", dr.dataDir)

	// Start it as a one-node cluster: the same id, data and addresses, no
	// --join, --standby or --initial-cluster; it serves Snowflake IDs too.
	dr.mu.Lock()
	dr.args = append([]string{"serve", "--id", dr.id, "--data-dir", dr.dataDir, "--http-addr", dr.httpAddr, "--raft-addr", dr.raftAddr,
		"--raft-advertise", proxy.addr(), "--snowflake-namespaces", drNS}, testTimings...)
	dr.mu.Unlock()
	servedFrom := time.Now() // the new leader serves after this
	c.start(dr)
	c.waitReady(20*time.Second, dr)
	if strings.Contains(dr.lastLog(), "bootstrapping a new cluster") {
		t.Fatal("the promoted node bootstrapped a new cluster instead of serving its data")
	}
	var st api.ClusterStatus
	if code, err := kit.Do(http.MethodGet, dr.url()+"/v1/cluster", nil, &st); err != nil || code != http.StatusOK {
		t.Fatalf("GET /v1/cluster on the promoted node: %d %v", code, err)
	}
	if st.State != "Leader" || len(st.Members) != 1 || st.Standby != nil || len(st.Promotions) != 1 || st.Promotions[0].Standby != "dr" {
		t.Fatalf("the promoted node's status: state %s, %d members, standby %+v, promotions %+v", st.State, len(st.Members), st.Standby, st.Promotions)
	}
	t.Logf("promoted node ready %v after it was started", time.Since(servedFrom).Round(time.Millisecond))

	// Fresh clients: ranges, a Sequence's cache, Snowflake IDs from the
	// node and from an SDK generator.
	fresh := newDRLoad(created.Namespace)
	sdk := newSDK(t, []*node{dr})
	var after []op
	for i := range 40 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		start := time.Now()
		r, err := sdk.Reserve(ctx, drSeq, 100+rand.Int64N(901))
		cancel()
		if err != nil {
			t.Fatalf("reserve %d on the promoted node: %v", i, err)
		}
		o := op{via: "new-sdk", start: start, ack: time.Now(), r: api.Range{Sequence: drSeq, First: r.First, Last: r.Last}}
		h.add(o)
		after = append(after, o)
	}
	seq := newSDK(t, []*node{dr}).Sequence(drSeq, client.WithRangeSize(100, 1000))
	for range 20 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		rs, err := seq.NextN(ctx, 1+rand.IntN(200))
		cancel()
		if err != nil {
			t.Fatalf("Sequence.NextN on the promoted node: %v", err)
		}
		for _, r := range rs {
			after = append(after, op{via: "new-sdk (cache)", r: api.Range{Sequence: drSeq, First: r.First, Last: r.Last}})
		}
	}
	for _, o := range after {
		if o.r.First <= oldTop {
			t.Fatalf("the promoted cluster handed out %d..%d (%s), not above %d that the primary acknowledged", o.r.First, o.r.Last, o.via, oldTop)
		}
	}

	// Snowflake: every worker id is one the old region held
	// (drWorkers), so the first answer waits out its rest.
	hc := &http.Client{Timeout: 2 * time.Second}
	gen, err := newSDK(t, []*node{dr}).Snowflake(drNS, client.WithHolder("new-sdk-generator"))
	if err != nil {
		t.Fatal(err)
	}
	defer gen.Close()
	var nodeOK, genOK int
	waitUntil(t, drTTL+drRecycle+20*time.Second, "Snowflake IDs from the promoted cluster", func() error {
		if nodeOK < 20 {
			if o := postSnowflake(hc, dr, drNS, 1+rand.IntN(50)); o.status == http.StatusOK {
				u, err := fresh.use("new-node", o.ids, o.done)
				if err != nil || u.worker != o.worker {
					t.Fatalf("promoted node: answer of worker %d holds IDs of %d (%v)", o.worker, u.worker, err)
				}
				fresh.addSF(u)
				nodeOK++
			}
		}
		if genOK < 20 {
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			ids, err := gen.NextN(ctx, 10)
			cancel()
			if err == nil {
				u, err := fresh.use("new-sdk-generator", ids, time.Now())
				if err != nil {
					t.Fatal(err)
				}
				fresh.addSF(u)
				genOK++
			}
		}
		if nodeOK < 20 || genOK < 20 {
			return fmt.Errorf("%d answers from the node, %d from the SDK generator", nodeOK, genOK)
		}
		return nil
	})
	_, newSF := fresh.snapshot()
	firstNew := map[int64]sfUse{}
	for _, u := range newSF {
		if f, ok := firstNew[u.worker]; !ok || u.at.Before(f.at) {
			firstNew[u.worker] = u
		}
	}
	for w, u := range firstNew {
		last, held := oldLastUse[w]
		if !held {
			t.Logf("worker %d: never seen in the old region; first used by %s %v after the promoted node was started", w, u.via, u.at.Sub(servedFrom).Round(time.Millisecond))
			continue
		}
		rest := u.at.Sub(servedFrom)
		t.Logf("worker %d: last used in the old region at kill%+v; first used again by %s %v after the promoted node was started (recycle delay %v, TTL %v)",
			w, last.Sub(killAt).Round(time.Millisecond), u.via, rest.Round(time.Millisecond), drRecycle, drTTL)
		// Held at the promotion, the lease stays held and the new leader
		// times it out afresh: a full TTL, then the recycle delay.
		if rest < drTTL+drRecycle {
			t.Fatalf("worker %d, held in the old region, was used by %s %v after the promoted node was started, before its TTL plus recycle delay of %v",
				w, u.via, rest, drTTL+drRecycle)
		}
		if u.at.Before(last.Add(drTTL)) {
			t.Fatalf("worker %d: used again by %s within a TTL of its last use in the old region", w, u.via)
		}
	}

	// No ID twice: ranges disjoint across before and after, reservations
	// in real-time order, Snowflake IDs distinct.
	h.check(t)
	all := slices.Concat(h.snapshot(), cached) // the new Reserve answers are in h
	for _, o := range after {
		if strings.HasSuffix(o.via, "(cache)") {
			all = append(all, o)
		}
	}
	if err := checkDisjoint(all); err != nil {
		t.Fatal(err)
	}
	var ids int64
	for _, o := range all {
		ids += o.r.Last - o.r.First + 1
	}
	seen := map[int64]string{}
	for _, u := range slices.Concat(oldSF, newSF) {
		for _, id := range u.ids {
			if by, dup := seen[id]; dup {
				t.Fatalf("Snowflake ID %d handed out twice: by %s and by %s", id, by, u.via)
			}
			seen[id] = u.via
		}
	}
	t.Logf("checked %d ranges (%d IDs): %d before the loss (%d reserved, %d from caches), %d after; new IDs start %d above the old highest; %d Snowflake IDs distinct (%d answers before, %d after); wall time %v",
		len(all), ids, len(reserved)+len(cached), len(reserved), len(cached), len(after), minFirst(after)-oldTop, len(seen), len(oldSF), len(newSF), time.Since(began).Round(time.Millisecond))
}

func minFirst(ops []op) int64 {
	m := ops[0].r.First
	for _, o := range ops {
		m = min(m, o.r.First)
	}
	return m
}
