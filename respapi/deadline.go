package respapi

import (
	"context"
	"sync"
	"time"
)

// deadlineStep is how long one shared deadline context is handed out.
const deadlineStep = time.Second

// deadlines hands out the contexts commands run under: one per
// deadlineStep, shared by every command that starts during it, ending
// timeout to timeout+deadlineStep after each of them started. A context and
// a timer per command cost the leader 7% of its CPU with 64 clients sending
// one command at a time (pprof of redis-benchmark -c 64 -P 1), for a bound
// that only has to be about right: the issuer's waits have bounds of their
// own (block proposals, leadership rounds).
type deadlines struct {
	parent  context.Context
	timeout time.Duration

	mu     sync.Mutex
	cur    context.Context
	cancel context.CancelFunc // cur's; it also ends by itself at its deadline
	until  time.Time          // when cur stops being handed out
}

func (d *deadlines) get() context.Context {
	now := time.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cur == nil || now.After(d.until) {
		d.cur, d.cancel = context.WithTimeout(d.parent, d.timeout+deadlineStep)
		d.until = now.Add(deadlineStep)
	}
	return d.cur
}
