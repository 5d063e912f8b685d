package testcluster

import (
	"errors"
	"net"
	"os"
	"sync"
	"time"

	"github.com/ticketd/ticketd/cluster"
)

// FaultNet cuts Raft links between in-process nodes for real: every Raft and
// probe connection is dialed through it, a cut node's connections are closed,
// and new dials to or from it fail. HTTP is not touched, so a client can still
// reach a node that the cluster cannot: the situation of a leader
// partitioned away with its clients.
type FaultNet struct {
	mu       sync.Mutex
	addrToID map[string]string
	isolated map[string]bool
	conns    map[string]map[net.Conn]struct{}
	// stalls holds the gate of each stalled node (Stall), and gated the
	// connections dialed to a node, which a stall holds.
	stalls map[string]*gate
	gated  map[string]map[*gatedConn]struct{}
}

func newFaultNet() *FaultNet {
	return &FaultNet{addrToID: map[string]string{}, isolated: map[string]bool{}, conns: map[string]map[net.Conn]struct{}{},
		stalls: map[string]*gate{}, gated: map[string]map[*gatedConn]struct{}{}}
}

var errCut = errors.New("faultnet: link cut")

func (f *FaultNet) register(id, raftAddr string) {
	f.mu.Lock()
	f.addrToID[raftAddr] = id
	f.mu.Unlock()
}

// dialer returns node from's DialFunc.
func (f *FaultNet) dialer(from string) cluster.DialFunc {
	return func(addr string, timeout time.Duration) (net.Conn, error) {
		f.mu.Lock()
		to := f.addrToID[addr]
		cut := f.isolated[from] || f.isolated[to]
		f.mu.Unlock()
		if cut {
			return nil, errCut
		}
		c, err := net.DialTimeout("tcp", addr, timeout)
		if err != nil {
			return nil, err
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.isolated[from] || f.isolated[to] {
			_ = c.Close()
			return nil, errCut
		}
		for _, id := range []string{from, to} {
			if f.conns[id] == nil {
				f.conns[id] = map[net.Conn]struct{}{}
			}
			f.conns[id][c] = struct{}{}
		}
		if to == "" {
			return c, nil
		}
		g := &gatedConn{Conn: c, net: f, to: to, gate: f.stalls[to]}
		if f.gated[to] == nil {
			f.gated[to] = map[*gatedConn]struct{}{}
		}
		f.gated[to][g] = struct{}{}
		return g, nil
	}
}

// Stall stops node id as a paused process (SIGSTOP) would look to the
// others: connections to it stay open and new ones are accepted, what they
// send it is queued, and it answers nothing. Resume delivers the queue, in
// order, and its answers; a connection its dialer closed meanwhile is closed
// after its queue is delivered, as a kernel delivers a socket's data before
// its FIN. (The in-process node itself keeps running: only what reaches it
// stops.)
func (f *FaultNet) Stall(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stalls[id] != nil {
		return
	}
	g := &gate{open: make(chan struct{})}
	f.stalls[id] = g
	for c := range f.gated[id] {
		c.mu.Lock()
		c.gate = g
		c.mu.Unlock()
	}
}

// Resume ends a Stall of node id.
func (f *FaultNet) Resume(id string) {
	f.mu.Lock()
	g := f.stalls[id]
	delete(f.stalls, id)
	conns := make([]*gatedConn, 0, len(f.gated[id]))
	for c := range f.gated[id] {
		conns = append(conns, c)
	}
	f.mu.Unlock()
	if g == nil {
		return
	}
	for _, c := range conns {
		c.release(g)
	}
	close(g.open)
}

// gate is one stall: open closes when it ends.
type gate struct{ open chan struct{} }

// gatedConn is a connection dialed to node to, held while it is stalled.
type gatedConn struct {
	net.Conn
	net *FaultNet
	to  string

	mu      sync.Mutex
	gate    *gate  // the stall holding it, nil when none
	queued  []byte // written while stalled
	closing bool   // closed by its dialer while stalled
	// readBy and writeBy are the deadlines set on it: a stalled peer
	// does not answer, and the reader times out as it would.
	readBy, writeBy time.Time
}

func (c *gatedConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	c.readBy, c.writeBy = t, t
	c.mu.Unlock()
	return c.Conn.SetDeadline(t)
}

func (c *gatedConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.readBy = t
	c.mu.Unlock()
	return c.Conn.SetReadDeadline(t)
}

func (c *gatedConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	c.writeBy = t
	c.mu.Unlock()
	return c.Conn.SetWriteDeadline(t)
}

// await waits for g to open, or returns os.ErrDeadlineExceeded at by.
func await(g *gate, by time.Time) error {
	if by.IsZero() {
		<-g.open
		return nil
	}
	t := time.NewTimer(time.Until(by))
	defer t.Stop()
	select {
	case <-g.open:
		return nil
	case <-t.C:
		return os.ErrDeadlineExceeded
	}
}

// queuedMax bounds what a stalled connection queues, as a socket buffer
// does; a writer past it blocks until the stall ends.
const queuedMax = 4 << 20

func (c *gatedConn) Write(b []byte) (int, error) {
	for {
		c.mu.Lock()
		g := c.gate
		if g == nil {
			c.mu.Unlock()
			return c.Conn.Write(b)
		}
		if len(c.queued)+len(b) <= queuedMax {
			c.queued = append(c.queued, b...)
			c.mu.Unlock()
			return len(b), nil
		}
		by := c.writeBy
		c.mu.Unlock()
		if err := await(g, by); err != nil {
			return 0, err
		}
	}
}

func (c *gatedConn) Read(b []byte) (int, error) {
	c.mu.Lock()
	g, by := c.gate, c.readBy
	c.mu.Unlock()
	if g != nil {
		if err := await(g, by); err != nil {
			return 0, err
		}
	}
	return c.Conn.Read(b)
}

// Close while stalled leaves the connection to Resume, which delivers what
// was queued first.
func (c *gatedConn) Close() error {
	c.mu.Lock()
	if c.gate != nil {
		c.closing = true
		c.mu.Unlock()
		return nil
	}
	c.mu.Unlock()
	c.forget()
	return c.Conn.Close()
}

func (c *gatedConn) forget() {
	c.net.mu.Lock()
	delete(c.net.gated[c.to], c)
	c.net.mu.Unlock()
}

// release delivers what g held, then lets the connection go on (or closes
// it, if its dialer did).
func (c *gatedConn) release(g *gate) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gate != g {
		return
	}
	if len(c.queued) > 0 {
		_ = c.Conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
		_, _ = c.Conn.Write(c.queued)
		_ = c.Conn.SetWriteDeadline(time.Time{})
		c.queued = nil
	}
	c.gate = nil
	if c.closing {
		go func() {
			c.forget()
			_ = c.Conn.Close()
		}()
	}
}

// Isolate cuts every Raft link of node id.
func (f *FaultNet) Isolate(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.isolated[id] = true
	for c := range f.conns[id] {
		_ = c.Close()
	}
	delete(f.conns, id)
}

// Heal restores node id's links.
func (f *FaultNet) Heal(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.isolated, id)
}
