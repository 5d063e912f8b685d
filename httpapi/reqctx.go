package httpapi

import (
	"context"
	"sync"
	"time"
)

// requestCtx is context.WithTimeout(parent, timeout) whose timer is armed
// only when something asks for Done. A reservation served from the
// leader's block under a valid lease (issue 44) never waits, so it never
// asks, and the timer context.WithTimeout arms and stops per request (and
// its registration as a child of net/http's request context) was 3% of
// the leader's CPU at 64 clients (pprof of bench.sh's lease section; see
// BenchmarkHotRequestCtx). Whoever waits (a block proposal, a quorum round,
// a forward to the leader) calls Done first and gets the same context as
// before: the same deadline, cancelled with the client's request. Err
// before arming reports the parent's error or, past the deadline,
// context.DeadlineExceeded, as the armed context would.
type requestCtx struct {
	parent   context.Context
	deadline time.Time

	mu     sync.Mutex
	inner  context.Context // armed: context.WithDeadline(parent, deadline)
	cancel context.CancelFunc
	done   bool // cancelled before it was armed
}

func newRequestCtx(parent context.Context, timeout time.Duration) (*requestCtx, context.CancelFunc) {
	c := &requestCtx{parent: parent, deadline: time.Now().Add(timeout)}
	return c, c.stop
}

// arm returns the armed context, arming it on first use.
func (c *requestCtx) arm() context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inner == nil {
		c.inner, c.cancel = context.WithDeadline(c.parent, c.deadline)
		if c.done {
			c.cancel()
		}
	}
	return c.inner
}

// stop is the CancelFunc: it cancels the armed context, or marks one not
// yet armed so that arming it later hands out a cancelled context.
func (c *requestCtx) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.done = true
	if c.cancel != nil {
		c.cancel()
	}
}

func (c *requestCtx) Deadline() (time.Time, bool) {
	if d, ok := c.parent.Deadline(); ok && d.Before(c.deadline) {
		return d, true
	}
	return c.deadline, true
}

func (c *requestCtx) Done() <-chan struct{} { return c.arm().Done() }

func (c *requestCtx) Err() error {
	c.mu.Lock()
	inner, done := c.inner, c.done
	c.mu.Unlock()
	switch {
	case inner != nil:
		return inner.Err()
	case done:
		if err := c.parent.Err(); err != nil {
			return err
		}
		return context.Canceled
	}
	if err := c.parent.Err(); err != nil {
		return err
	}
	if !time.Now().Before(c.deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

func (c *requestCtx) Value(key any) any { return c.parent.Value(key) }
