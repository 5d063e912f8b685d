//go:build linux

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ticketd/ticketd/jepsen/checker"
)

// The storage nemeses break a node's data filesystem (disks.go) under load
// and watch every node's /readyz meanwhile: a node whose Raft log cannot be
// written must say so (503 with the cause) and, once its disk is back,
// become ready again by itself.

const (
	// readyPoll is how often the watcher asks every node's /readyz.
	readyPoll = 200 * time.Millisecond
	// storageBite bounds how long a fault is held past its draw waiting
	// for the target to report it (503).
	storageBite = 10 * time.Second
	// readyAfterHeal bounds the wait for every node to be ready again
	// after the heal; the watcher then goes on for readyTail.
	readyAfterHeal = 30 * time.Second
	readyTail      = 2 * time.Second
)

// readyWatch polls every member's /readyz and keeps the changes.
type readyWatch struct {
	c      *Cluster
	now    func() int64
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	last    map[string]int // node -> last code seen
	changes []checker.ReadyChange
}

func (m *nemesis) watchReady() *readyWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &readyWatch{c: m.c, now: m.rec.now, cancel: cancel, done: make(chan struct{}), last: map[string]int{}}
	go func() {
		defer close(w.done)
		// Bounded: the caller stops it; at most 10 minutes regardless.
		for i := 0; i < int(10*time.Minute/readyPoll); i++ {
			w.poll(ctx)
			if !sleepCtx(ctx, readyPoll) {
				return
			}
		}
	}()
	return w
}

func (w *readyWatch) poll(ctx context.Context) {
	var wg sync.WaitGroup
	for _, n := range w.c.Members() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, detail := w.c.readyz(ctx, n)
			if ctx.Err() != nil {
				return
			}
			w.mu.Lock()
			defer w.mu.Unlock()
			if last, ok := w.last[n.ID]; !ok || last != code {
				w.last[n.ID] = code
				w.changes = append(w.changes, checker.ReadyChange{Node: n.ID, At: w.now(), Code: code, Detail: detail})
			}
		}()
	}
	wg.Wait()
}

// stop ends the polling and returns the changes.
func (w *readyWatch) stop() []checker.ReadyChange {
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.changes
}

// code is n's last /readyz status (-1: not asked yet).
func (w *readyWatch) code(n *Node) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	if c, ok := w.last[n.ID]; ok {
		return c
	}
	return -1
}

// wentDown reports whether n answered anything but 200 since from.
func (w *readyWatch) wentDown(n *Node, from int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range w.changes {
		if c.Node == n.ID && c.At >= from && c.Code != http.StatusOK {
			return true
		}
	}
	return false
}

// waitFor polls until cond holds or d passes (or ctx ends).
func waitFor(ctx context.Context, d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for i := 0; i < 100_000; i++ {
		if cond() {
			return true
		}
		if time.Now().After(deadline) || !sleepCtx(ctx, 50*time.Millisecond) {
			return cond()
		}
	}
	return cond()
}

// readyz asks n's /readyz: the status (0: no answer) and a problem's detail.
func (c *Cluster) readyz(ctx context.Context, n *Node) (int, string) {
	if !c.b.alive(n) {
		return 0, "not running"
	}
	ctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url(n, "/readyz"), nil)
	if err != nil {
		return 0, err.Error()
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, "no answer"
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<10))
	if resp.StatusCode == http.StatusOK {
		return resp.StatusCode, ""
	}
	var p struct {
		Detail string `json:"detail"`
		Title  string `json:"title"`
	}
	if json.Unmarshal(b, &p) == nil && p.Detail+p.Title != "" {
		return resp.StatusCode, strings.TrimSpace(p.Detail + " " + map[bool]string{true: "", false: "(" + p.Title + ")"}[p.Detail != ""])
	}
	return resp.StatusCode, strings.TrimSpace(string(b))
}

// storageFault runs one storage fault on n: inject, hold (at least the
// drawn time, longer — up to storageBite — until n answers /readyz other
// than 200), heal, then watch until every member is ready again. It
// records every node's readiness and whether n recovered.
func (m *nemesis) storageFault(ctx context.Context, ev *checker.Nemesis, n *Node, inject func() error, heal func() error) error {
	m.targets(ev, n)
	w := m.watchReady()
	start := m.rec.now()
	ierr := inject()
	if ierr == nil {
		m.hold(ctx)
		waitFor(ctx, storageBite, func() bool { return w.wentDown(n, start) })
	}
	herr := heal()
	m.healed(ev)
	// Every member ready again, by itself; then a little more of the
	// timeline. A dead node stays dead here: healAll restarts it only
	// after the watch, so a crash shows.
	members := m.c.Members()
	recovered := waitFor(context.Background(), readyAfterHeal, func() bool {
		for _, x := range members {
			if w.code(x) != http.StatusOK {
				return false
			}
		}
		return true
	})
	sleepCtx(context.Background(), readyTail)
	ev.Readiness = w.stop()
	var notes []string
	if !w.wentDown(n, start) && ierr == nil {
		notes = append(notes, n.ID+" stayed ready throughout")
	}
	if !recovered {
		var down []string
		for _, x := range members {
			if c := w.code(x); c != http.StatusOK {
				down = append(down, fmt.Sprintf("%s (%d)", x.ID, c))
			}
		}
		notes = append(notes, fmt.Sprintf("NOT ready again within %v of the heal: %s", readyAfterHeal, strings.Join(down, ", ")))
	}
	ev.Desc = strings.TrimSpace(strings.Join(append([]string{ev.Desc}, notes...), "; "))
	return errors.Join(ierr, herr)
}

// storageTarget returns the filesystems and the node a storage nemesis
// breaks: the leader, or a follower.
func (m *nemesis) storageTarget(ctx context.Context, leader bool) (*disks, *Node, error) {
	d, err := m.c.b.storage()
	if err != nil {
		return nil, nil, err
	}
	if leader {
		l, err := m.c.leader(ctx, 5*time.Second)
		return d, l, err
	}
	f, _, err := m.pickFollower(ctx)
	return d, f, err
}

// diskFullLeader fills the leader's data filesystem, holds, frees it.
func (m *nemesis) diskFullLeader(ctx context.Context, ev *checker.Nemesis) error {
	return m.diskFull(ctx, ev, true)
}

// diskFullFollower fills a follower's data filesystem, holds, frees it.
func (m *nemesis) diskFullFollower(ctx context.Context, ev *checker.Nemesis) error {
	return m.diskFull(ctx, ev, false)
}

func (m *nemesis) diskFull(ctx context.Context, ev *checker.Nemesis, leader bool) error {
	d, n, err := m.storageTarget(ctx, leader)
	if err != nil {
		return err
	}
	dir, err := d.mountPoint(n.ID)
	if err != nil {
		return err
	}
	return m.storageFault(ctx, ev, n, func() error {
		written, err := fill(dir, diskSize, 20*time.Second)
		ev.Desc = fmt.Sprintf("filled with %.1f MiB (the node used the rest of %d MiB less ext4's own)", float64(written)/(1<<20), diskSize>>20)
		return err
	}, func() error { return unfill(dir) })
}

// diskReadonly makes a random member's data filesystem read-only the way
// the kernel does after an I/O error, holds, then heals as an operator
// must: a read-only filesystem does not come back by itself, so stop the
// node, unmount, e2fsck, mount, start it again on its data.
func (m *nemesis) diskReadonly(ctx context.Context, ev *checker.Nemesis) error {
	d, err := m.c.b.storage()
	if err != nil {
		return err
	}
	n, err := m.pickRunning()
	if err != nil {
		return err
	}
	role := "follower"
	if l, err := m.c.leader(ctx, 5*time.Second); err == nil && l == n {
		role = "leader"
	}
	ev.Desc = role + " read-only (ext4 abort: EROFS)"
	return m.storageFault(ctx, ev, n, func() error { return d.abort(n.ID) }, func() error {
		// SIGTERM: the node drains and exits on its own; kill() escalates
		// (SIGQUIT for a stack dump, then SIGKILL) if it hangs.
		kerr := m.c.kill(n, syscall.SIGTERM)
		if kerr != nil {
			kerr = fmt.Errorf("stopping %s on a read-only disk: %w", n.ID, kerr)
		}
		out, rerr := d.repair(n.ID)
		if rerr != nil {
			return errors.Join(kerr, fmt.Errorf("repair: %w: %s", rerr, strings.TrimSpace(out)))
		}
		return errors.Join(kerr, m.c.restart(ctx, n))
	})
}
