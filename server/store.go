package server

import (
	"context"
	"errors"

	"github.com/ticketd/ticketd/cluster"
	"github.com/ticketd/ticketd/domain"
	"github.com/ticketd/ticketd/fsm"
	"github.com/ticketd/ticketd/issuer"
)

// store implements httpapi.Store: it turns the state machine's values into
// domain values, and the errors of the state machine, the Raft node and the
// issuer into domain kinds, so that the HTTP layer knows none of them.
type store struct{ s *Server }

// errorKinds says which kind each sentinel of the layers below is. Every
// exported error of fsm, cluster and issuer that a store method can return
// is here (TestStore_EverySentinelHasAKind); an error of no kind is a 500.
var errorKinds = []struct {
	kind error
	of   []error
}{
	{domain.ErrNotFound, []error{fsm.ErrSequenceNotFound, fsm.ErrNamespaceNotFound, cluster.ErrMemberNotFound, fsm.ErrNoStandby}},
	{domain.ErrExhausted, []error{fsm.ErrSequenceExhausted}},
	{domain.ErrConflict, []error{fsm.ErrSequenceConflict, fsm.ErrNamespaceConflict, fsm.ErrClusterNotEmpty, cluster.ErrMemberConflict, fsm.ErrStandbyConflict}},
	{domain.ErrInvalid, []error{fsm.ErrInvalidCommand, fsm.ErrBackupInvalid, cluster.ErrMemberUnreachable}},
	{domain.ErrNoWorkerFree, []error{fsm.ErrNoWorkerFree}},
	{domain.ErrLeaseLost, []error{fsm.ErrLeaseLost}},
	{domain.ErrWorkerUnavailable, []error{fsm.ErrWorkerUnavailable}},
	{domain.ErrClusterUpgrading, []error{cluster.ErrClusterUpgrading}},
	{domain.ErrUnavailable, []error{
		cluster.ErrNotLeader, cluster.ErrLeadershipLost, cluster.ErrNotConfirmed, cluster.ErrTimeout, cluster.ErrShutdown,
		issuer.ErrNotServing, issuer.ErrStaleLeadership, issuer.ErrContended, fsm.ErrFenced,
		context.DeadlineExceeded, context.Canceled,
	}},
}

// kindOf marks err with its domain kind (nil stays nil; an error of no
// known kind is returned as it is).
func kindOf(err error) error {
	if err == nil {
		return nil
	}
	var le *cluster.LevelError
	if errors.As(err, &le) {
		ue := &domain.ClusterUpgradingError{NeedLevel: int(le.Need), ClusterLevel: int(le.Cluster), Message: le.Error()}
		for _, m := range le.Behind {
			ue.Behind = append(ue.Behind, domain.Member{ID: m.ID, Version: m.Version, FeatureLevel: int(m.Level), LevelReport: m.Report})
		}
		return domain.Wrap(domain.ErrClusterUpgrading, ue)
	}
	for _, k := range errorKinds {
		for _, sentinel := range k.of {
			if errors.Is(err, sentinel) {
				return domain.Wrap(k.kind, err)
			}
		}
	}
	return err
}

func sequenceOf(s fsm.Sequence) domain.Sequence {
	next, ok := s.Next()
	return domain.Sequence{Name: s.Name, Start: s.Start, Max: s.Max, Next: next, Exhausted: !ok, Remaining: s.Remaining()}
}

// namespaceOf is a namespace with its capacity as of nowMs, this leader's
// wall clock (informational: nothing decides by it).
func namespaceOf(n fsm.Namespace, nowMs int64) domain.Namespace {
	return domain.Namespace{
		Name: n.Name, EpochMs: n.EpochMs, TimestampBits: n.TimestampBits, WorkerBits: n.WorkerBits,
		SequenceBits: n.SequenceBits, TickMs: n.TickMs, MaxWorkers: n.MaxWorkers, LeaseTTLMs: n.LeaseTTLMs,
		RecycleDelayMs: n.RecycleDelayMs, EndMs: n.EndMs(), YearsLeft: n.YearsLeft(nowMs),
		WorkerRole: workerRole(n.WorkerRole), HorizonYears: n.Horizon(),
	}
}

// workerRole is the API's name of a namespace's worker role: the state
// machine records none for worker ids, as before issue #16.
func workerRole(r string) string {
	if r == "" {
		return "worker"
	}
	return r
}

func leaseOf(l fsm.Lease) domain.Lease {
	return domain.Lease{
		Namespace: l.Namespace, WorkerID: l.WorkerID, Holder: l.Holder, Token: l.Token,
		GrantedMs: l.GrantedMs, ExpiresMs: l.ExpiresMs, ReleasedMs: l.ReleasedMs,
		State: string(l.State), EndReason: l.EndReason, TimestampFloorMs: l.TimestampFloorMs, GrantSeq: l.GrantSeq,
	}
}

// auditRecordOf converts a record of the audit; the two types have the same
// fields, and the conversion fails to compile if they ever differ.
func auditRecordOf(r fsm.AuditRecord) domain.AuditRecord { return domain.AuditRecord(r) }
