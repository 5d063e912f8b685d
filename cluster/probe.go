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

// probeClient keeps one connection per peer. Rounds never overlap (the
// verifier runs one at a time), so a connection carries one request at once;
// the mutex only guards against a straggler from a timed-out round.
type probeClient struct {
	dial   DialFunc
	mu     sync.Mutex
	conns  map[string]*probeConn
	closed bool
}

type probeConn struct {
	mu   sync.Mutex
	conn net.Conn
	next uint64
}

func newProbeClient(dial DialFunc) *probeClient {
	return &probeClient{dial: dial, conns: make(map[string]*probeConn)}
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
	c, err := pc.conn(addr)
	if err != nil {
		return 0, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil {
		nc, err := dialService(pc.dial, addr, muxProbe, time.Until(deadline))
		if err != nil {
			return 0, err
		}
		c.conn = nc
	}
	term, err := c.roundTrip(deadline)
	if err != nil {
		// The connection may hold a late answer; never reuse it.
		_ = c.conn.Close()
		c.conn = nil
	}
	return term, err
}

func (c *probeConn) roundTrip(deadline time.Time) (uint64, error) {
	c.next++
	var req [8]byte
	binary.BigEndian.PutUint64(req[:], c.next)
	_ = c.conn.SetDeadline(deadline)
	if _, err := c.conn.Write(req[:]); err != nil {
		return 0, err
	}
	var resp [16]byte
	if _, err := io.ReadFull(c.conn, resp[:]); err != nil {
		return 0, err
	}
	if id := binary.BigEndian.Uint64(resp[:8]); id != c.next {
		return 0, fmt.Errorf("probe answer for request %d, want %d", id, c.next)
	}
	return binary.BigEndian.Uint64(resp[8:]), nil
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
