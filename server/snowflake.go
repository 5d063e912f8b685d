package server

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ticketd/ticketd/domain"
	"github.com/ticketd/ticketd/fsm"
	"github.com/ticketd/ticketd/layoutplan"
	"github.com/ticketd/ticketd/metrics"
)

// The Snowflake, audit and inspection side of store. Writes carry the
// leader's stamp (its clock and ID); reads are verified on the leader.

func (st store) CreateNamespace(ctx context.Context, n domain.NamespaceSettings) (domain.NamespaceCreated, error) {
	layout := fsm.Namespace{
		Name: n.Name, EpochMs: n.EpochMs, TimestampBits: n.TimestampBits, WorkerBits: n.WorkerBits,
		SequenceBits: n.SequenceBits, TickMs: n.TickMs, MaxWorkers: n.MaxWorkers, LeaseTTLMs: n.LeaseTTLMs,
		RecycleDelayMs: n.RecycleDelayMs, WorkerRole: n.WorkerRole, HorizonYears: n.HorizonYears,
	}
	if layout.HorizonYears == fsm.DefaultHorizonYears {
		// Stating the default and leaving it out are the same settings
		// (a namespace made before issue #16 has none).
		layout.HorizonYears = 0
	}
	resp, err := st.s.node.Apply(ctx, fsm.EncodeCreateNamespace(fsm.CreateNamespace{Namespace: layout, Stamp: st.s.node.Stamp()}))
	if err != nil {
		return domain.NamespaceCreated{}, kindOf(err)
	}
	res, ok := resp.(fsm.NamespaceResult)
	if !ok {
		return domain.NamespaceCreated{}, fmt.Errorf("create namespace: unexpected FSM response %T", resp)
	}
	now := st.clock()
	return domain.NamespaceCreated{Namespace: namespaceOf(res.Namespace, now), Created: res.Created, Warnings: layoutWarnings(res.Namespace, now)}, nil
}

// layoutWarnings is what is wrong with a namespace the state machine took
// (issue #16): its timestamp bits run out within its horizon from nowMs,
// this leader's wall clock. A warning, never a refusal: the refusal of a
// layout with under 10 years left is the state machine's rule, judged at
// the creating entry's stamp.
func layoutWarnings(n fsm.Namespace, nowMs int64) []string {
	l := layoutplan.Layout{Name: n.Name, TimestampBits: n.TimestampBits, WorkerBits: n.WorkerBits, SequenceBits: n.SequenceBits,
		TickMs: n.TickMs, EpochMs: n.EpochMs}
	within, years := layoutplan.ExhaustsWithin(l, nowMs, n.Horizon()*layoutplan.YearMs)
	if !within {
		return nil
	}
	return []string{fmt.Sprintf("the timestamp bits of %q run out at %s, %.1f years from now: within its horizon of %d years (horizon_years). "+
		"More timestamp bits, a longer tick_ms or a later epoch_ms last longer (ticketd plan proposes layouts); or state the horizon the IDs need",
		n.Name, time.UnixMilli(l.ExhaustsAtMs()).UTC().Format(time.RFC3339), years, n.Horizon())}
}

func (st store) Namespace(ctx context.Context, name string) (domain.Namespace, error) {
	if err := st.verifyRead(ctx); err != nil {
		return domain.Namespace{}, err
	}
	n, ok := st.s.node.FSM().Namespace(name)
	if !ok {
		return domain.Namespace{}, kindOf(fmt.Errorf("%w: %q", fsm.ErrNamespaceNotFound, name))
	}
	return namespaceOf(n, st.clock()), nil
}

// clock is this leader's wall clock, for capacity figures (informational).
func (st store) clock() int64 { return st.s.node.WallNow().UnixMilli() }

func (st store) Namespaces(ctx context.Context) ([]domain.Namespace, error) {
	if err := st.verifyRead(ctx); err != nil {
		return nil, err
	}
	now := st.clock()
	ns := st.s.node.FSM().Namespaces()
	out := make([]domain.Namespace, 0, len(ns))
	for _, n := range ns {
		out = append(out, namespaceOf(n, now))
	}
	return out, nil
}

// lease applies a lease command and answers with the lease and its
// namespace, both from the state the command was applied to: layouts never
// change, so no leadership check is needed (or allowed: one failing here
// would answer a committed grant with a 503, and the retry would take a
// second worker id).
func (st store) lease(ctx context.Context, ns string, op fsm.LeaseOp) (domain.LeaseGrant, error) {
	resp, err := st.s.node.ApplyLeaseOp(ctx, op)
	if err != nil {
		return domain.LeaseGrant{}, kindOf(err)
	}
	l, ok := resp.(fsm.Lease)
	if !ok {
		return domain.LeaseGrant{}, fmt.Errorf("lease: unexpected FSM response %T", resp)
	}
	n, ok := st.s.node.FSM().Namespace(ns)
	if !ok {
		return domain.LeaseGrant{}, fmt.Errorf("lease: namespace %q vanished", ns)
	}
	return domain.LeaseGrant{Lease: leaseOf(l), Namespace: namespaceOf(n, st.clock())}, nil
}

func (st store) AcquireLease(ctx context.Context, ns string, r domain.LeaseRequest) (domain.LeaseGrant, error) {
	g, err := st.lease(ctx, ns, fsm.LeaseOp{Op: fsm.LeaseOpAcquire, Namespace: ns, Holder: r.Holder, RequestID: r.RequestID,
		ClientTimeMs: r.ClientTimeMs, Chosen: r.Chosen, WorkerID: r.WorkerID})
	var wu fsm.WorkerUnavailableError
	if errors.As(err, &wu) {
		return g, domain.Wrap(domain.ErrWorkerUnavailable, &domain.WorkerUnavailableError{
			Namespace: wu.Namespace, WorkerID: wu.WorkerID, Holder: wu.Holder, State: string(wu.State), EndReason: wu.EndReason,
			EarliestFreeMs: wu.EarliestFreeMs, Message: wu.Error(),
		})
	}
	return g, err
}

func (st store) RenewLease(ctx context.Context, ns string, worker int64, token uint64, clientTimeMs int64) (domain.LeaseGrant, error) {
	return st.lease(ctx, ns, fsm.LeaseOp{Op: fsm.LeaseOpRenew, Namespace: ns, WorkerID: worker, Token: token, ClientTimeMs: clientTimeMs})
}

// ReleaseLease with token 0 is an operator's revoke.
func (st store) ReleaseLease(ctx context.Context, ns string, worker int64, token uint64) (domain.LeaseGrant, error) {
	op := fsm.LeaseOp{Op: fsm.LeaseOpRelease, Namespace: ns, WorkerID: worker, Token: token}
	if token == 0 {
		op.Op = fsm.LeaseOpRevoke
	}
	return st.lease(ctx, ns, op)
}

func (st store) Leases(ctx context.Context, ns string) ([]domain.Lease, domain.Namespace, error) {
	if err := st.verifyRead(ctx); err != nil {
		return nil, domain.Namespace{}, err
	}
	n, ok := st.s.node.FSM().Namespace(ns)
	if !ok {
		return nil, domain.Namespace{}, kindOf(fmt.Errorf("%w: %q", fsm.ErrNamespaceNotFound, ns))
	}
	ls := st.s.node.FSM().Leases(ns)
	out := make([]domain.Lease, 0, len(ls))
	for _, l := range ls {
		out = append(out, leaseOf(l))
	}
	return out, namespaceOf(n, st.clock()), nil
}

func (st store) Audit(ctx context.Context, afterSeq uint64, limit int) (domain.AuditPage, error) {
	if err := st.verifyRead(ctx); err != nil {
		return domain.AuditPage{}, err
	}
	recs := st.s.node.FSM().Audit(afterSeq, limit)
	page := domain.AuditPage{Records: make([]domain.AuditRecord, 0, len(recs)), Retention: fsm.AuditRetention}
	for _, r := range recs {
		page.Records = append(page.Records, auditRecordOf(r))
	}
	return page, nil
}

func (st store) CheckAudit(ctx context.Context) (domain.AuditCheck, error) {
	if err := st.verifyRead(ctx); err != nil {
		return domain.AuditCheck{}, err
	}
	rep := st.s.node.FSM().CheckAudit()
	st.s.cfg.Metrics.SetAuditViolations(len(rep.Violations))
	out := domain.AuditCheck{Blocks: rep.Blocks, Leases: rep.Leases, Violations: make([]domain.AuditViolation, 0, len(rep.Violations))}
	for _, v := range rep.Violations {
		out.Violations = append(out.Violations, domain.AuditViolation(v))
	}
	return out, nil
}

func (st store) InspectSequence(ctx context.Context, name string, id int64) (domain.RangeInspection, error) {
	if err := st.verifyRead(ctx); err != nil {
		return domain.RangeInspection{}, err
	}
	f := st.s.node.FSM()
	seq, ok := f.Sequence(name)
	if !ok {
		return domain.RangeInspection{}, kindOf(fmt.Errorf("%w: %q", fsm.ErrSequenceNotFound, name))
	}
	out := domain.RangeInspection{Sequence: name, ID: id, Issued: id >= seq.Start && id <= seq.Issued}
	if r, found := f.FindBlock(name, id); found {
		rec := auditRecordOf(r)
		out.Block = &rec
	}
	return out, nil
}

func (st store) InspectSnowflake(ctx context.Context, ns string, id int64) (domain.SnowflakeInspection, error) {
	if err := st.verifyRead(ctx); err != nil {
		return domain.SnowflakeInspection{}, err
	}
	f := st.s.node.FSM()
	n, ok := f.Namespace(ns)
	if !ok {
		return domain.SnowflakeInspection{}, kindOf(fmt.Errorf("%w: %q", fsm.ErrNamespaceNotFound, ns))
	}
	d := n.Decode(id)
	out := domain.SnowflakeInspection{Namespace: ns, ID: id, TimeMs: d.TimeMs, WorkerID: d.WorkerID, Sequence: d.Sequence, WorkerRole: workerRole(n.WorkerRole)}
	if rec, _, held := f.FindLease(ns, d.WorkerID, d.TimeMs); rec.Token != 0 {
		out.Holder, out.Found = rec.Holder, held
	}
	return out, nil
}

// capacityCollector reports, at scrape time, the number of sequences, the
// fraction of the range left of the metrics.MaxSequenceLabels sequences
// closest to running out (wherever their names sort, so that an alert on
// capacity sees every sequence that matters), and the years each namespace's
// timestamp bits have left (at most metrics.MaxSequenceLabels, by name).
type capacityCollector struct {
	f         *fsm.FSM
	count     *prometheus.Desc
	remaining *prometheus.Desc
	yearsLeft *prometheus.Desc
}

func newCapacityCollector(f *fsm.FSM) *capacityCollector {
	return &capacityCollector{
		f: f,
		count: prometheus.NewDesc("ticketd_sequences",
			"Sequences in the replicated state.", nil, nil),
		remaining: prometheus.NewDesc("ticketd_sequence_remaining_ratio",
			"Fraction of a sequence's IDs never handed to any leader (0 = exhausted), for the sequences closest to running out.", []string{"sequence"}, nil),
		yearsLeft: prometheus.NewDesc("ticketd_namespace_years_left",
			"Years until a Snowflake namespace's timestamp bits run out.", []string{"namespace"}, nil),
	}
}

func (c *capacityCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.count
	ch <- c.remaining
	ch <- c.yearsLeft
}

// capacityPage is how many sequences the collector reads under one hold of
// the FSM's read lock: a scrape of a million sequences never stalls Apply
// for more than one page.
const capacityPage = 4096

func (c *capacityCollector) Collect(ch chan<- prometheus.Metric) {
	var (
		lowest leastRemaining
		total  int
		after  string
	)
	for {
		page, more := c.f.SequencesPage(after, capacityPage)
		for _, s := range page {
			lowest.offer(s, metrics.MaxSequenceLabels)
		}
		total += len(page)
		if !more || len(page) == 0 {
			break
		}
		after = page[len(page)-1].Name
	}
	ch <- prometheus.MustNewConstMetric(c.count, prometheus.GaugeValue, float64(total))
	for _, e := range lowest {
		ch <- prometheus.MustNewConstMetric(c.remaining, prometheus.GaugeValue, e.ratio, e.name)
	}
	now := time.Now().UnixMilli()
	for i, n := range c.f.Namespaces() {
		if i >= metrics.MaxSequenceLabels {
			break
		}
		ch <- prometheus.MustNewConstMetric(c.yearsLeft, prometheus.GaugeValue, n.YearsLeft(now), n.Name)
	}
}

// leastRemaining keeps the sequences with the smallest remaining ratio seen
// so far: a max-heap on the ratio (ties: the later name on top, so the
// result does not depend on the order sequences are offered in).
type leastRemaining []capacityEntry

type capacityEntry struct {
	name  string
	ratio float64
}

func (h leastRemaining) Len() int { return len(h) }
func (h leastRemaining) Less(i, j int) bool {
	if h[i].ratio != h[j].ratio {
		return h[i].ratio > h[j].ratio
	}
	return h[i].name > h[j].name
}
func (h leastRemaining) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *leastRemaining) Push(x any)   { *h = append(*h, x.(capacityEntry)) }
func (h *leastRemaining) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// offer keeps s if it is among the k closest to running out.
func (h *leastRemaining) offer(s fsm.Sequence, k int) {
	e := capacityEntry{name: s.Name, ratio: remainingRatio(s)}
	if h.Len() < k {
		heap.Push(h, e)
		return
	}
	top := (*h)[0]
	if e.ratio < top.ratio || (e.ratio == top.ratio && e.name < top.name) {
		(*h)[0] = e
		heap.Fix(h, 0)
	}
}

func remainingRatio(s fsm.Sequence) float64 {
	return float64(s.Remaining()) / float64(uint64(s.Max-s.Start)+1)
}

// auditLoop runs the uniqueness probe on this node's replica of the audit
// every interval; the result is the ticketd_uniqueness_violations gauge.
func (s *Server) auditLoop(interval time.Duration) {
	defer s.wg.Done()
	if interval <= 0 {
		interval = 30 * time.Second
	}
	for {
		rep := s.node.FSM().CheckAudit()
		s.cfg.Metrics.SetAuditViolations(len(rep.Violations))
		if len(rep.Violations) > 0 {
			s.log.Error("UNIQUENESS PROBE FOUND VIOLATIONS", "violations", rep.Violations)
		}
		select {
		case <-s.stop:
			return
		case <-time.After(interval):
		}
	}
}
