package server

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/fsm"
	"github.com/ticketd/ticketd/metrics"
)

// The Snowflake, audit and inspection side of store. Writes carry the
// leader's stamp (its clock and ID); reads are verified on the leader.

func (st store) applyAs(ctx context.Context, cmd []byte) (any, error) {
	return st.s.node.Apply(ctx, cmd)
}

func (st store) CreateNamespace(ctx context.Context, n fsm.Namespace) (fsm.NamespaceResult, error) {
	resp, err := st.applyAs(ctx, fsm.EncodeCreateNamespace(fsm.CreateNamespace{Namespace: n, Stamp: st.s.node.Stamp()}))
	if err != nil {
		return fsm.NamespaceResult{}, err
	}
	res, ok := resp.(fsm.NamespaceResult)
	if !ok {
		return res, fmt.Errorf("create namespace: unexpected FSM response %T", resp)
	}
	return res, nil
}

func (st store) Namespace(ctx context.Context, name string) (fsm.Namespace, int64, error) {
	if err := st.verifyRead(ctx); err != nil {
		return fsm.Namespace{}, 0, err
	}
	n, ok := st.s.node.FSM().Namespace(name)
	if !ok {
		return n, 0, fmt.Errorf("%w: %q", fsm.ErrNamespaceNotFound, name)
	}
	return n, st.clock(), nil
}

// clock is this leader's wall clock, for capacity figures (informational).
func (st store) clock() int64 { return st.s.node.WallNow().UnixMilli() }

func (st store) Namespaces(ctx context.Context) ([]fsm.Namespace, int64, error) {
	if err := st.verifyRead(ctx); err != nil {
		return nil, 0, err
	}
	return st.s.node.FSM().Namespaces(), st.clock(), nil
}

// lease applies a lease command and answers with the lease and its
// namespace, both from the state the command was applied to: layouts never
// change, so no leadership check is needed (or allowed: one failing here
// would answer a committed grant with a 503, and the retry would take a
// second worker id).
func (st store) lease(ctx context.Context, ns string, op fsm.LeaseOp) (fsm.Lease, fsm.Namespace, error) {
	resp, err := st.s.proposeLeaseOp(ctx, op)
	if err != nil {
		return fsm.Lease{}, fsm.Namespace{}, err
	}
	l, ok := resp.(fsm.Lease)
	if !ok {
		return l, fsm.Namespace{}, fmt.Errorf("lease: unexpected FSM response %T", resp)
	}
	n, ok := st.s.node.FSM().Namespace(ns)
	if !ok {
		return l, n, fmt.Errorf("lease: namespace %q vanished", ns)
	}
	return l, n, nil
}

func (st store) AcquireLease(ctx context.Context, ns, holder, requestID string, clientTimeMs int64) (fsm.Lease, fsm.Namespace, error) {
	return st.lease(ctx, ns, fsm.LeaseOp{Op: fsm.LeaseOpAcquire, Namespace: ns, Holder: holder, RequestID: requestID, ClientTimeMs: clientTimeMs})
}

func (st store) RenewLease(ctx context.Context, ns string, worker int64, token uint64, clientTimeMs int64) (fsm.Lease, fsm.Namespace, error) {
	return st.lease(ctx, ns, fsm.LeaseOp{Op: fsm.LeaseOpRenew, Namespace: ns, WorkerID: worker, Token: token, ClientTimeMs: clientTimeMs})
}

// ReleaseLease with token 0 is an operator's revoke.
func (st store) ReleaseLease(ctx context.Context, ns string, worker int64, token uint64) (fsm.Lease, fsm.Namespace, error) {
	op := fsm.LeaseOp{Op: fsm.LeaseOpRelease, Namespace: ns, WorkerID: worker, Token: token}
	if token == 0 {
		op.Op = fsm.LeaseOpRevoke
	}
	return st.lease(ctx, ns, op)
}

func (st store) Leases(ctx context.Context, ns string) ([]fsm.Lease, fsm.Namespace, error) {
	if err := st.verifyRead(ctx); err != nil {
		return nil, fsm.Namespace{}, err
	}
	n, ok := st.s.node.FSM().Namespace(ns)
	if !ok {
		return nil, n, fmt.Errorf("%w: %q", fsm.ErrNamespaceNotFound, ns)
	}
	return st.s.node.FSM().Leases(ns), n, nil
}

func (st store) Audit(ctx context.Context, afterSeq uint64, limit int) ([]fsm.AuditRecord, error) {
	if err := st.verifyRead(ctx); err != nil {
		return nil, err
	}
	return st.s.node.FSM().Audit(afterSeq, limit), nil
}

func (st store) CheckAudit(ctx context.Context) (fsm.CheckReport, error) {
	if err := st.verifyRead(ctx); err != nil {
		return fsm.CheckReport{}, err
	}
	rep := st.s.node.FSM().CheckAudit()
	st.s.cfg.Metrics.SetAuditViolations(len(rep.Violations))
	return rep, nil
}

func (st store) InspectSequence(ctx context.Context, name string, id int64) (api.RangeInspection, error) {
	if err := st.verifyRead(ctx); err != nil {
		return api.RangeInspection{}, err
	}
	f := st.s.node.FSM()
	seq, ok := f.Sequence(name)
	if !ok {
		return api.RangeInspection{}, fmt.Errorf("%w: %q", fsm.ErrSequenceNotFound, name)
	}
	out := api.RangeInspection{Sequence: name, ID: id, Issued: id >= seq.Start && id <= seq.Issued}
	if r, found := f.FindBlock(name, id); found {
		rec := api.AuditRecord(r)
		out.Block = &rec
	}
	return out, nil
}

func (st store) InspectSnowflake(ctx context.Context, ns string, id int64) (api.SnowflakeInspection, error) {
	if err := st.verifyRead(ctx); err != nil {
		return api.SnowflakeInspection{}, err
	}
	f := st.s.node.FSM()
	n, ok := f.Namespace(ns)
	if !ok {
		return api.SnowflakeInspection{}, fmt.Errorf("%w: %q", fsm.ErrNamespaceNotFound, ns)
	}
	d := n.Decode(id)
	out := api.SnowflakeInspection{
		Namespace: ns, ID: id, TimeMs: d.TimeMs, Time: time.UnixMilli(d.TimeMs).UTC().Format(time.RFC3339Nano),
		WorkerID: d.WorkerID, Sequence: d.Sequence,
	}
	if rec, _, held := f.FindLease(ns, d.WorkerID, d.TimeMs); rec.Token != 0 {
		out.Holder, out.Found = rec.Holder, held
	}
	return out, nil
}

// capacityCollector reports, at scrape time, the fraction of each
// sequence's range left and the years each namespace's timestamp bits have
// left (at most metrics.MaxSequenceLabels of each, by name).
type capacityCollector struct {
	f         *fsm.FSM
	remaining *prometheus.Desc
	yearsLeft *prometheus.Desc
}

func newCapacityCollector(f *fsm.FSM) *capacityCollector {
	return &capacityCollector{
		f: f,
		remaining: prometheus.NewDesc("ticketd_sequence_remaining_ratio",
			"Fraction of a sequence's IDs never handed to any leader (0 = exhausted).", []string{"sequence"}, nil),
		yearsLeft: prometheus.NewDesc("ticketd_namespace_years_left",
			"Years until a Snowflake namespace's timestamp bits run out.", []string{"namespace"}, nil),
	}
}

func (c *capacityCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.remaining
	ch <- c.yearsLeft
}

func (c *capacityCollector) Collect(ch chan<- prometheus.Metric) {
	for i, s := range c.f.Sequences() {
		if i >= metrics.MaxSequenceLabels {
			break
		}
		ch <- prometheus.MustNewConstMetric(c.remaining, prometheus.GaugeValue, remainingRatio(s), s.Name)
	}
	now := time.Now().UnixMilli()
	for i, n := range c.f.Namespaces() {
		if i >= metrics.MaxSequenceLabels {
			break
		}
		ch <- prometheus.MustNewConstMetric(c.yearsLeft, prometheus.GaugeValue, n.YearsLeft(now), n.Name)
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

// proposeLeaseOp stamps a lease operation with this leader's clock and ID
// (recorded for operators, never compared) and applies it.
func (s *Server) proposeLeaseOp(ctx context.Context, op fsm.LeaseOp) (any, error) {
	select {
	case <-s.opened:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	op.Stamp = s.node.Stamp()
	return s.node.Apply(ctx, fsm.EncodeLeaseOp(op))
}
