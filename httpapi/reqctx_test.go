package httpapi

import (
	"context"
	"errors"
	"testing"
	"time"
)

type ctxKey struct{}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	case <-time.After(2 * time.Second):
		return false
	}
}

// TestRequestCtx_AsWithTimeout: armed or not, the context answers as
// context.WithTimeout(parent, timeout) would.
func TestRequestCtx_AsWithTimeout(t *testing.T) {
	parent := context.WithValue(context.Background(), ctxKey{}, "v")

	t.Run("unarmed", func(t *testing.T) {
		before := time.Now()
		c, cancel := newRequestCtx(parent, time.Minute)
		defer cancel()
		if d, ok := c.Deadline(); !ok || d.Before(before.Add(time.Minute)) || d.After(time.Now().Add(time.Minute)) {
			t.Errorf("deadline %v %v", d, ok)
		}
		if c.Err() != nil || c.Value(ctxKey{}) != "v" || c.inner != nil {
			t.Errorf("err %v value %v armed %v", c.Err(), c.Value(ctxKey{}), c.inner != nil)
		}
	})
	t.Run("deadline passes unarmed, then armed", func(t *testing.T) {
		c, cancel := newRequestCtx(parent, time.Millisecond)
		defer cancel()
		time.Sleep(5 * time.Millisecond)
		if !errors.Is(c.Err(), context.DeadlineExceeded) {
			t.Errorf("err %v", c.Err())
		}
		if !closed(c.Done()) || !errors.Is(c.Err(), context.DeadlineExceeded) {
			t.Errorf("armed late: err %v", c.Err())
		}
	})
	t.Run("armed, then the deadline fires", func(t *testing.T) {
		c, cancel := newRequestCtx(parent, 20*time.Millisecond)
		defer cancel()
		if !closed(c.Done()) || !errors.Is(c.Err(), context.DeadlineExceeded) {
			t.Errorf("err %v", c.Err())
		}
	})
	t.Run("client gone (parent cancelled)", func(t *testing.T) {
		p, pcancel := context.WithCancel(parent)
		c, cancel := newRequestCtx(p, time.Minute)
		defer cancel()
		pcancel()
		if !errors.Is(c.Err(), context.Canceled) {
			t.Errorf("unarmed: err %v", c.Err())
		}
		if !closed(c.Done()) || !errors.Is(c.Err(), context.Canceled) {
			t.Errorf("armed: err %v", c.Err())
		}
		// Armed first, cancelled after: Done closes too.
		p2, pcancel2 := context.WithCancel(parent)
		c2, cancel2 := newRequestCtx(p2, time.Minute)
		defer cancel2()
		done := c2.Done()
		pcancel2()
		if !closed(done) || !errors.Is(c2.Err(), context.Canceled) {
			t.Errorf("armed first: err %v", c2.Err())
		}
	})
	t.Run("cancel func", func(t *testing.T) {
		c, cancel := newRequestCtx(parent, time.Minute)
		cancel()
		if !errors.Is(c.Err(), context.Canceled) || !closed(c.Done()) {
			t.Errorf("cancelled unarmed: err %v", c.Err())
		}
		c2, cancel2 := newRequestCtx(parent, time.Minute)
		done := c2.Done()
		cancel2()
		if !closed(done) || !errors.Is(c2.Err(), context.Canceled) {
			t.Errorf("cancelled armed: err %v", c2.Err())
		}
	})
	t.Run("earlier parent deadline wins", func(t *testing.T) {
		p, pcancel := context.WithTimeout(parent, time.Second)
		defer pcancel()
		pd, _ := p.Deadline()
		c, cancel := newRequestCtx(p, time.Minute)
		defer cancel()
		if d, _ := c.Deadline(); !d.Equal(pd) {
			t.Errorf("deadline %v, want the parent's %v", d, pd)
		}
	})
	t.Run("children see it end", func(t *testing.T) {
		c, cancel := newRequestCtx(parent, time.Minute)
		child, ccancel := context.WithCancel(c)
		defer ccancel()
		cancel()
		if !closed(child.Done()) {
			t.Error("child not cancelled")
		}
	})
}

// BenchmarkHotRequestCtx: the per-request context of a reservation that
// never waits (served from the block under a lease), built the old way and
// the new, over a parent like net/http's request context (a cancelCtx,
// which WithTimeout registers a child with).
func BenchmarkHotRequestCtx(b *testing.B) {
	parent, pcancel := context.WithCancel(context.Background())
	defer pcancel()
	b.Run("WithTimeout", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ctx, cancel := context.WithTimeout(parent, 5*time.Second)
			if ctx.Err() != nil {
				b.Fatal(ctx.Err())
			}
			cancel()
		}
	})
	b.Run("requestCtx", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ctx, cancel := newRequestCtx(parent, 5*time.Second)
			if ctx.Err() != nil {
				b.Fatal(ctx.Err())
			}
			cancel()
		}
	})
}
