package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// The voter's half of leader leases (issue 44; DESIGN-leases.md, section 2).
// A voter that answers a leader's lease probe for term T with term T
// promises to grant no vote, and to ask for none, until D after it read the
// probe, on its own monotonic clock. hashicorp/raft's leader stickiness does
// not give that: a restarted voter knows no leader and votes at once, a
// follower forgets its leader once its heartbeat timer fires, and a vote
// marked LeadershipTransfer skips the check. So ticketd enforces the promise
// itself, in the transport every vote passes through (leaderWatch): votes
// coming in are refused, and this node's own requests for votes never leave.

const (
	// maxLeaseDuration caps what a probe may ask a voter to promise: a
	// promise is an election this node sits out.
	maxLeaseDuration = 10 * time.Second
	// promiseMarkerFile records, in the data dir, the longest promise this
	// node has made; it then sits out every election for that long after
	// it starts, whatever it promised before it stopped.
	promiseMarkerFile = "lease-promise"
)

// Lease service requests (mux byte 'L'): 8-byte id, 1-byte op, 8-byte term,
// 8-byte duration in ns, 8-byte sequence. Answers: 8-byte id, 8-byte
// current term, 1-byte promised flag.
//
// The sequence orders promises and releases of one term, whatever
// connection carried them: the leader's lease generation, which every drop
// raises. A release of sequence g clears only promises made below g, and a
// promise below the last release's g is refused, so a release that arrives
// late (its connection timed out, yet TCP delivered it) cannot clear a
// promise made after it, and a late promise cannot outlive a release.
const (
	leaseOpQuery   byte = 0 // answer the term and promise nothing (a probe)
	leaseOpPromise byte = 1 // promise for the duration, if in the same term
	leaseOpRelease byte = 2 // forget the promises made in the term below seq
	leaseReqSize        = 33
	leaseRespSize       = 17
)

// promises is what this node has promised, and the votes in flight. Votes
// and promises are ordered by mu: a vote that passed the guard before a
// promise could still be granted after the promise's answer was written,
// so no promise is made while one is in flight.
type promises struct {
	term     func() uint64 // raft's current term (0 before raft starts)
	dataDir  string
	onMarker func(error) // told when the marker could not be written (a log line)

	mu sync.Mutex
	// until is when the latest promise ends, promisedTerm its term and
	// promisedSeq the highest sequence promised in it; releasedSeq is the
	// sequence of the term's last release.
	until        time.Time
	promisedTerm uint64
	promisedSeq  uint64
	releasedSeq  uint64
	// closed is set at a clean shutdown: no promise after it.
	closed bool
	// quarantineUntil is the end of the restart's quarantine: promises of
	// the process before this one end no later.
	quarantineUntil time.Time
	inFlight        int           // votes handed to raft and not yet answered
	marker          time.Duration // the duration the marker file holds
	logged          time.Time     // when an outbound vote was last reported blocked

	answered atomic.Uint64 // lease requests answered, for tests and the curious
}

func newPromises(dataDir string, term func() uint64, forget bool) (*promises, error) {
	p := &promises{term: term, dataDir: dataDir}
	d, err := readPromiseMarker(dataDir)
	if err != nil {
		return nil, err
	}
	p.marker = d
	if d > 0 && !forget {
		// The last process may have promised up to d just before it
		// stopped; nothing tells how long ago that was, so sit out d.
		p.quarantineUntil = time.Now().Add(d)
	}
	return p, nil
}

func readPromiseMarker(dataDir string) (time.Duration, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, promiseMarkerFile))
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read lease promise marker: %w", err)
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || ns < 0 {
		// A torn write can only be of a longer duration than the last
		// one that succeeded: sit out the longest there can be.
		return maxLeaseDuration, nil
	}
	return min(time.Duration(ns), maxLeaseDuration), nil
}

// writeMarker records d, fsynced, before any promise that needs it.
func (p *promises) writeMarker(d time.Duration) error {
	path := filepath.Join(p.dataDir, promiseMarkerFile)
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteString(strconv.FormatInt(int64(d), 10) + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		err = syncDir(p.dataDir)
	}
	return err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// blocked reports whether a promise (or the restart's quarantine) holds.
func (p *promises) blocked() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.blockedLocked(time.Now())
}

func (p *promises) blockedLocked(now time.Time) bool {
	return now.Before(p.until) || now.Before(p.quarantineUntil)
}

// promise records a promise of term for d from now, when it may: no vote
// in flight, the same term, no later release, and the marker written. It
// returns the term to answer with, read after the promise was recorded, so
// that a vote that completed before shows as a later term (and the promise
// as not given).
func (p *promises) promise(term uint64, d time.Duration, seq uint64) (uint64, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	cur := p.term()
	if d <= 0 || d > maxLeaseDuration || p.inFlight > 0 || cur != term || term == 0 || p.closed {
		return cur, false
	}
	if p.promisedTerm == term && seq < p.releasedSeq {
		return cur, false // sent before a release that came first
	}
	if d > p.marker {
		if err := p.writeMarker(d); err != nil {
			if p.onMarker != nil {
				p.onMarker(err)
			}
			return cur, false
		}
		p.marker = d
	}
	prevUntil, prevTerm, prevSeq, prevReleased := p.until, p.promisedTerm, p.promisedSeq, p.releasedSeq
	if until := time.Now().Add(d); until.After(p.until) {
		p.until = until
	}
	if p.promisedTerm != term {
		p.promisedTerm, p.promisedSeq, p.releasedSeq = term, 0, 0
	}
	p.promisedSeq = max(p.promisedSeq, seq)
	if cur = p.term(); cur != term {
		// A vote completed first: answered as no promise, so none is kept.
		p.until, p.promisedTerm, p.promisedSeq, p.releasedSeq = prevUntil, prevTerm, prevSeq, prevReleased
		return cur, false
	}
	return cur, true
}

// release forgets the promises of term made below seq (a leader handing
// its leadership on asks for it). The quarantine stays: it stands for
// promises of an earlier process, whose terms nobody can release.
func (p *promises) release(term, seq uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.promisedTerm != term {
		if term < p.promisedTerm {
			return
		}
		p.promisedTerm, p.promisedSeq = term, 0
	}
	p.releasedSeq = max(p.releasedSeq, seq)
	if p.promisedSeq < seq {
		p.until = time.Time{}
	}
}

// close refuses every later promise and, when none holds any more, removes
// the marker: a node stopped cleanly after its promises lapsed owes no
// quarantine at its next start (and a node that stopped promising, its
// leader's leases turned off, stops sitting out elections at each start).
func (p *promises) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	if p.marker == 0 || p.blockedLocked(time.Now()) {
		return
	}
	if err := os.Remove(filepath.Join(p.dataDir, promiseMarkerFile)); err == nil || errors.Is(err, os.ErrNotExist) {
		if syncDir(p.dataDir) == nil {
			p.marker = 0
		}
	}
}

// admitVote is the guard for a vote arriving: false while a promise holds;
// otherwise the vote is counted in flight until done is called.
func (p *promises) admitVote() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.blockedLocked(time.Now()) {
		return false
	}
	p.inFlight++
	return true
}

func (p *promises) voteDone() {
	p.mu.Lock()
	p.inFlight--
	p.mu.Unlock()
}

// reportBlocked says whether to log an outbound vote blocked now: once a
// second at most.
func (p *promises) reportBlocked() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if now.Sub(p.logged) < time.Second {
		return false
	}
	p.logged = now
	return true
}

// serveLease answers the lease service on one connection until it closes.
func (n *Node) serveLease(c net.Conn) {
	if !n.leaseConns.add(c) {
		return
	}
	defer n.leaseConns.done(c)
	var req [leaseReqSize]byte
	var resp [leaseRespSize]byte
	for {
		if _, err := io.ReadFull(c, req[:]); err != nil {
			return
		}
		op := req[8]
		term := binary.BigEndian.Uint64(req[9:17])
		d := time.Duration(binary.BigEndian.Uint64(req[17:25]))
		seq := binary.BigEndian.Uint64(req[25:33])
		var cur uint64
		promised := false
		switch op {
		case leaseOpPromise:
			cur, promised = n.promises.promise(term, d, seq)
		case leaseOpRelease:
			n.promises.release(term, seq)
			cur = n.promises.term()
		default:
			cur = n.promises.term()
		}
		copy(resp[:8], req[:8])
		binary.BigEndian.PutUint64(resp[8:16], cur)
		resp[16] = 0
		if promised {
			resp[16] = 1
		}
		n.promises.answered.Add(1)
		if _, err := c.Write(resp[:]); err != nil {
			return
		}
	}
}

// guardVote is the relay's check of a vote request on its way to raft:
// refused (answered here, never with an error: raft counts a pre-vote
// error that reads "unexpected command" as granted) while a promise
// holds, and counted in flight until raft answers otherwise.
func (w *leaderWatch) guardVote(rpc raft.RPC) (raft.RPC, bool) {
	p := w.promises
	if p == nil {
		return rpc, true
	}
	switch rpc.Command.(type) {
	case *raft.RequestVoteRequest, *raft.RequestPreVoteRequest:
	default:
		return rpc, true
	}
	if !p.admitVote() {
		term := p.term()
		hdr := raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte(w.localID), Addr: []byte(w.localAddr)}
		if _, pre := rpc.Command.(*raft.RequestPreVoteRequest); pre {
			rpc.Respond(&raft.RequestPreVoteResponse{RPCHeader: hdr, Term: term, Granted: false}, nil)
		} else {
			rpc.Respond(&raft.RequestVoteResponse{RPCHeader: hdr, Term: term, Granted: false}, nil)
		}
		return rpc, false
	}
	orig := rpc.RespChan
	mine := make(chan raft.RPCResponse, 1)
	rpc.RespChan = mine
	go func() {
		select {
		case r := <-mine:
			p.voteDone()
			orig <- r // the transport's channel has room for its one answer
		case <-w.stop:
			p.voteDone()
		}
	}()
	return rpc, true
}

// RequestVote asks target for a vote, unless this node has promised to ask
// for none: then it answers itself, not granted. The self-vote raft casts
// inside cannot be stopped here, and need not be: without the others' votes
// it elects no one.
func (w *leaderWatch) RequestVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestVoteRequest, resp *raft.RequestVoteResponse) error {
	if w.promises != nil && w.promises.blocked() {
		w.outboundBlocked("vote", args.Term)
		resp.Term, resp.Granted = args.Term, false
		return nil
	}
	return w.NetworkTransport.RequestVote(id, target, args, resp)
}

// RequestPreVote is RequestVote's counterpart for pre-votes.
func (w *leaderWatch) RequestPreVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	if w.promises != nil && w.promises.blocked() {
		w.outboundBlocked("pre-vote", args.Term)
		resp.Term, resp.Granted = args.Term, false
		return nil
	}
	return w.NetworkTransport.RequestPreVote(id, target, args, resp)
}

func (w *leaderWatch) outboundBlocked(kind string, term uint64) {
	if w.promises.reportBlocked() && w.log != nil {
		w.log.Info("not campaigning: this node promised a leader's lease, or restarted within one", "request", kind, "term", term)
	}
}

// TimeoutNow tells target to campaign at once: the last step of a
// leadership transfer. The leader's lease and every promise made to it go
// first, or the target would be refused its votes (DESIGN-leases.md, 3).
func (w *leaderWatch) TimeoutNow(id raft.ServerID, target raft.ServerAddress, args *raft.TimeoutNowRequest, resp *raft.TimeoutNowResponse) error {
	if w.beforeTimeoutNow != nil {
		defer w.beforeTimeoutNow()()
	}
	return w.NetworkTransport.TimeoutNow(id, target, args, resp)
}
