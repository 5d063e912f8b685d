//go:build linux

package main

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/jepsen/checker"
)

// auditTail reads the main cluster's allocation audit as the run goes, for
// checker.CheckUnknownRaises: the raise records, each pass's times, and the
// records it never read. The audit keeps only its latest records, so it is
// read every few seconds rather than once at the end: a raise's record read
// before the audit dropped it still counts, and a record's absence counts
// only where the tail read every record.
type auditTail struct {
	c   *Cluster
	now func() int64

	pollMu sync.Mutex // one pass at a time
	node   *Node      // the node the last pass read from

	// leaseNS are the namespaces whose lease grants it keeps, with their
	// layouts (for the floors of their lease listings).
	leaseNS map[string]api.Namespace

	mu     sync.Mutex
	after  uint64 // the last record read
	a      checker.Audit
	floors map[checker.LeaseFloor]bool
}

func newAuditTail(c *Cluster, now func() int64, leaseNS map[string]api.Namespace) *auditTail {
	return &auditTail{c: c, now: now, a: checker.Audit{Type: "audit"}, leaseNS: leaseNS, floors: map[checker.LeaseFloor]bool{}}
}

// run polls every interval until ctx ends.
func (t *auditTail) run(ctx context.Context, interval time.Duration) {
	for sleepCtx(ctx, interval) {
		_ = t.poll(ctx)
	}
}

// poll reads the records made since the last pass, page by page, until a
// page comes back empty; only a pass that got there is recorded as a poll.
func (t *auditTail) poll(ctx context.Context) error {
	t.pollMu.Lock()
	defer t.pollMu.Unlock()
	start := t.now()
	for page := 0; page < 1000; page++ {
		l, err := t.page(ctx)
		if err != nil {
			return err
		}
		if len(l.Records) == 0 {
			t.mu.Lock()
			t.a.Polls = append(t.a.Polls, checker.AuditPoll{StartNs: start, EndNs: t.now(), Seq: t.after})
			t.mu.Unlock()
			t.pollFloors(ctx)
			return nil
		}
		t.mu.Lock()
		if first := l.Records[0].Seq; first > t.after+1 {
			t.a.Gaps = append(t.a.Gaps, checker.SeqRange{From: t.after + 1, To: first - 1})
		}
		seen := t.now()
		for _, r := range l.Records {
			if r.Kind == checker.AuditKindRaise {
				t.a.Raises = append(t.a.Raises, checker.AuditRecord{Seq: r.Seq, Index: r.Index, Kind: r.Kind, Sequence: r.Sequence, First: r.First, Last: r.Last})
			}
			if _, ok := t.leaseNS[r.Namespace]; ok && r.Kind == checker.AuditKindLease {
				t.a.Leases = append(t.a.Leases, checker.AuditRecord{Seq: r.Seq, Index: r.Index, Kind: r.Kind, Namespace: r.Namespace,
					WorkerID: r.WorkerID, Holder: r.Holder, Token: r.Token, TimeMs: r.TimeMs, PrevToken: r.PrevToken, SeenNs: seen})
			}
			t.after = max(t.after, r.Seq)
		}
		t.mu.Unlock()
	}
	return fmt.Errorf("audit: more than 1000 pages in one pass")
}

// page reads one page after the last record read, from the node that
// answered last or else the leader.
func (t *auditTail) page(ctx context.Context) (api.AuditList, error) {
	t.mu.Lock()
	after := t.after
	t.mu.Unlock()
	path := fmt.Sprintf("/v1/audit?after_seq=%d&limit=1000", after)
	var l api.AuditList
	if t.node != nil {
		if _, err := t.c.call(ctx, http.MethodGet, t.node, path, nil, &l, 5*time.Second); err == nil {
			return l, nil
		}
	}
	n, err := t.c.leader(ctx, 5*time.Second)
	if err != nil {
		t.node = nil
		return l, err
	}
	t.node = n
	_, err = t.c.call(ctx, http.MethodGet, n, path, nil, &l, 5*time.Second)
	return l, err
}

// pollFloors reads the lease listings of leaseNS and keeps each lease's
// floor the first time it is seen (a listing that fails is skipped: the
// floor checks are made where floors are known).
func (t *auditTail) pollFloors(ctx context.Context) {
	for ns, layout := range t.leaseNS {
		fs, err := t.pollLeaseFloors(ctx, ns, layout)
		if err != nil {
			continue
		}
		t.mu.Lock()
		for _, f := range fs {
			k := f
			k.SeenNs = 0
			if !t.floors[k] {
				t.floors[k] = true
				t.a.Floors = append(t.a.Floors, f)
			}
		}
		t.mu.Unlock()
	}
}

// snapshot copies what the tail has read so far.
func (t *auditTail) snapshot() *checker.Audit {
	t.mu.Lock()
	defer t.mu.Unlock()
	a := t.a
	a.Raises = append([]checker.AuditRecord(nil), t.a.Raises...)
	a.Polls = append([]checker.AuditPoll(nil), t.a.Polls...)
	a.Gaps = append([]checker.SeqRange(nil), t.a.Gaps...)
	a.Leases = append([]checker.AuditRecord(nil), t.a.Leases...)
	a.Floors = append([]checker.LeaseFloor(nil), t.a.Floors...)
	return &a
}
