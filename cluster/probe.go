package cluster

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// The leadership probe is ticketd's own quorum check (see DESIGN.md, "Why not
// raft.VerifyLeader"). The leader sends every voter an 8-byte request id on a
// connection it keeps open; the voter answers with the id and its current
// Raft term. A voter that answers with the leader's term after the request
// was sent had not voted in any later election when it answered.

// probeServer answers probes with the node's current term.
type probeServer struct {
	term     func() uint64
	answered atomic.Uint64 // probes answered (counted as the reply is sent), for tests and the curious
	conns    connSet       // closed by Close
}

func newProbeServer(term func() uint64) *probeServer {
	return &probeServer{term: term}
}

func (s *probeServer) serve(c net.Conn) {
	if !s.conns.add(c) {
		return
	}
	defer s.conns.done(c)
	var req [8]byte
	var resp [16]byte
	for {
		if _, err := io.ReadFull(c, req[:]); err != nil {
			return
		}
		copy(resp[:8], req[:])
		binary.BigEndian.PutUint64(resp[8:], s.term())
		// Counted before the reply goes out, so that whoever holds the
		// reply also sees it counted: a count taken after the write raced
		// the leader reading it, and tests saw one round too few or many.
		s.answered.Add(1)
		if _, err := c.Write(resp[:]); err != nil {
			return
		}
	}
}

func (s *probeServer) Close() { s.conns.Close() }

// probeClient keeps one connection per peer to one service of the Raft
// port: the probe ('P') or the lease service ('L', promise.go). Rounds never
// overlap (the verifier runs one at a time), so a connection carries one
// request at once; the mutex only guards against a straggler from a
// timed-out round, and orders a transfer's release after a round's
// promises.
type probeClient struct {
	dial    DialFunc
	service byte
	mu      sync.Mutex
	conns   map[string]*probeConn
	closed  bool
}

type probeConn struct {
	mu   sync.Mutex
	conn net.Conn
	next uint64
}

func newProbeClient(dial DialFunc, service byte) *probeClient {
	return &probeClient{dial: dial, service: service, conns: make(map[string]*probeConn)}
}

var errProbeClientClosed = errors.New("probe client closed")

func (pc *probeClient) conn(addr string) (*probeConn, error) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.closed {
		return nil, errProbeClientClosed
	}
	c, ok := pc.conns[addr]
	if !ok {
		c = &probeConn{}
		pc.conns[addr] = c
	}
	return c, nil
}

// probe asks the voter at addr for its current term, giving up at deadline.
func (pc *probeClient) probe(addr string, deadline time.Time) (uint64, error) {
	var resp [16]byte
	err := pc.exchange(addr, deadline, func(id uint64) []byte {
		var req [8]byte
		binary.BigEndian.PutUint64(req[:], id)
		return req[:]
	}, resp[:])
	if err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint64(resp[8:]), nil
}

// lease sends the lease service the request build makes (built once the
// connection is this caller's, so that it reads the leader's state in the
// order requests reach the voter) and returns the voter's term and whether
// it promised.
func (pc *probeClient) lease(addr string, deadline time.Time, build func() leaseRequest) (uint64, bool, error) {
	var resp [leaseRespSize]byte
	err := pc.exchange(addr, deadline, func(id uint64) []byte {
		r := build()
		var req [leaseReqSize]byte
		binary.BigEndian.PutUint64(req[:8], id)
		req[8] = r.op
		binary.BigEndian.PutUint64(req[9:17], r.term)
		binary.BigEndian.PutUint64(req[17:25], uint64(r.d))
		binary.BigEndian.PutUint64(req[25:33], r.seq)
		return req[:]
	}, resp[:])
	if err != nil {
		return 0, false, err
	}
	return binary.BigEndian.Uint64(resp[8:16]), resp[16] == 1, nil
}

// leaseRequest is one request to the lease service (promise.go).
type leaseRequest struct {
	op   byte
	term uint64
	d    time.Duration
	seq  uint64
}

// exchange writes the request req makes for the connection's next id and
// reads an answer of len(resp) bytes that begins with that id.
func (pc *probeClient) exchange(addr string, deadline time.Time, req func(id uint64) []byte, resp []byte) error {
	c, err := pc.conn(addr)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil {
		nc, err := dialService(pc.dial, addr, pc.service, time.Until(deadline))
		if err != nil {
			return err
		}
		c.conn = nc
	}
	if err := c.roundTrip(deadline, req, resp); err != nil {
		// The connection may hold a late answer; never reuse it.
		_ = c.conn.Close()
		c.conn = nil
		return err
	}
	return nil
}

func (c *probeConn) roundTrip(deadline time.Time, req func(id uint64) []byte, resp []byte) error {
	c.next++
	_ = c.conn.SetDeadline(deadline)
	if _, err := c.conn.Write(req(c.next)); err != nil {
		return err
	}
	if _, err := io.ReadFull(c.conn, resp); err != nil {
		return err
	}
	if id := binary.BigEndian.Uint64(resp[:8]); id != c.next {
		return fmt.Errorf("probe answer for request %d, want %d", id, c.next)
	}
	return nil
}

// closeAll closes every connection; later probes fail.
func (pc *probeClient) closeAll() {
	pc.mu.Lock()
	pc.closed = true
	conns := pc.conns
	pc.conns = map[string]*probeConn{}
	pc.mu.Unlock()
	for _, c := range conns {
		c.mu.Lock()
		if c.conn != nil {
			_ = c.conn.Close()
			c.conn = nil
		}
		c.mu.Unlock()
	}
}

// probeOrder is the order in which a leadership round asks the voters: those
// that failed a probe (an error, silence past the hedge, an older term) go
// last, the longest-failed-ago first among them. Rounds do not overlap, but a
// member check may probe at the same time, hence the mutex.
type probeOrder struct {
	mu       sync.Mutex
	failures uint64            // failures seen so far
	failedAt map[string]uint64 // the failure count when addr last failed
}

func (o *probeOrder) failed(addr string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.failedAt == nil {
		o.failedAt = map[string]uint64{}
	}
	o.failures++
	o.failedAt[addr] = o.failures
}

// sort orders peers in place: never failed first (in their given order),
// then by how long ago they failed.
func (o *probeOrder) sort(peers []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.failedAt) == 0 {
		return
	}
	slices.SortStableFunc(peers, func(a, b string) int {
		return cmp.Compare(o.failedAt[a], o.failedAt[b])
	})
}
