package rehearsal

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ticketd/ticketd/client"
)

// load is the Go SDK at work through the client Service while the cluster
// is disrupted: callers of a cached Sequence (the SDK's common path, whose
// refills cross failovers) and callers of Reserve (every call a round trip
// to the leader, so a gap in service shows at once). Every ID handed out is
// kept, to check at the end that none was handed out twice.
type load struct {
	bound  time.Duration // the SDK's call timeout
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu        sync.Mutex
	ranges    []client.Range
	calls     int
	failures  []string
	maxWait   time.Duration
	maxWaitOp string
	served    []time.Time // when each Reserve returned successfully
}

const (
	nextCallers    = 4
	reserveCallers = 2
	reserveCount   = 50
)

func startLoad(c *client.Client, seq string, bound time.Duration) *load {
	ctx, cancel := context.WithCancel(context.Background())
	l := &load{bound: bound, cancel: cancel}
	s := c.Sequence(seq)
	for i := 0; i < nextCallers; i++ {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			l.loop(ctx, "Next", 200*time.Microsecond, func() (client.Range, error) {
				id, err := s.Next(ctx)
				return client.Range{First: id, Last: id}, err
			})
		}()
	}
	for i := 0; i < reserveCallers; i++ {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			l.loop(ctx, "Reserve", 5*time.Millisecond, func() (client.Range, error) {
				return c.Reserve(ctx, seq, reserveCount)
			})
		}()
	}
	return l
}

func (l *load) loop(ctx context.Context, op string, pause time.Duration, call func() (client.Range, error)) {
	var mine []client.Range
	defer func() {
		l.mu.Lock()
		l.ranges = append(l.ranges, mine...)
		l.mu.Unlock()
	}()
	for ctx.Err() == nil {
		start := time.Now()
		r, err := call()
		took := time.Since(start)
		if ctx.Err() != nil {
			return // the load was stopped mid-call
		}
		l.mu.Lock()
		l.calls++
		if took > l.maxWait {
			l.maxWait, l.maxWaitOp = took, fmt.Sprintf("%s at %s", op, start.Format("15:04:05.000"))
		}
		if err != nil {
			l.failures = append(l.failures, fmt.Sprintf("%s at %s after %v: %v", op, start.Format("15:04:05.000"), took.Round(time.Millisecond), err))
		} else {
			mine = append(mine, r)
			if op == "Reserve" {
				l.served = append(l.served, time.Now())
			}
		}
		l.mu.Unlock()
		time.Sleep(pause)
	}
}

// stop ends the callers and waits for them.
func (l *load) stop() {
	l.cancel()
	l.wg.Wait()
}

// ids is how many IDs the callers were handed.
func (l *load) ids() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var n int64
	for _, r := range l.ranges {
		n += r.Len()
	}
	return n
}

// successes is how many Reserve calls have returned so far.
func (l *load) successes() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.served)
}

// check lists what the rehearsal must never see: an ID handed out twice, a
// failed call, a call that waited past the SDK's bound, and a stretch
// longer than the bound in which no Reserve succeeded.
func (l *load) check() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var problems []string
	rs := append([]client.Range(nil), l.ranges...)
	sort.Slice(rs, func(i, j int) bool { return rs[i].First < rs[j].First })
	dups := 0
	for i := 1; i < len(rs); i++ {
		if rs[i].First <= rs[i-1].Last {
			if dups++; dups <= 5 {
				problems = append(problems, fmt.Sprintf("IDs handed out twice: %d-%d and %d-%d", rs[i-1].First, rs[i-1].Last, rs[i].First, rs[i].Last))
			}
		}
		if rs[i].First < 1 {
			problems = append(problems, fmt.Sprintf("ID %d is not positive", rs[i].First))
		}
	}
	if dups > 5 {
		problems = append(problems, fmt.Sprintf("... %d overlaps in all", dups))
	}
	if len(l.failures) > 0 {
		problems = append(problems, fmt.Sprintf("%d calls failed, first: %s", len(l.failures), strings.Join(l.failures[:min(3, len(l.failures))], "; ")))
	}
	if l.maxWait > l.bound {
		problems = append(problems, fmt.Sprintf("a call waited %v (%s), past the SDK's bound %v", l.maxWait, l.maxWaitOp, l.bound))
	}
	if gap, at := l.longestGap(); gap > l.bound {
		problems = append(problems, fmt.Sprintf("no Reserve succeeded for %v (until %s), longer than the bound %v", gap, at.Format("15:04:05.000"), l.bound))
	}
	return problems
}

func (l *load) longestGap() (time.Duration, time.Time) {
	slices.SortFunc(l.served, time.Time.Compare)
	var gap time.Duration
	var at time.Time
	for i := 1; i < len(l.served); i++ {
		if d := l.served[i].Sub(l.served[i-1]); d > gap {
			gap, at = d, l.served[i]
		}
	}
	return gap, at
}

func (l *load) summary() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	gap, at := l.longestGap()
	var n int64
	for _, r := range l.ranges {
		n += r.Len()
	}
	return fmt.Sprintf("%d calls, %d IDs in %d ranges, %d failed, longest call %v (%s), longest gap between Reserves %v (until %s)",
		l.calls, n, len(l.ranges), len(l.failures), l.maxWait.Round(time.Millisecond), l.maxWaitOp, gap.Round(time.Millisecond), at.Format("15:04:05.000"))
}
