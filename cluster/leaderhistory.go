package cluster

import (
	"sync"
	"time"

	"github.com/ticketd/ticketd/domain"
)

// leaderHistoryLen is how many leadership changes a node remembers for its
// status: enough to see a flapping leader on the status page, bounded so
// that a cluster that flaps for days does not grow it.
const leaderHistoryLen = 20

// leaderHistory is the leadership changes this node has seen: each time the
// leader it knows (or the term it is in, while it knows a leader) differs
// from the last one recorded. It is for people to read; nothing decides by
// it, so the wall-clock time of each change is only shown.
type leaderHistory struct {
	mu      sync.Mutex
	changes []domain.LeaderChange // oldest first, at most leaderHistoryLen
}

// observe records (term, leader) when it differs from the last change: a
// new leader, a new term under a known leader, or the leader lost ("").
func (h *leaderHistory) observe(term uint64, leader string, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := len(h.changes); n > 0 {
		last := h.changes[n-1]
		if last.Leader == leader && (leader == "" || last.Term == term) {
			return
		}
	} else if leader == "" {
		return // nothing known yet: not a change
	}
	if len(h.changes) == leaderHistoryLen {
		h.changes = append(h.changes[:0], h.changes[1:]...)
	}
	h.changes = append(h.changes, domain.LeaderChange{Term: term, Leader: leader, At: now})
}

// list returns the changes, newest first.
func (h *leaderHistory) list() []domain.LeaderChange {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]domain.LeaderChange, len(h.changes))
	for i, c := range h.changes {
		out[len(out)-1-i] = c
	}
	return out
}
