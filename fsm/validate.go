package fsm

import (
	"errors"
	"fmt"
)

// validate is the one set of rules a whole state must keep, whether it comes
// from a snapshot raft hands to Restore, from a backup an operator uploads,
// or from a restore entry being applied. The leader runs it before it
// proposes a restore, so whatever the FSM would refuse is a 400 before
// anything is written; and since raft panics when the FSM refuses a snapshot
// (raft.go, restoreUserSnapshot), nothing that came over the API may ever
// reach Restore without having passed it.
func (st *snapshotState) validate() error {
	if sb := st.Standby; sb != nil {
		if sb.ID == "" {
			return errors.New("the standby has an empty id")
		}
		if err := ValidateStandbySettings(sb.Bound, sb.TimeoutMs); err != nil {
			return fmt.Errorf("standby %q: %v", sb.ID, err)
		}
		switch sb.State {
		case StandbyStateCatchingUp, StandbyStateInSync, StandbyStateOutOfSync:
		default:
			return fmt.Errorf("standby %q: unknown state %q", sb.ID, sb.State)
		}
	}
	seqs := make(map[string]bool, len(st.Sequences))
	for _, s := range st.Sequences {
		if err := s.validate(); err != nil {
			return err
		}
		if seqs[s.Name] {
			return fmt.Errorf("sequence %q appears twice", s.Name)
		}
		seqs[s.Name] = true
	}
	members := make(map[string]bool, len(st.Members))
	for _, m := range st.Members {
		if m.ID == "" {
			return errors.New("a member has an empty id")
		}
		if members[m.ID] {
			return fmt.Errorf("member %q appears twice", m.ID)
		}
		members[m.ID] = true
	}
	namespaces := make(map[string]Namespace, len(st.Namespaces))
	for _, n := range st.Namespaces {
		if err := n.validateLayout(); err != nil {
			return fmt.Errorf("namespace %q: %v", n.Name, err)
		}
		if _, dup := namespaces[n.Name]; dup {
			return fmt.Errorf("namespace %q appears twice", n.Name)
		}
		namespaces[n.Name] = n
	}
	leased := map[string]map[int64]bool{}
	for _, l := range st.Leases {
		ns, ok := namespaces[l.Namespace]
		if !ok {
			return fmt.Errorf("lease of worker %d in unknown namespace %q", l.WorkerID, l.Namespace)
		}
		if l.WorkerID < 0 || l.WorkerID >= ns.MaxWorkers {
			return fmt.Errorf("lease of worker %d in %q: worker ids are 0 to %d", l.WorkerID, l.Namespace, ns.MaxWorkers-1)
		}
		if leased[l.Namespace] == nil {
			leased[l.Namespace] = map[int64]bool{}
		}
		if leased[l.Namespace][l.WorkerID] {
			return fmt.Errorf("worker %d of %q is leased twice", l.WorkerID, l.Namespace)
		}
		leased[l.Namespace][l.WorkerID] = true
		if l.Token == 0 || l.Holder == "" || len(l.Holder) > maxHolderLen || len(l.RequestID) > maxRequestIDLen {
			return fmt.Errorf("lease of worker %d in %q: token, holder or request id out of range", l.WorkerID, l.Namespace)
		}
		if l.State != LeaseHeld && l.State != LeaseEnded && l.State != LeaseFree {
			return fmt.Errorf("lease of worker %d in %q has unknown state %q", l.WorkerID, l.Namespace, l.State)
		}
		if l.Token > st.TokenFloor {
			return fmt.Errorf("lease of worker %d in %q has token %d above the token floor %d", l.WorkerID, l.Namespace, l.Token, st.TokenFloor)
		}
	}
	var prev uint64
	for _, r := range st.Audit {
		if r.Kind != AuditBlock && r.Kind != AuditLease && r.Kind != AuditRaise {
			return fmt.Errorf("audit record %d has unknown kind %q", r.Seq, r.Kind)
		}
		if r.Seq <= prev || r.Seq > st.AuditSeq {
			return fmt.Errorf("audit record numbers must increase up to %d, got %d after %d", st.AuditSeq, r.Seq, prev)
		}
		prev = r.Seq
	}
	if len(st.Audit) > AuditRetention {
		return fmt.Errorf("%d audit records, more than the %d kept", len(st.Audit), AuditRetention)
	}
	return nil
}
