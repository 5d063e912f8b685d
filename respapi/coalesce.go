package respapi

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/domain"
)

// Coalesced forwarding, as httpapi's coalescer does it for HTTP (issue 44).
// A follower used to forward every reservation its Redis clients sent as an
// HTTP request of its own: through a follower INCR ran at 0.21× of
// redis-server. Now the reservations of one sequence and token that arrive
// while one is on its way to the leader wait for it to end, and then go
// together, as one reservation of their summed counts, cut into each
// caller's part in arrival order.
//
// Linearizable still: every caller of a batch arrived before the batch was
// sent, so the leader cut the batch's range, and confirmed its leadership,
// after each of them began. Unique still: the parts are disjoint pieces of
// one range. A batch of several that fails in any way sends each caller's
// own reservation on its own, so that every error a caller sees is the
// leader's answer to that caller's request.

// maxBatchCallers bounds the callers of one coalesced reservation.
const maxBatchCallers = 256

type forwardKey struct{ name, token string }

type forwardCaller struct {
	count int64
	done  chan struct{}
	// Set before done closes:
	first int64
	err   error
	alone bool // the batch failed: send this reservation on its own
}

type forwardQueue struct {
	running bool
	waiting []*forwardCaller
}

// forwardBatches coalesces a follower's forwarded reservations.
type forwardBatches struct {
	send    func(ctx context.Context, name string, count int64, token string) (first, last int64, err error)
	timeout time.Duration // bounds a batch's flight: no caller owns it

	mu     sync.Mutex
	queues map[forwardKey]*forwardQueue
}

func newForwardBatches(send func(context.Context, string, int64, string) (int64, int64, error), timeout time.Duration) *forwardBatches {
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	return &forwardBatches{send: send, timeout: timeout, queues: map[forwardKey]*forwardQueue{}}
}

// reserve forwards a reservation, with those of the same sequence and
// token that arrive while one is in flight.
func (b *forwardBatches) reserve(ctx context.Context, name string, count int64, token string) (first, last int64, err error) {
	key := forwardKey{name, token}
	c := &forwardCaller{count: count, done: make(chan struct{})}
	b.mu.Lock()
	q := b.queues[key]
	if q == nil {
		q = &forwardQueue{}
		b.queues[key] = q
	}
	if q.running {
		q.waiting = append(q.waiting, c)
		b.mu.Unlock()
	} else {
		q.running = true
		b.mu.Unlock()
		go b.fly(key, []*forwardCaller{c})
	}
	select {
	case <-c.done:
	case <-ctx.Done():
		// The caller left; its part, if any, becomes a gap.
		return 0, 0, ctx.Err()
	}
	if c.alone {
		return b.send(ctx, name, count, token)
	}
	if c.err != nil {
		return 0, 0, c.err
	}
	return c.first, c.first + count - 1, nil
}

// fly sends batch, then every batch that gathered meanwhile, until none
// waits.
func (b *forwardBatches) fly(key forwardKey, batch []*forwardCaller) {
	for len(batch) > 0 {
		b.send1(key, batch)
		b.mu.Lock()
		q := b.queues[key]
		n := min(len(q.waiting), maxBatchCallers)
		batch = q.waiting[:n:n]
		q.waiting = q.waiting[n:]
		if len(batch) == 0 {
			q.running = false
			delete(b.queues, key)
		}
		b.mu.Unlock()
	}
}

// send1 sends one batch and hands out its parts; a batch that passes the
// largest reservation is split first.
func (b *forwardBatches) send1(key forwardKey, batch []*forwardCaller) {
	for len(batch) > 0 {
		n, sum := 0, int64(0)
		for n < len(batch) && sum+batch[n].count <= api.MaxReserveCount {
			sum += batch[n].count
			n++
		}
		n = max(n, 1) // a count above the largest: the leader says so
		part := batch[:n]
		batch = batch[n:]
		ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
		first, _, err := b.send(ctx, key.name, max(sum, part[0].count), key.token)
		cancel()
		for _, c := range part {
			switch {
			case err == nil:
				c.first = first
				first += c.count
			case len(part) > 1 && !errors.Is(err, domain.ErrUnavailable):
				c.alone = true // its own request gets the leader's own answer
			default:
				c.err = err
			}
			close(c.done)
		}
	}
}
