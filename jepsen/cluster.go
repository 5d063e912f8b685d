//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ticketd/ticketd/api"
)

// Cluster is the harness's model of the cluster: which identities should be
// voters, which slots they occupy, and how to reach them.
type Cluster struct {
	b       backend
	cfg     *config
	hc      *http.Client // control requests: short timeouts, no retries
	initial string       // --initial-cluster of the first members
	log     func(format string, args ...any)
	// prefix and slotBase name the first members (prefix1..prefixN) and
	// place them in slots slotBase+1..slotBase+N: "n" and 0 for the main
	// cluster; a restored cluster of a migration uses its own.
	prefix   string
	slotBase int
	// name is "" for the main cluster and the restored cluster's name in
	// the history (Op.Cluster) otherwise.
	name string

	mu      sync.Mutex
	members []*Node // the voters the cluster should have
	all     []*Node // every identity of the run
	gens    map[int]int
	stray   []*Node // removed but still running (clients may still talk to them)
}

func newCluster(b backend, cfg *config, hc *http.Client, logf func(string, ...any)) *Cluster {
	return &Cluster{b: b, cfg: cfg, hc: hc, gens: map[int]int{}, log: logf, prefix: "n"}
}

// maxSlots bounds the slots a run uses: the cluster size plus spares for
// membership changes.
func (c *Cluster) maxSlots() int { return c.cfg.Nodes + 2 }

// boot creates and starts n1..nN with a static initial cluster and waits
// until it is healthy.
func (c *Cluster) boot(ctx context.Context) error {
	var peers []string
	var nodes []*Node
	for i := 1; i <= c.cfg.Nodes; i++ {
		n, err := c.b.newNode(c.slotBase+i, fmt.Sprintf("%s%d", c.prefix, i), bootInitial)
		if err != nil {
			return err
		}
		nodes = append(nodes, n)
		peers = append(peers, n.ID+"="+c.b.raftAddr(n))
	}
	c.initial = strings.Join(peers, ",")
	c.mu.Lock()
	c.members = slices.Clone(nodes)
	c.all = slices.Clone(nodes)
	c.mu.Unlock()
	for _, n := range nodes {
		if err := c.b.start(ctx, n, c.initial); err != nil {
			return err
		}
	}
	return c.waitHealthy(ctx, 60*time.Second)
}

// Members returns the expected voters.
func (c *Cluster) Members() []*Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.members)
}

// All returns every identity of the run.
func (c *Cluster) All() []*Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.all)
}

// Targets are the nodes clients send requests to: the expected members and
// any removed node that still runs.
func (c *Cluster) Targets() []*Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append(slices.Clone(c.members), c.stray...)
}

func (c *Cluster) url(n *Node, path string) string {
	return "http://" + c.b.apiHostPort(n) + path
}

// call makes one control request and decodes a 2xx JSON answer.
func (c *Cluster) call(ctx context.Context, method string, n *Node, path string, body, out any, timeout time.Duration) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.url(n, path), rd)
	if err != nil {
		return 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+c.cfg.adminToken)
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return resp.StatusCode, err
	}
	if resp.StatusCode/100 != 2 {
		return resp.StatusCode, fmt.Errorf("%s %s on %s: %d %s", method, path, n.ID, resp.StatusCode, bytes.TrimSpace(data))
	}
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, fmt.Errorf("decode %s: %w", data, err)
		}
	}
	return resp.StatusCode, nil
}

func (c *Cluster) status(ctx context.Context, n *Node) (api.ClusterStatus, error) {
	var st api.ClusterStatus
	_, err := c.call(ctx, http.MethodGet, n, "/v1/cluster", nil, &st, 700*time.Millisecond)
	return st, err
}

// statuses asks every given node for its view, in parallel.
func (c *Cluster) statuses(ctx context.Context, nodes []*Node) map[*Node]api.ClusterStatus {
	var mu sync.Mutex
	out := map[*Node]api.ClusterStatus{}
	var wg sync.WaitGroup
	for _, n := range nodes {
		if !c.b.alive(n) || n.isPaused() {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if st, err := c.status(ctx, n); err == nil {
				mu.Lock()
				out[n] = st
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return out
}

// leader returns the running member that reports itself leader with the
// highest term, waiting up to timeout.
func (c *Cluster) leader(ctx context.Context, timeout time.Duration) (*Node, error) {
	deadline := time.Now().Add(timeout)
	for {
		var best *Node
		var bestTerm uint64
		for n, st := range c.statuses(ctx, c.Targets()) {
			if st.State == "Leader" && st.Node == n.ID && st.Term >= bestTerm {
				best, bestTerm = n, st.Term
			}
		}
		if best != nil {
			return best, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, fmt.Errorf("no leader within %v", timeout)
		}
		sleepCtx(ctx, 50*time.Millisecond)
	}
}

// leaderOtherThan waits for a leader that is not old.
func (c *Cluster) leaderOtherThan(ctx context.Context, old *Node, timeout time.Duration) (*Node, error) {
	deadline := time.Now().Add(timeout)
	for {
		l, err := c.leader(ctx, time.Until(deadline))
		if err == nil && l != old {
			return l, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, fmt.Errorf("no new leader (other than %v) within %v", old, timeout)
		}
		sleepCtx(ctx, 50*time.Millisecond)
	}
}

// healthy reports "" when every expected member runs, answers /readyz
// and the leader's configuration is exactly the expected voters; else what
// is wrong.
func (c *Cluster) healthy(ctx context.Context) string {
	members := c.Members()
	for _, n := range members {
		if !c.b.alive(n) {
			return n.ID + " is not running"
		}
		if n.isPaused() {
			return n.ID + " is paused"
		}
	}
	for _, n := range members {
		if code, err := c.call(ctx, http.MethodGet, n, "/readyz", nil, nil, 700*time.Millisecond); err != nil {
			return fmt.Sprintf("%s not ready (%d %v)", n.ID, code, err)
		}
	}
	l, err := c.leader(ctx, 0)
	if err != nil {
		return "no leader"
	}
	st, err := c.status(ctx, l)
	if err != nil {
		return "leader status: " + err.Error()
	}
	var have, want []string
	for _, m := range st.Members {
		if m.Voter {
			have = append(have, m.ID)
		}
	}
	for _, n := range members {
		want = append(want, n.ID)
	}
	sort.Strings(have)
	sort.Strings(want)
	if !slices.Equal(have, want) {
		return fmt.Sprintf("leader %s has voters %v, want %v", l.ID, have, want)
	}
	return ""
}

// waitHealthy polls healthy until it holds or timeout passes.
func (c *Cluster) waitHealthy(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		why := c.healthy(ctx)
		if why == "" {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("cluster not healthy within %v: %s", timeout, why)
		}
		sleepCtx(ctx, 100*time.Millisecond)
	}
}

// kill sends sig to n and, for SIGKILL and SIGTERM, waits for the exit.
func (c *Cluster) kill(n *Node, sig syscall.Signal) error {
	if sig == syscall.SIGKILL && n.isPaused() {
		_ = c.b.signal(n, syscall.SIGCONT)
	}
	if err := c.b.signal(n, sig); err != nil {
		return err
	}
	switch sig {
	case syscall.SIGKILL:
		return c.b.waitExit(n, 10*time.Second)
	case syscall.SIGTERM:
		if err := c.b.waitExit(n, 15*time.Second); err != nil {
			// A graceful shutdown that hangs is a server bug: SIGQUIT
			// makes the Go runtime print every goroutine's stack into
			// the node's log before it exits.
			_ = c.b.signal(n, syscall.SIGQUIT)
			if c.b.waitExit(n, 5*time.Second) != nil {
				_ = c.b.signal(n, syscall.SIGKILL)
				_ = c.b.waitExit(n, 10*time.Second)
			}
			return fmt.Errorf("SIGTERM: %w; sent SIGQUIT (goroutine dump in its log), then killed it", err)
		}
	}
	return nil
}

// restart starts a stopped node again on its data.
func (c *Cluster) restart(ctx context.Context, n *Node) error {
	if c.b.alive(n) {
		return nil
	}
	return c.b.start(ctx, n, c.initial)
}

// freeSlot returns a slot no expected member or stray occupies.
func (c *Cluster) freeSlot(rnd *rand.Rand) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	used := map[int]bool{}
	for _, n := range c.members {
		used[n.Slot] = true
	}
	for _, n := range c.stray {
		used[n.Slot] = true
	}
	var free []int
	for s := 1; s <= c.maxSlots(); s++ {
		if !used[s] {
			free = append(free, s)
		}
	}
	if len(free) == 0 {
		return 0, errors.New("no free slot")
	}
	return free[rnd.IntN(len(free))], nil
}

// join brings a fresh identity (empty data dir, new ID) up in slot and has
// it join through the current members; it returns once the leader counts
// it as a voter.
func (c *Cluster) join(ctx context.Context, slot int) (*Node, error) {
	c.mu.Lock()
	c.gens[slot]++
	id := fmt.Sprintf("n%dg%d", slot, c.gens[slot])
	var urls []string
	for _, m := range c.members {
		urls = append(urls, "http://"+c.b.httpAdvertise(m))
	}
	c.mu.Unlock()
	n, err := c.b.newNode(slot, id, bootJoin)
	if err != nil {
		return nil, err
	}
	n.JoinURLs = urls
	c.mu.Lock()
	c.all = append(c.all, n)
	c.mu.Unlock()
	if err := c.b.start(ctx, n, c.initial); err != nil {
		return n, err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if c.isVoter(ctx, n.ID) {
			c.mu.Lock()
			c.members = append(c.members, n)
			c.mu.Unlock()
			return n, nil
		}
		if !c.b.alive(n) {
			return n, fmt.Errorf("%s exited while joining", n.ID)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			// It may still be added later: count it as a member so the
			// health check shows the truth, and let the caller decide.
			c.mu.Lock()
			c.members = append(c.members, n)
			c.mu.Unlock()
			return n, fmt.Errorf("%s not a voter within 30s", n.ID)
		}
		sleepCtx(ctx, 100*time.Millisecond)
	}
}

// isVoter asks the leader whether id is a voter.
func (c *Cluster) isVoter(ctx context.Context, id string) bool {
	l, err := c.leader(ctx, 2*time.Second)
	if err != nil {
		return false
	}
	st, err := c.status(ctx, l)
	if err != nil {
		return false
	}
	for _, m := range st.Members {
		if m.ID == id && m.Voter {
			return true
		}
	}
	return false
}

// remove removes n from the configuration through the given nodes (the
// first that answers; followers forward to the leader) and drops it from
// the expected members. A removed node that still runs becomes a stray
// until it is stopped.
func (c *Cluster) remove(ctx context.Context, n *Node, via []*Node) error {
	deadline := time.Now().Add(20 * time.Second)
	var last error
	for {
		for _, v := range via {
			if v == n || !c.b.alive(v) || v.isPaused() {
				continue
			}
			code, err := c.call(ctx, http.MethodDelete, v, "/v1/cluster/members/"+n.ID, nil, nil, 3*time.Second)
			if err == nil || code == http.StatusNotFound {
				c.forget(n)
				return nil
			}
			last = err
		}
		// The answer may have been lost while the removal went through.
		if l, err := c.leader(ctx, time.Second); err == nil && l != n {
			if st, err := c.status(ctx, l); err == nil && !slices.ContainsFunc(st.Members, func(m api.Member) bool { return m.ID == n.ID }) {
				c.forget(n)
				return nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("remove %s: %v", n.ID, last)
		}
		sleepCtx(ctx, 200*time.Millisecond)
	}
}

func (c *Cluster) forget(n *Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.members = slices.DeleteFunc(c.members, func(m *Node) bool { return m == n })
	if c.b.alive(n) && !slices.Contains(c.stray, n) {
		c.stray = append(c.stray, n)
	}
}

// retire stops a removed node for good and wipes its data.
func (c *Cluster) retire(n *Node) error {
	var errs []error
	if c.b.alive(n) {
		errs = append(errs, c.kill(n, syscall.SIGKILL))
	}
	errs = append(errs, c.b.wipe(n))
	c.mu.Lock()
	c.stray = slices.DeleteFunc(c.stray, func(m *Node) bool { return m == n })
	c.mu.Unlock()
	return errors.Join(errs...)
}

// stopAll kills every node of the run.
func (c *Cluster) stopAll() {
	nodes := c.All()
	for _, n := range nodes {
		if c.b.alive(n) {
			if n.isPaused() {
				_ = c.b.signal(n, syscall.SIGCONT)
			}
			_ = c.b.signal(n, syscall.SIGKILL)
		}
	}
	for _, n := range nodes {
		_ = c.b.waitExit(n, 10*time.Second)
	}
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
