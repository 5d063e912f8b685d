package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ticketd/ticketd/domain"
	"github.com/ticketd/ticketd/fsm"
)

// The disaster-recovery standby (issue #34), on the leader. The FSM records
// the standby and caps every block at its bound (fsm/standby.go); here the
// leader
//
//   - sees the standby's replication: the transport is wrapped (leaderWatch),
//     and every AppendEntries or InstallSnapshot answer of this term tells
//     the highest index the standby has stored (its answer comes after its
//     fsync), and when it last made progress;
//   - serves a block only once the standby has stored every entry before
//     the block's (awaitStandby in ReserveBlocks), and answers a lease write
//     only once it has stored the lease's entry, while the standby is
//     recorded in sync. A block's first ID is the mark at the entry before
//     it plus one, and a block holds at most the bound, so what the leader
//     has served of a sequence never passes what the standby holds by more
//     than the bound;
//   - records the standby out of sync when it has made no progress for its
//     timeout, and goes on without it (the entry releases every wait), and
//     records it in sync again once it has caught up (watchStandby);
//   - records a fence when the standby answers that it was promoted: every
//     node of this cluster applies it and none serves again.

// promotedMarker starts the error a promoted node answers the Raft traffic
// of its old cluster with; the old leader's transport reads it.
const promotedMarker = "ticketd-promoted:"

// replicationSeen is what this leader has seen of each peer's replication in
// the current stretch of leadership.
type replicationSeen struct {
	mu      sync.Mutex
	term    uint64
	start   time.Time
	peers   map[raft.ServerID]*peerSeen
	changed chan struct{} // closed and replaced when a match index rises
	// waits holds the start of every wait for the standby in progress:
	// one older than the timeout means the standby keeps too far behind,
	// even while it makes progress.
	waits  map[uint64]time.Time
	waitID uint64
	// certifiedUntil is the latest V this leader has certified in this
	// stretch (monotonic): it records the standby out of sync no earlier
	// (standbycert.go). certsStopped is set while a removal waits it out.
	certifiedUntil time.Time
	certsStopped   bool
	lastCert       time.Time // when the last certificate was computed
	// certStoredUntil is the latest V the standby answered it stored
	// (wall clock, for status).
	certStoredUntil time.Time
}

// certify bounds a certificate computed at now with V = until: unless
// certificates are stopped, certifiedUntil becomes at least until and the
// caller may send it.
func (r *replicationSeen) certify(now, until time.Time, every time.Duration) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.certsStopped || !until.After(now) || (!r.lastCert.IsZero() && now.Sub(r.lastCert) < every) {
		return false
	}
	r.lastCert = now
	if until.After(r.certifiedUntil) {
		r.certifiedUntil = until
	}
	return true
}

// outOfSyncNotBefore is when this leader may first record the standby out
// of sync: after the latest V it certified, and after its stretch's start
// plus the timeout (an earlier leader's certificate was computed before
// this stretch began). standbycert.go has why.
func (r *replicationSeen) outOfSyncNotBefore(timeout time.Duration) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	if until := r.start.Add(timeout); until.After(r.certifiedUntil) {
		return until
	}
	return r.certifiedUntil
}

// stopCerts stops certifying and returns when the last certificate of any
// leader expires at the latest: this stretch's latest V, or its start plus
// timeout (a certificate of an earlier leader was computed before this
// stretch began). resume undoes it.
func (r *replicationSeen) stopCerts(timeout time.Duration) (until time.Time, resume func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.certsStopped = true
	until = r.start.Add(timeout)
	if r.certifiedUntil.After(until) {
		until = r.certifiedUntil
	}
	return until, func() {
		r.mu.Lock()
		r.certsStopped = false
		r.mu.Unlock()
	}
}

// certStoredUntilTime is the latest V the standby said it stored.
func (r *replicationSeen) certStoredUntilTime() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.certStoredUntil
}

// certStored records that the standby stored a certificate valid until v.
func (r *replicationSeen) certStored(v time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if v.After(r.certStoredUntil) {
		r.certStoredUntil = v
	}
}

// creditCaughtUp counts the peer's latest answer as progress when it holds
// every entry up to last: an answer while it had everything shows it as
// current as an answer that stored something. A standby that holds every
// entry is never recorded out of sync, so this changes no decision; it lets
// an idle cluster go on certifying a standby that answers its heartbeats.
// (The match only changes with an answer, so the one held now is the one
// it had at its latest answer, when the leader's last index was at most
// today's.)
func (r *replicationSeen) creditCaughtUp(id raft.ServerID, last uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p := r.peers[id]; p != nil && p.match >= last && p.regressed == "" && p.lastContact.After(p.lastProgress) {
		p.lastProgress = p.lastContact
	}
}

// waitStarted registers a wait for the standby; done unregisters it.
func (r *replicationSeen) waitStarted() (done func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.waits == nil {
		r.waits = map[uint64]time.Time{}
	}
	r.waitID++
	id := r.waitID
	r.waits[id] = time.Now()
	return func() {
		r.mu.Lock()
		delete(r.waits, id)
		r.mu.Unlock()
	}
}

// oldestWait is the start of the oldest wait in progress (zero if none).
func (r *replicationSeen) oldestWait() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	var oldest time.Time
	for _, t := range r.waits {
		if oldest.IsZero() || t.Before(oldest) {
			oldest = t
		}
	}
	return oldest
}

// clearRegressed forgets a regression once it is recorded.
func (r *replicationSeen) clearRegressed(id raft.ServerID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p := r.peers[id]; p != nil {
		p.regressed = ""
	}
}

type peerSeen struct {
	match        uint64
	lastContact  time.Time // any answer
	lastProgress time.Time // an answer that showed the log stored
	promoted     string    // the peer's "promoted" answer
	// regressed is set when the peer answered that its log ends below
	// what it had acknowledged in this term: it lost entries (a wiped
	// disk rejoined under the same id), so its own state can no longer
	// be trusted to hold what it acknowledged.
	regressed string
}

// reset starts a new stretch: matches seen in an earlier term say nothing
// about this one's log.
func (r *replicationSeen) reset(term uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.term, r.start = term, time.Now()
	r.peers = map[raft.ServerID]*peerSeen{}
	r.certifiedUntil, r.certsStopped, r.lastCert, r.certStoredUntil = time.Time{}, false, time.Time{}, time.Time{}
	r.wakeLocked()
}

func (r *replicationSeen) wakeLocked() {
	if r.changed != nil {
		close(r.changed)
	}
	r.changed = make(chan struct{})
}

// wake releases every waiter to look again (the standby's state changed).
func (r *replicationSeen) wake() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.wakeLocked()
}

// observe records the answer to an AppendEntries (or, with snapshot set, an
// InstallSnapshot) request of term sent to id: stored is the index the
// answer proves stored when it succeeded.
func (r *replicationSeen) observe(id raft.ServerID, term uint64, stored uint64, proves, success bool, lastLog uint64, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.peers == nil || term != r.term {
		return
	}
	p := r.peers[id]
	if p == nil {
		p = &peerSeen{}
		r.peers[id] = p
	}
	if err != nil {
		if msg := err.Error(); strings.Contains(msg, promotedMarker) {
			p.promoted = msg
		}
		return
	}
	now := time.Now()
	p.lastContact = now
	if !success && lastLog < p.match {
		// Its log ends below what it acknowledged: it lost entries.
		// Only what it holds now counts.
		p.regressed = fmt.Sprintf("its log ends at index %d, below the %d it had acknowledged: it lost entries", lastLog, p.match)
		p.match = lastLog
	}
	if success && proves {
		p.lastProgress = now
		if stored > p.match {
			p.match = stored
			r.wakeLocked()
		}
	}
}

// get returns what was seen of id, the stretch's start, and a channel
// closed at the next change.
func (r *replicationSeen) get(id raft.ServerID) (peerSeen, time.Time, <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.changed == nil {
		r.changed = make(chan struct{})
	}
	var p peerSeen
	if q := r.peers[id]; q != nil {
		p = *q
	}
	return p, r.start, r.changed
}

// AppendEntries sends the request and records what the answer shows of the
// peer's log. A request with no previous entry and no entries is a
// heartbeat: its success proves nothing stored.
func (w *leaderWatch) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	w.sendingEntries(args.Entries)
	err := w.NetworkTransport.AppendEntries(id, target, args, resp)
	if w.seen != nil {
		stored := args.PrevLogEntry + uint64(len(args.Entries))
		success := err == nil && resp.Success
		lastLog := stored
		if err == nil && !resp.Success && resp.Term == args.Term {
			lastLog = resp.LastLog // a refusal of this term: its log ends there
		}
		w.seen.observe(id, args.Term, stored, stored > 0, success, lastLog, err)
	}
	return err
}

// InstallSnapshot sends a snapshot and records what its answer shows.
func (w *leaderWatch) InstallSnapshot(id raft.ServerID, target raft.ServerAddress, args *raft.InstallSnapshotRequest, resp *raft.InstallSnapshotResponse, data io.Reader) error {
	err := w.NetworkTransport.InstallSnapshot(id, target, args, resp, data)
	if w.seen != nil {
		w.seen.observe(id, args.Term, args.LastLogIndex, true, err == nil && resp.Success, args.LastLogIndex, err)
	}
	return err
}

// AppendEntriesPipeline is refused while a standby is recorded, so that
// raft replicates through AppendEntries, whose answers the leader reads
// (pipelining is off by default anyway: see DESIGN.md).
func (w *leaderWatch) AppendEntriesPipeline(id raft.ServerID, target raft.ServerAddress) (raft.AppendPipeline, error) {
	if w.noPipeline != nil && w.noPipeline() {
		return nil, raft.ErrPipelineReplicationNotSupported
	}
	p, err := w.NetworkTransport.AppendEntriesPipeline(id, target)
	if err != nil || w.onConfigEntry == nil {
		return p, err
	}
	return watchedPipeline{p, w}, nil
}

// sendingEntries tells onConfigEntry, before they leave, of entries that
// change the configuration (lease.go: no lease outlives the configuration
// its majority belonged to by more than one change).
func (w *leaderWatch) sendingEntries(entries []*raft.Log) {
	if w.onConfigEntry == nil {
		return
	}
	for _, e := range entries {
		if e.Type == raft.LogConfiguration {
			w.onConfigEntry()
			return
		}
	}
}

// watchedPipeline is a replication pipeline whose entries leaderWatch sees.
type watchedPipeline struct {
	raft.AppendPipeline
	w *leaderWatch
}

func (p watchedPipeline) AppendEntries(args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) (raft.AppendFuture, error) {
	p.w.sendingEntries(args.Entries)
	return p.AppendPipeline.AppendEntries(args, resp)
}

// awaitStandby returns once the standby has stored every entry up to index,
// or at once when no standby is recorded in sync. While it waits, the
// standby's being recorded out of sync (watchStandby), losing leadership or
// shutting down ends the wait.
func (n *Node) awaitStandby(ctx context.Context, index uint64) error {
	if index == 0 {
		return nil
	}
	var start time.Time
	for {
		sb, ok := n.fsm.StandbyInfo()
		if !ok || !sb.InSync() {
			return nil
		}
		if n.cfg.standbyNoWait() {
			return nil // the planted bug standby-no-wait (faults.go)
		}
		if _, leads := n.Leadership(); !leads {
			return ErrNotLeader
		}
		p, _, changed := n.seen.get(raft.ServerID(sb.ID))
		if p.match >= index {
			if !start.IsZero() {
				n.cfg.Metrics.ObserveStandbyWait(time.Since(start))
			}
			return nil
		}
		if start.IsZero() {
			start = time.Now()
			defer n.seen.waitStarted()()
		}
		// The timer re-reads the state now and then: the leader loop's
		// step-down does not wake this wait.
		t := time.NewTimer(100 * time.Millisecond)
		select {
		case <-changed:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w: waiting for standby %q to store index %d (it has %d): %v", ErrTimeout, sb.ID, index, p.match, ctx.Err())
		case <-n.shutdownCh:
			t.Stop()
			return ErrShutdown
		}
		t.Stop()
	}
}

// standbyWaitContext bounds a wait for the standby by its timeout plus two
// election timeouts, past which the leader has recorded it out of sync
// (releasing the wait) unless it lost leadership; the caller's own
// deadline, which is a proposal's, does not cut it shorter.
func (n *Node) standbyWaitContext(ctx context.Context) (context.Context, context.CancelFunc) {
	timeout := time.Duration(fsm.DefaultStandbyTimeoutMs) * time.Millisecond
	if sb, ok := n.fsm.StandbyInfo(); ok {
		timeout = time.Duration(sb.TimeoutMs) * time.Millisecond
	}
	return context.WithTimeout(context.WithoutCancel(ctx), timeout+2*n.cfg.ElectionTimeout)
}

// watchStandby runs while this node leads (one stretch): it records the
// standby out of sync after its timeout without progress, in sync again
// once it has caught up, and a fence when it answers that it was promoted.
func (n *Node) watchStandby(l Leadership) {
	t := time.NewTicker(n.standbyTick())
	defer t.Stop()
	certs := newCertifier(n)
	stop := make(chan struct{})
	defer close(stop)
	go certs.run(stop)
	var prevLast uint64
	for {
		if cur, ok := n.Leadership(); !ok || cur != l {
			return
		}
		if err := n.checkStandby(&prevLast, l.Term, certs); err != nil {
			n.log.Warn("could not record the standby's state", "term", l.Term, "err", err)
		}
		select {
		case <-t.C:
		case <-n.shutdownCh:
			return
		}
	}
}

// certEvery is how often the leader certifies the standby: a twentieth of
// its timeout (half a second at the default), at least every tick. The
// standby's horizon trails the primary's loss by about this much.
func (n *Node) certEvery(timeout time.Duration) time.Duration {
	return max(timeout/20, n.standbyTick())
}

// standbyAddr is the standby's Raft address in the configuration.
func (n *Node) standbyAddr(id string) raft.ServerAddress {
	cf := n.raft.GetConfiguration()
	if cf.Error() != nil {
		return ""
	}
	for _, s := range cf.Configuration().Servers {
		if s.ID == raft.ServerID(id) {
			return s.Address
		}
	}
	return ""
}

func (n *Node) standbyTick() time.Duration {
	return max(min(n.cfg.HeartbeatTimeout/5, 100*time.Millisecond), 10*time.Millisecond)
}

// checkStandby makes one decision of watchStandby. prevLast is the leader's
// last index at the previous check: a standby that has stored it has
// caught up with where the log was then. While the standby is in sync and
// stays so, it hands certs a certificate (standbycert.go).
func (n *Node) checkStandby(prevLast *uint64, term uint64, certs *certifier) error {
	last := n.raft.LastIndex()
	defer func() { *prevLast = last }()
	sb, ok := n.fsm.StandbyInfo()
	if !ok {
		return nil
	}
	n.seen.creditCaughtUp(raft.ServerID(sb.ID), last)
	p, start, _ := n.seen.get(raft.ServerID(sb.ID))
	ctx, cancel := context.WithTimeout(context.Background(), 2*n.cfg.ElectionTimeout)
	defer cancel()
	if p.promoted != "" {
		if _, fenced := n.fsm.Fenced(); !fenced {
			n.log.Error("the standby answers that it was promoted: this cluster serves nothing more", "standby", sb.ID, "answer", p.promoted)
			_, err := n.Apply(ctx, fsm.EncodeStandbyOp(fsm.StandbyOp{Op: fsm.StandbyFence, ID: sb.ID, Reason: p.promoted, Stamp: n.Stamp()}))
			return err
		}
		return nil
	}
	timeout := time.Duration(sb.TimeoutMs) * time.Millisecond
	progress := p.lastProgress
	if progress.Before(start) {
		progress = start // a new leader gives the standby a full timeout
	}
	switch sb.State {
	case fsm.StandbyStateInSync:
		var reason string
		now := time.Now()
		oldest := n.seen.oldestWait()
		// The earliest moment the rules below could record it out of
		// sync, were it to make no progress from now on: a wait that
		// starts later, or progress, only moves it later.
		earliest := progress.Add(timeout)
		if !oldest.IsZero() && oldest.Add(timeout).Before(earliest) {
			earliest = oldest.Add(timeout)
		}
		switch {
		case now.Before(n.seen.outOfSyncNotBefore(timeout)):
			// A certificate says not before then (only a regression
			// gets here early; its blocks wait, since the match fell
			// with it).
			return nil
		case p.regressed != "":
			reason = p.regressed
		case !oldest.IsZero() && now.Sub(oldest) >= timeout:
			// It makes progress, but not enough: blocks have waited
			// for it longer than its timeout.
			reason = fmt.Sprintf("a block has waited %s for it (stored up to index %d of %d)", now.Sub(oldest).Round(time.Millisecond), p.match, last)
		case now.Sub(progress) < timeout || p.match >= last:
			if certs != nil && n.seen.certify(now, earliest, n.certEvery(timeout)) {
				certs.offer(certJob{computedAt: now, validUntil: earliest, inSync: sb.SinceIndex,
					standby: raft.ServerID(sb.ID), addr: n.standbyAddr(sb.ID), term: term})
			}
			return nil
		case p.lastContact.IsZero():
			reason = fmt.Sprintf("no answer for %s (stored up to index %d of %d)", time.Since(progress).Round(time.Millisecond), p.match, last)
		default:
			reason = fmt.Sprintf("no progress for %s (stored up to index %d of %d)", time.Since(progress).Round(time.Millisecond), p.match, last)
		}
		defer n.seen.clearRegressed(raft.ServerID(sb.ID))
		n.log.Warn("recording the standby out of sync: going on without it", "standby", sb.ID, "reason", reason)
		_, err := n.Apply(ctx, fsm.EncodeStandbyOp(fsm.StandbyOp{Op: fsm.StandbyOutOfSync, ID: sb.ID, AckIndex: p.match, Reason: reason, Stamp: n.Stamp()}))
		return err
	default: // catching up, or out of sync
		if n.cfg.HoldStandbyOutOfSync && sb.State == fsm.StandbyStateOutOfSync {
			return nil
		}
		if p.lastProgress.IsZero() || time.Since(p.lastProgress) > timeout/2 || *prevLast == 0 || p.match < *prevLast {
			return nil
		}
		n.seen.clearRegressed(raft.ServerID(sb.ID)) // a regression before this catch-up is behind it
		n.log.Info("recording the standby in sync", "standby", sb.ID, "stored", p.match, "was", sb.State)
		_, err := n.Apply(ctx, fsm.EncodeStandbyOp(fsm.StandbyOp{Op: fsm.StandbyInSync, ID: sb.ID, AckIndex: p.match, Stamp: n.Stamp()}))
		return err
	}
}

// JoinStandby adds a disaster-recovery standby: a non-voting member that
// receives the log and that the leader keeps within its bound. Its Raft
// address is probed first; then it is recorded (catching up, so nothing
// waits for it yet) and added to Raft's configuration. A record whose add
// failed is taken back: left, it would refuse every other standby and make
// every new leader wait for one that never answers (issue 42). Both steps
// are idempotent, so a join that failed half-way is retried whole, and
// Remove clears a record that has no member, should the taking back fail.
func (n *Node) JoinStandby(ctx context.Context, id, raftAddr, httpAddr string, bound, timeoutMs int64) error {
	if _, ok := n.Leadership(); !ok {
		return ErrNotLeader
	}
	if err := fsm.ValidateStandbySettings(bound, timeoutMs); err != nil {
		return err
	}
	cf := n.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return mapRaftError(err)
	}
	present := false
	for _, s := range cf.Configuration().Servers {
		switch {
		case s.ID == raft.ServerID(id) && s.Suffrage == raft.Voter:
			return fmt.Errorf("%w: %q is a voter; a standby is a member of its own (remove the voter first, or give the standby another id)", ErrMemberConflict, id)
		case s.ID == raft.ServerID(id) && s.Address == raft.ServerAddress(raftAddr):
			present = true
		case s.ID == raft.ServerID(id):
			return fmt.Errorf("%w: member %q already has raft address %s; remove it first", ErrMemberConflict, id, s.Address)
		case s.Address == raft.ServerAddress(raftAddr):
			return fmt.Errorf("%w: raft address %s already belongs to member %q", ErrMemberConflict, raftAddr, s.ID)
		}
	}
	if sb, ok := n.fsm.StandbyInfo(); ok && sb.ID != id {
		return fmt.Errorf("%w: %q is the standby already; remove it first (one standby per cluster)", ErrMemberConflict, sb.ID)
	}
	if !present {
		if _, err := n.probeClient.probe(raftAddr, time.Now().Add(n.cfg.ProbeTimeout)); err != nil {
			return fmt.Errorf("%w: raft address %s: %v", ErrMemberUnreachable, raftAddr, err)
		}
	}
	_, hadRecord := n.fsm.StandbyInfo()
	if _, err := n.Apply(ctx, fsm.EncodeStandbyOp(fsm.StandbyOp{Op: fsm.StandbyAdd, ID: id, Bound: bound, TimeoutMs: timeoutMs, Stamp: n.Stamp()})); err != nil {
		if errors.Is(err, fsm.ErrStandbyConflict) {
			return fmt.Errorf("%w: %v", ErrMemberConflict, err)
		}
		return err
	}
	if !present {
		if err := n.addServer(ctx, id, raftAddr, false); err != nil {
			if !hadRecord {
				err = n.takeBackStandbyRecord(ctx, id, err)
			}
			return err
		}
		n.log.Info("added standby", "id", id, "raft_addr", raftAddr, "bound", bound, "timeout_ms", timeoutMs)
	}
	return n.recordMetadata(ctx, id, raftAddr, httpAddr)
}

// takeBackStandbyRecord removes the record of a standby whose add to the
// configuration failed with addErr, unless the add took effect after all
// (an unknown outcome: the server is in the configuration now). It returns
// addErr, with what to do should the record stay.
func (n *Node) takeBackStandbyRecord(ctx context.Context, id string, addErr error) error {
	cf := n.raft.GetConfiguration()
	if cf.Error() != nil {
		return fmt.Errorf("%w (the standby's record may remain: ticketd remove %s clears it)", addErr, id)
	}
	for _, s := range cf.Configuration().Servers {
		if s.ID == raft.ServerID(id) {
			return addErr // added after all: the record is the member's
		}
	}
	if _, err := n.Apply(ctx, fsm.EncodeStandbyOp(fsm.StandbyOp{Op: fsm.StandbyRemove, ID: id, Stamp: n.Stamp()})); err != nil && !errors.Is(err, fsm.ErrNoStandby) {
		return fmt.Errorf("%w (its record could not be taken back: %v; ticketd remove %s clears it)", addErr, err, id)
	}
	n.log.Warn("standby join failed; its record was taken back", "id", id, "err", addErr)
	return addErr
}

// standbyStatus is the recorded standby with, on the leader, what it sees.
func (n *Node) standbyStatus() *domain.StandbyStatus {
	sb, ok := n.fsm.StandbyInfo()
	if !ok {
		return nil
	}
	out := &domain.StandbyStatus{
		ID: sb.ID, State: sb.State, Bound: sb.Bound, Timeout: time.Duration(sb.TimeoutMs) * time.Millisecond,
		SinceIndex: sb.SinceIndex, Reason: sb.Reason, OutOfSyncCount: sb.OutOfSyncCount,
	}
	if sb.SinceMs != 0 {
		out.Since = time.UnixMilli(sb.SinceMs).UTC()
	}
	if _, leads := n.Leadership(); leads {
		p, _, _ := n.seen.get(raft.ServerID(sb.ID))
		last := n.raft.LastIndex()
		seen := &domain.StandbySeen{AckIndex: p.match, LastContact: -1, LastProgress: -1, Promoted: p.promoted}
		if last > p.match {
			seen.LagEntries = last - p.match
		}
		if !p.lastContact.IsZero() {
			seen.LastContact = time.Since(p.lastContact)
		}
		if !p.lastProgress.IsZero() {
			seen.LastProgress = time.Since(p.lastProgress)
		}
		seen.CertifiedUntil = n.seen.certStoredUntilTime()
		out.Seen = seen
	}
	if sb.ID == n.cfg.ID {
		if c, ok := n.certs.latest(); ok {
			out.Certificate = &domain.StandbyCertificate{InSyncIndex: c.InSyncIndex, ValidUntil: c.ValidUntil, Leader: c.Leader, Term: c.Term}
		}
	}
	return out
}

// StandbyStatus is the recorded standby (nil when none) as Status shows it.
func (n *Node) StandbyStatus() *domain.StandbyStatus { return n.standbyStatus() }

// refuseOldCluster answers, on a node promoted from a standby, the Raft
// traffic of any server not in its configuration with the promotedMarker
// error: the old primary's leader reads it and fences its cluster. Without
// it an old leader of a higher term would make this node its follower
// (hashicorp/raft checks terms, not cluster identities) and overwrite the
// promoted state. Nothing is refused on a node that was never promoted.
//
// Refused: every server whose id is not in this node's own configuration
// (a member the old primary took in after its log reached the standby is in
// none of the records this node holds, so only the configuration can tell;
// issue 42), and an id of the old configuration at any address but the one
// the new cluster gave it. A member of the new cluster is accepted at any
// spelling of its address.
func (n *Node) refuseOldCluster(rpc raft.RPC) error {
	// Nothing reaches Raft before Start has read the restored state: an
	// old leader's entry in that window would be appended to the promoted
	// log (the snapshot RecoverCluster wrote matches its previous entry).
	select {
	case <-n.ready:
	case <-n.shutdownCh:
		return ErrShutdown
	}
	if !n.promoted.Load() {
		return nil
	}
	h, ok := rpc.Command.(raft.WithRPCHeader)
	if !ok {
		return nil
	}
	hdr := h.GetRPCHeader()
	r := n.started.Load()
	if r == nil {
		return nil
	}
	old := n.fsm.OldMembers()[string(hdr.ID)]
	if !old && n.cfg.refuseRecordedOnly() {
		return nil // the planted bug (faults.go)
	}
	for _, s := range r.GetConfiguration().Configuration().Servers {
		if string(s.ID) == string(hdr.ID) && (!old || string(s.Address) == string(hdr.Addr)) {
			return nil // a member of the new cluster (an old id only at the address it was given again)
		}
	}
	ps := n.fsm.Promotions()
	if len(ps) == 0 {
		return nil
	}
	p := ps[len(ps)-1]
	return fmt.Errorf("%s %s was this cluster's standby and was promoted at index %d (advance %d): it is a cluster of its own, and %s at %s is not its member", promotedMarker, p.Standby, p.AtIndex, p.Advance, hdr.ID, hdr.Addr)
}

// SetHeartbeatHandler hands Raft's heartbeat fast path the same refusal as
// the consumer: the transport answers heartbeats without the consumer, and
// an old leader's heartbeat of a higher term would otherwise make a
// promoted node step down and follow it.
func (w *leaderWatch) SetHeartbeatHandler(cb func(rpc raft.RPC)) {
	if cb == nil || w.refuse == nil {
		w.NetworkTransport.SetHeartbeatHandler(cb)
		return
	}
	w.NetworkTransport.SetHeartbeatHandler(func(rpc raft.RPC) {
		if err := w.refuse(rpc); err != nil {
			rpc.Respond(nil, err)
			return
		}
		cb(rpc)
	})
}

// freshStartFile marks a data directory that started with no Raft state. A
// standby that lost its disk and rejoined under the same id installs the
// leader's latest snapshot, whose standby record may say in sync although
// the standby no longer holds what it acknowledged before; the leader then
// records it out of sync (a regressed match) and in sync again once it has
// caught up, but until the standby holds that later record its own log may
// show an older in-sync record. The file names the first commit index the
// node heard of (K) and goes once the node applies an in-sync record of
// itself above K; while it exists, ticketd promote needs --advance.
const freshStartFile = "fresh-start"

// freshStart tracks freshStartFile.
type freshStart struct {
	mu     sync.Mutex
	path   string
	active bool
	k      uint64
}

func (f *freshStart) open(dir string, existing bool) error {
	f.path = filepath.Join(dir, freshStartFile)
	b, err := os.ReadFile(f.path)
	switch {
	case err == nil:
		f.active = true
		f.k, _ = strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		return nil
	case !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%w: read %s: %v", ErrStorage, f.path, err)
	case existing:
		return nil
	}
	f.active = true
	return writeFileSync(f.path, "0\n")
}

// sawCommit records the first commit index the node hears of.
func (f *freshStart) sawCommit(index uint64) {
	if index == 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.active || f.k != 0 {
		return
	}
	f.k = index
	_ = writeFileSync(f.path, strconv.FormatUint(index, 10)+"\n")
}

// inSync is told that an in-sync record of this node applied at index.
func (f *freshStart) inSync(index uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.active || f.k == 0 || index <= f.k {
		return
	}
	if err := os.Remove(f.path); err == nil || errors.Is(err, os.ErrNotExist) {
		f.active = false
	}
}

func writeFileSync(path, content string) error {
	tmp := path + ".tmp"
	fh, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o640)
	if err != nil {
		return err
	}
	_, err = fh.WriteString(content)
	if err == nil {
		err = fh.Sync()
	}
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// heardFromStandby runs in establish, before a new leader serves: when the
// cluster records a standby that is not in sync (so nothing would wait for
// it), the leader first gives it up to two election timeouts to answer. An
// old primary coming back after its standby was promoted would otherwise
// serve from its own marks until its first exchange with the promoted node;
// this way, when that node is reachable, its "promoted" answer comes first
// and the leader records the fence instead of serving. A standby in sync
// needs no such wait (every block waits for it), nor does one that does not
// answer (the wait is bounded). It reports whether to serve.
func (n *Node) heardFromStandby(term uint64) bool {
	sb, ok := n.fsm.StandbyInfo()
	if !ok || sb.InSync() {
		return true
	}
	deadline := time.Now().Add(2 * n.cfg.ElectionTimeout)
	for {
		p, _, changed := n.seen.get(raft.ServerID(sb.ID))
		if p.promoted != "" {
			n.log.Error("the standby answers that it was promoted: this cluster serves nothing more", "standby", sb.ID, "answer", p.promoted)
			ctx, cancel := context.WithTimeout(context.Background(), 2*n.cfg.ElectionTimeout)
			defer cancel()
			// Not serving yet, so not through Apply (which asks for a
			// serving leader); the fence's level is the standby's own.
			entry := fsm.EncodeStandbyOp(fsm.StandbyOp{Op: fsm.StandbyFence, ID: sb.ID, Reason: p.promoted, Stamp: n.Stamp()})
			if err := n.await(ctx, func() raft.Future { return n.raft.Apply(entry, n.cfg.ElectionTimeout) }); err != nil {
				n.log.Warn("could not record the fence", "err", err)
			}
			return false
		}
		if !p.lastContact.IsZero() || time.Now().After(deadline) {
			return true
		}
		if n.raft.State() != raft.Leader || n.raft.CurrentTerm() != term {
			return false
		}
		t := time.NewTimer(10 * time.Millisecond)
		select {
		case <-changed:
		case <-t.C:
		case <-n.shutdownCh:
			t.Stop()
			return false
		}
		t.Stop()
	}
}
