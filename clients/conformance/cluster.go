package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/internal/proc"
)

// timings are e2e's test timings (e2e/harness_test.go), without --dev: the
// run has authentication on, so that TICKETD_TOKEN is exercised.
var timings = []string{
	"--heartbeat-timeout", "300ms",
	"--election-timeout", "300ms",
	"--leader-lease-timeout", "150ms",
	"--shutdown-timeout", "5s",
}

// node is one ticketd process, restartable on the same addresses and data.
type node struct {
	id, httpAddr string
	args         []string
	dir          string

	mu   sync.Mutex
	runs []*proc.Process
}

func (n *node) url() string { return "http://" + n.httpAddr }

func (n *node) cur() *proc.Process {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.runs) == 0 {
		return nil
	}
	return n.runs[len(n.runs)-1]
}

func (n *node) running() bool { p := n.cur(); return p != nil && p.Alive() }

// cluster is a static 3-node cluster of ticketd processes with tokens.
type cluster struct {
	bin, dir         string
	adminTok, resTok string
	nodes            []*node
	hc               *http.Client
	// links are the proxies in front of the Raft ports (raftlinks.go),
	// for the partition fault.
	links *raftLinks
}

func token() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// newCluster writes the tokens file and declares three nodes bootstrapped
// from one --initial-cluster, as e2e's startStatic does.
func newCluster(bin, dir string) (*cluster, error) {
	c := &cluster{bin: bin, dir: dir, adminTok: token(), resTok: token(), hc: &http.Client{Timeout: 2 * time.Second}}
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte("admin "+c.adminTok+"\nreserve "+c.resTok+"\n"), 0o600); err != nil {
		return nil, err
	}
	addrs, err := proc.FreeAddrs(6)
	if err != nil {
		return nil, err
	}
	// Each node is dialled by its peers at a proxy in front of its Raft
	// port (--raft-advertise), so that the partition fault can cut it off.
	c.links = &raftLinks{dialer: func(conn net.Conn) string { return dialerOf(conn, c.pids()) }}
	var peers, advertised []string
	for i := range 3 {
		id := fmt.Sprintf("n%d", i+1)
		adv, err := c.links.add(id, addrs[2*i+1])
		if err != nil {
			c.links.close()
			return nil, err
		}
		advertised = append(advertised, adv)
		peers = append(peers, fmt.Sprintf("%s=%s", id, adv))
	}
	for i := range 3 {
		id := fmt.Sprintf("n%d", i+1)
		n := &node{id: id, httpAddr: addrs[2*i], dir: dir}
		n.args = append([]string{"serve", "--id", id, "--data-dir", filepath.Join(dir, "data", id),
			"--http-addr", addrs[2*i], "--raft-addr", addrs[2*i+1], "--raft-advertise", advertised[i],
			"--initial-cluster", strings.Join(peers, ","),
			"--tokens-file", tokens, "--insecure-plaintext-raft"}, timings...)
		c.nodes = append(c.nodes, n)
	}
	return c, nil
}

// pids are the process ids of the running nodes, by node id.
func (c *cluster) pids() map[string]int {
	out := map[string]int{}
	for _, n := range c.nodes {
		if p := n.cur(); p != nil && p.Alive() {
			out[n.id] = p.Pid()
		}
	}
	return out
}

func (c *cluster) urls() []string {
	var out []string
	for _, n := range c.nodes {
		out = append(out, n.url())
	}
	return out
}

// start starts n and waits for /livez; a port still taken is retried.
func (c *cluster) start(n *node) error {
	for i := 1; ; i++ {
		n.mu.Lock()
		p, err := proc.Start(proc.Spec{Path: c.bin, Args: n.args, OwnGroup: true,
			Log: filepath.Join(c.dir, "logs", fmt.Sprintf("%s.run%d.log", n.id, len(n.runs)+1))})
		if err == nil {
			n.runs = append(n.runs, p)
		}
		n.mu.Unlock()
		if err != nil {
			return fmt.Errorf("start %s: %w", n.id, err)
		}
		err = c.waitHTTP(n, "/livez", 15*time.Second)
		if err == nil {
			return nil
		}
		if i < 20 && !p.Alive() && strings.Contains(p.Log(), "address already in use") {
			time.Sleep(250 * time.Millisecond)
			continue
		}
		return fmt.Errorf("start %s: %w", n.id, err)
	}
}

func (c *cluster) get(n *node, path string, out any) (int, error) {
	req, _ := http.NewRequest(http.MethodGet, n.url()+path, nil)
	req.Header.Set("Authorization", "Bearer "+c.adminTok)
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if out != nil {
		_ = json.NewDecoder(resp.Body).Decode(out)
	}
	return resp.StatusCode, nil
}

func (c *cluster) waitHTTP(n *node, path string, timeout time.Duration) error {
	for deadline := time.Now().Add(timeout); ; time.Sleep(20 * time.Millisecond) {
		if !n.running() {
			return fmt.Errorf("%s exited (%v)", n.id, n.cur().State())
		}
		if code, _ := c.get(n, path, nil); code == http.StatusOK {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %s not 200 within %v", n.id, path, timeout)
		}
	}
}

// waitReady waits until every node answers /readyz 200 (a leader is known
// and the node has caught up).
func (c *cluster) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for _, n := range c.nodes {
		if err := c.waitHTTP(n, "/readyz", time.Until(deadline)); err != nil {
			return err
		}
	}
	return nil
}

// leader is the running node that says it leads (the highest term if two do).
func (c *cluster) leader(timeout time.Duration) (*node, error) {
	for deadline := time.Now().Add(timeout); ; time.Sleep(20 * time.Millisecond) {
		var best *node
		var term uint64
		for _, n := range c.nodes {
			var st api.ClusterStatus
			if !n.running() {
				continue
			}
			if code, err := c.get(n, "/v1/cluster", &st); err == nil && code == http.StatusOK && st.State == "Leader" && st.Node == n.id && st.Term >= term {
				best, term = n, st.Term
			}
		}
		if best != nil {
			return best, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("no leader within %v", timeout)
		}
	}
}

// leaderOtherThan is the running node other than old that says it leads,
// with a term above any old still claims.
func (c *cluster) leaderOtherThan(old *node, timeout time.Duration) (*node, error) {
	for deadline := time.Now().Add(timeout); ; time.Sleep(20 * time.Millisecond) {
		var st api.ClusterStatus
		var oldTerm uint64
		if code, err := c.get(old, "/v1/cluster", &st); err == nil && code == http.StatusOK && st.State == "Leader" {
			oldTerm = st.Term
		}
		for _, n := range c.nodes {
			if n == old || !n.running() {
				continue
			}
			if code, err := c.get(n, "/v1/cluster", &st); err == nil && code == http.StatusOK && st.State == "Leader" && st.Node == n.id && st.Term > oldTerm {
				return n, nil
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("no leader but %s within %v", old.id, timeout)
		}
	}
}

func (c *cluster) signal(n *node, sig syscall.Signal) error {
	p := n.cur()
	if p == nil {
		return errors.New(n.id + " never started")
	}
	return p.Signal(sig)
}

// stop sends sig (SIGKILL or SIGTERM) and waits for the exit.
func (c *cluster) stop(n *node, sig syscall.Signal) error {
	if err := c.signal(n, sig); err != nil {
		return err
	}
	if err := n.cur().Wait(15 * time.Second); err != nil {
		_ = c.signal(n, syscall.SIGKILL)
		return fmt.Errorf("%s after %v: %w", n.id, sig, err)
	}
	return nil
}

// killAll is the end of every run, passed or not.
func (c *cluster) killAll() {
	for _, n := range c.nodes {
		if n.running() {
			_ = c.signal(n, syscall.SIGCONT)
			_ = c.signal(n, syscall.SIGKILL)
			_ = n.cur().Wait(10 * time.Second)
		}
	}
	c.links.close()
}

// tails is the end of every run's log of every node.
func (c *cluster) tails(lines int) string {
	var b strings.Builder
	for _, n := range c.nodes {
		n.mu.Lock()
		runs := append([]*proc.Process(nil), n.runs...)
		n.mu.Unlock()
		for _, p := range runs {
			fmt.Fprintf(&b, "--- %s (last %d lines) ---\n%s\n", filepath.Base(p.LogPath()), lines, strings.Join(p.Tail(lines), "\n"))
		}
	}
	return b.String()
}

// setup creates the sequence and the Snowflake namespace the lanes use,
// as admin, retrying while the cluster settles.
func (c *cluster) setup(ctx context.Context, seq, ns string) error {
	adm, err := adminClient(c)
	if err != nil {
		return err
	}
	defer adm.Close()
	if _, _, err := adm.CreateSequence(ctx, seq, sequenceSettings()); err != nil {
		return fmt.Errorf("create sequence %s: %w", seq, err)
	}
	if _, _, err := adm.CreateNamespace(ctx, ns, api.NamespaceRequest{}); err != nil {
		return fmt.Errorf("create namespace %s: %w", ns, err)
	}
	return nil
}
