package cluster

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// One TCP port carries both Raft's traffic and ticketd's leadership probes:
// the dialer writes one byte naming the service, and the mux hands the
// connection to that service. One port keeps membership to a single Raft
// address per node, and puts both services behind whatever secures the
// listener.
const (
	muxRaft  byte = 'R'
	muxProbe byte = 'P'
	// muxLease carries leader leases' promises and releases (promise.go).
	// An older binary drops the connection; a leader uses leases only once
	// the cluster's feature level says every member answers them.
	muxLease byte = 'L'
	// muxLevel asks for the node's release and feature level (levels.go).
	// A binary older than feature levels drops the connection, which the
	// asker reads as "no report".
	muxLevel byte = 'V'
	// muxCert carries the leader's certificates of the standby's trust
	// horizon (standbycert.go). An older standby drops the connection:
	// it stores none, and its promotion needs --advance.
	muxCert byte = 'C'

	// muxHeaderTimeout bounds how long an accepted connection may take to
	// name its service, so a silent client cannot hold a goroutine forever.
	muxHeaderTimeout = 5 * time.Second
)

type mux struct {
	ln        net.Listener
	advertise net.Addr
	dial      DialFunc
	log       *slog.Logger
	raftConns chan net.Conn
	muxServices

	closeOnce sync.Once
	closed    chan struct{}
	wg        sync.WaitGroup

	// pending holds the connections whose service byte is still being
	// read; Close closes them, so that a client that never sends it
	// cannot hold up Close for muxHeaderTimeout.
	mu      sync.Mutex
	pending map[net.Conn]struct{}
	// raftOwned holds the connections handed to Raft that are still open.
	// hashicorp/raft's NetworkTransport never closes the incoming
	// connections it serves when it closes: each handler goroutine waits
	// in Read until the peer hangs up, which in a process that outlives
	// the node (an embedding program, the in-process tests) is never.
	// Close closes them.
	raftOwned map[*raftConn]struct{}
}

// raftConn is an incoming connection handed to Raft; closing it, as Raft's
// handler does when it is done, forgets it.
type raftConn struct {
	net.Conn
	m    *mux
	once sync.Once
}

func (c *raftConn) Close() error {
	c.once.Do(func() {
		c.m.mu.Lock()
		delete(c.m.raftOwned, c)
		c.m.mu.Unlock()
	})
	return c.Conn.Close()
}

// muxServices are the handlers of the Raft port's services other than Raft.
type muxServices struct {
	probe func(net.Conn) // owns the connection (the probe server closes it)
	lease func(net.Conn) // owns the connection (leaseConns closes it); nil below fsm.LevelLeases
	level func(net.Conn) // answers and closes; bounded by its own deadline
	cert  func(net.Conn) // owns the connection (certConns closes it)
}

func newMux(ln net.Listener, advertise net.Addr, dial DialFunc, log *slog.Logger, services muxServices) *mux {
	if dial == nil {
		dial = defaultDial
	}
	m := &mux{
		ln:          ln,
		advertise:   advertise,
		dial:        dial,
		log:         log,
		raftConns:   make(chan net.Conn),
		muxServices: services,
		closed:      make(chan struct{}),
		pending:     make(map[net.Conn]struct{}),
		raftOwned:   make(map[*raftConn]struct{}),
	}
	m.wg.Add(1)
	go m.serve()
	return m
}

func (m *mux) serve() {
	defer m.wg.Done()
	var delay time.Duration
	for {
		c, err := m.ln.Accept()
		if err != nil {
			select {
			case <-m.closed:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// A transient accept error (out of file descriptors): back off
			// as net/http does rather than spin.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			m.log.Warn("raft listener accept failed", "err", err, "retry_in", delay)
			select {
			case <-time.After(delay):
			case <-m.closed:
				return
			}
			continue
		}
		delay = 0
		m.wg.Add(1)
		go m.route(c)
	}
}

func (m *mux) route(c net.Conn) {
	defer m.wg.Done()
	m.mu.Lock()
	select {
	case <-m.closed:
		m.mu.Unlock()
		_ = c.Close()
		return
	default:
	}
	m.pending[c] = struct{}{}
	m.mu.Unlock()
	var b [1]byte
	_ = c.SetReadDeadline(time.Now().Add(muxHeaderTimeout))
	_, err := io.ReadFull(c, b[:])
	m.mu.Lock()
	delete(m.pending, c)
	m.mu.Unlock()
	if err != nil {
		_ = c.Close()
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	switch b[0] {
	case muxRaft:
		rc := &raftConn{Conn: c, m: m}
		m.mu.Lock()
		m.raftOwned[rc] = struct{}{}
		m.mu.Unlock()
		select {
		case m.raftConns <- rc:
		case <-m.closed:
			_ = rc.Close()
		}
	case muxProbe:
		// The probe server owns the connection from here and closes it
		// when it shuts down.
		go m.probe(c)
	case muxLease:
		if m.lease == nil {
			m.unknown(c, b[0])
			return
		}
		go m.lease(c)
	case muxLevel:
		m.level(c)
	case muxCert:
		go m.cert(c)
	default:
		m.unknown(c, b[0])
	}
}

func (m *mux) unknown(c net.Conn, service byte) {
	m.log.Warn("raft port: connection with unknown service byte dropped", "byte", service, "remote", c.RemoteAddr())
	_ = c.Close()
}

// Close stops accepting, closes the connections that have not named their
// service yet and those handed to Raft, and waits for the routing
// goroutines. Connections handed to the probe server are its to close. Call
// it once Raft has shut down.
func (m *mux) Close() error {
	var err error
	m.closeOnce.Do(func() {
		m.mu.Lock()
		close(m.closed)
		for c := range m.pending {
			_ = c.Close()
		}
		owned := make([]*raftConn, 0, len(m.raftOwned))
		for c := range m.raftOwned {
			owned = append(owned, c)
		}
		m.mu.Unlock()
		for _, c := range owned {
			_ = c.Close() // takes m.mu to forget itself
		}
		err = m.ln.Close()
	})
	m.wg.Wait()
	return err
}

// raftLayer is the raft.StreamLayer over the mux.
type raftLayer struct{ m *mux }

var _ raft.StreamLayer = raftLayer{}

func (l raftLayer) Accept() (net.Conn, error) {
	select {
	case c := <-l.m.raftConns:
		return c, nil
	case <-l.m.closed:
		return nil, net.ErrClosed
	}
}

// Close is called by raft's transport on shutdown; the node closes the mux
// itself once the probe server is done too, so this only stops Accept.
func (l raftLayer) Close() error { return nil }

func (l raftLayer) Addr() net.Addr { return l.m.advertise }

func (l raftLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return dialService(l.m.dial, string(address), muxRaft, timeout)
}

// DialFunc opens a connection to another node's Raft port.
type DialFunc func(address string, timeout time.Duration) (net.Conn, error)

// ConnectTimeout bounds the TCP connect of a dial to a peer, within the
// longer timeout raft gives the whole dial (10 s). A peer's name can still
// resolve to an address no node holds any more (a pod rescheduled at a new
// IP, until the resolver's cache expires, 5 s for Go's hosts file and
// about as much for cluster DNS): a connect there never completes, and
// waiting out raft's 10 s held that peer's replication, and this node's
// shutdown, for 10 s a try (issue 43's rehearsal). A connect on a LAN, or
// to a standby across a WAN, takes a round trip; 2 s bounds it, and the
// next try resolves the name afresh.
const ConnectTimeout = 2 * time.Second

func defaultDial(address string, timeout time.Duration) (net.Conn, error) {
	d := net.Dialer{Timeout: min(timeout, ConnectTimeout)}
	return d.Dial("tcp", address)
}

func dialService(dial DialFunc, address string, service byte, timeout time.Duration) (net.Conn, error) {
	c, err := dial(address, timeout)
	if err != nil {
		return nil, err
	}
	_ = c.SetWriteDeadline(time.Now().Add(timeout))
	if _, err := c.Write([]byte{service}); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("dial %s: write service byte: %w", address, err)
	}
	_ = c.SetWriteDeadline(time.Time{})
	return c, nil
}

// connSet tracks the connections a service of the mux owns (the probe
// server, the standby's certificates), so that Close can end them.
type connSet struct {
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

func (s *connSet) add(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = c.Close()
		return false
	}
	if s.conns == nil {
		s.conns = map[net.Conn]struct{}{}
	}
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	return true
}

func (s *connSet) done(c net.Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	_ = c.Close()
	s.wg.Done()
}

// Close closes every connection and waits for their handlers.
func (s *connSet) Close() {
	s.mu.Lock()
	s.closed = true
	for c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}
