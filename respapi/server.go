package respapi

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ticketd/ticketd/auth"
	"github.com/ticketd/ticketd/domain"
	"github.com/ticketd/ticketd/metrics"
	"github.com/ticketd/ticketd/resp"
)

// Store is what the front needs of a node, a subset of httpapi.Store's
// methods with the same meaning; errors carry a kind of package domain.
type Store interface {
	ID() string
	// Serving reports whether this node is the leader and serves requests.
	Serving() bool
	// LeaderHTTPAddr returns the leader's ID and API address (host:port).
	LeaderHTTPAddr() (id, addr string, ok bool)
	Reserve(ctx context.Context, name string, count int64) (first, last int64, err error)
	// Sequence is a linearizable read on the leader.
	Sequence(ctx context.Context, name string) (domain.Sequence, error)
	CreateSequence(ctx context.Context, s domain.SequenceSettings) (seq domain.Sequence, created bool, err error)
	Status() (domain.ClusterStatus, error)
	// SequenceCount is how many sequences this node's state holds.
	SequenceCount() int
	// SnowflakeIDs are count IDs of the namespace made by this node's own
	// generator, whichever node this is (never the leader's business).
	SnowflakeIDs(ctx context.Context, ns string, count int) (domain.SnowflakeIDs, error)
}

// Config configures the front.
type Config struct {
	Store  Store
	Logger *slog.Logger
	// Tokens, if set, turns authentication on; nil means every command is
	// allowed (dev mode), as on the HTTP API.
	Tokens  *auth.Tokens
	Metrics *metrics.Metrics
	// Version is the server version HELLO and INFO report.
	Version string
	// RequestTimeout bounds one command's work (10 s if 0; up to a
	// second more, see deadlines).
	RequestTimeout time.Duration
	// WriteTimeout bounds writing answers to a client that does not read
	// them (10 s if 0): a write blocked for between half of it and all of
	// it fails and ends the connection.
	WriteTimeout time.Duration
	// MaxConns bounds open connections (10,000 if 0); a connection past
	// it is told so and closed, as Redis does.
	MaxConns int
	// MaxPipeline bounds the commands of one connection read before
	// answering (1,024 if 0); the rest wait in the socket.
	MaxPipeline int
	// Limits bound one command (resp.DefaultLimits if zero).
	Limits resp.Limits
	// ForwardScheme ("http" or "https") and ForwardTransport reach the
	// leader's HTTP API from a follower.
	ForwardScheme    string
	ForwardTransport http.RoundTripper
}

// maxBatchBytes bounds the argument bytes of the commands one connection
// has read and not answered yet (with resp's limits, what one connection
// can make the server hold).
const maxBatchBytes = 256 << 10

// maxBatchAnswerBytes bounds the answers a batch's TICKETD.SNOWFLAKEs will
// make (answerWeight), less the last command's: a pipeline of 1,024
// TICKETD.SNOWFLAKE ns 10000 would otherwise hold 220 MB of answers before
// the first is written. One of 10,000 IDs (220 KB) is a batch of its own.
const maxBatchAnswerBytes = 64 << 10

// Server serves the Redis protocol on listeners.
type Server struct {
	cfg       Config
	log       *slog.Logger
	leader    *leaderClient
	nextID    atomic.Int64
	ctx       context.Context // cancelled by Close: commands in flight stop
	cancel    context.CancelFunc
	deadlines *deadlines
	mu        sync.Mutex
	lns       map[net.Listener]struct{}
	conns     map[*conn]struct{}
	closing   bool
	wg        sync.WaitGroup
}

// New builds a server.
func New(cfg Config) *Server {
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 10 * time.Second
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 10 * time.Second
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = 10_000
	}
	if cfg.MaxPipeline <= 0 {
		cfg.MaxPipeline = 1024
	}
	if cfg.Limits == (resp.Limits{}) {
		cfg.Limits = resp.DefaultLimits
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{
		cfg: cfg, log: log, ctx: ctx, cancel: cancel,
		deadlines: &deadlines{parent: ctx, timeout: cfg.RequestTimeout},
		leader:    newLeaderClient(cfg.Store, cfg.ForwardScheme, cfg.ForwardTransport, cfg.Metrics),
		lns:       map[net.Listener]struct{}{},
		conns:     map[*conn]struct{}{},
	}
}

// ErrServerClosed is what Serve returns after Shutdown or Close.
var ErrServerClosed = errors.New("respapi: server closed")

// Serve accepts connections on ln until Shutdown or Close.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		_ = ln.Close()
		return ErrServerClosed
	}
	s.lns[ln] = struct{}{}
	s.mu.Unlock()
	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closing := s.closing
			s.mu.Unlock()
			if closing {
				return ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, syscallEMFILE) {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				time.Sleep(delay)
				continue
			}
			return err
		}
		delay = 0
		s.accept(nc)
	}
}

func (s *Server) accept(nc net.Conn) {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		_ = nc.Close()
		return
	}
	if len(s.conns) >= s.cfg.MaxConns {
		s.mu.Unlock()
		_ = nc.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = nc.Write(resp.AppendError(nil, "ERR max number of clients reached"))
		_ = nc.Close()
		return
	}
	c := newConn(s, nc)
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	s.cfg.Metrics.RESPConnOpened()
	go func() {
		defer s.wg.Done()
		defer s.cfg.Metrics.RESPConnClosed()
		c.serve()
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
	}()
}

// Shutdown stops accepting, lets every connection finish the commands it
// has read (an idle one ends at once), and waits for them until ctx ends,
// then closes what is left.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closing = true
	for ln := range s.lns {
		_ = ln.Close()
	}
	for c := range s.conns {
		// A connection waiting for its next command wakes with a timeout
		// and ends; one serving a batch answers it first.
		_ = c.nc.SetReadDeadline(time.Now())
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		s.cancel()
		return nil
	case <-ctx.Done():
		s.Close()
		return ctx.Err()
	}
}

// Close stops at once: listeners and connections are closed, commands in
// flight cancelled.
func (s *Server) Close() {
	s.mu.Lock()
	s.closing = true
	for ln := range s.lns {
		_ = ln.Close()
	}
	for c := range s.conns {
		_ = c.nc.Close()
	}
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
}

// conn is one client connection; its fields are its goroutine's alone.
type conn struct {
	s     *Server
	nc    net.Conn
	r     *resp.Reader
	w     *bufio.Writer
	id    int64
	proto int    // 2 or 3
	name  string // CLIENT SETNAME
	// Authentication: token is the one the connection authenticated with
	// ("" before, or in dev mode), passed on when forwarding.
	authed               bool
	token                string
	mayReserve, mayAdmin bool

	args    [][]byte
	batch   []*call
	segment []*call   // run's
	groups  [][]*call // runSegment's
	free    []*call
	quit    bool
	// writeDeadlineFresh: until then the write deadline set last is at
	// least half of WriteTimeout away and is not set again (setting it
	// for every answer cost about 2% of the leader's CPU, pprof as in
	// deadlines).
	writeDeadlineFresh time.Time
}

func newConn(s *Server, nc net.Conn) *conn {
	c := &conn{s: s, nc: nc, id: s.nextID.Add(1), proto: 2}
	c.r = resp.NewReader(nc, s.cfg.Limits)
	// Small: answers are a few bytes each, and every open connection
	// holds this buffer.
	c.w = bufio.NewWriterSize(nc, 4<<10)
	if s.cfg.Tokens == nil {
		c.authed, c.mayReserve, c.mayAdmin = true, true, true
	}
	return c
}

// serve reads a batch of commands (every command already received, within
// bounds), runs it and answers it, until the client leaves or QUITs.
func (c *conn) serve() {
	defer c.nc.Close()
	for !c.quit {
		readErr := c.readBatch()
		if len(c.batch) > 0 {
			c.run()
			if !c.answer() {
				return
			}
		}
		if readErr != nil {
			var pe *resp.ProtocolError
			if errors.As(readErr, &pe) {
				// Redis answers a protocol error and closes: what follows
				// in the stream cannot be framed.
				_ = c.nc.SetWriteDeadline(time.Now().Add(time.Second))
				_, _ = c.nc.Write(resp.AppendError(nil, "ERR "+pe.Error()))
			} else if !errors.Is(readErr, io.EOF) && !errors.Is(readErr, net.ErrClosed) && !isTimeout(readErr) {
				c.s.log.Debug("resp connection ended", "remote", c.nc.RemoteAddr(), "err", readErr)
			}
			return
		}
		c.r.Reset()
	}
}

// readBatch reads one command, waiting for it, then every further command
// already received, up to the pipeline bounds.
func (c *conn) readBatch() error {
	c.free = append(c.free, c.batch...)
	c.batch = c.batch[:0]
	bytes, answers := 0, 0
	for len(c.batch) < c.s.cfg.MaxPipeline && bytes < maxBatchBytes && answers < maxBatchAnswerBytes {
		args, err := c.r.ReadCommand(c.args)
		c.args = args[:0]
		if err != nil {
			return err
		}
		cl := c.newCall()
		cl.args = append(cl.args, args...)
		for _, a := range args {
			bytes += len(a)
		}
		answers += answerWeight(args)
		c.batch = append(c.batch, cl)
		if c.r.Buffered() == 0 {
			break
		}
	}
	return nil
}

func (c *conn) newCall() *call {
	if n := len(c.free); n > 0 {
		cl := c.free[n-1]
		c.free = c.free[:n-1]
		cl.reset()
		return cl
	}
	return &call{}
}

// answer writes the batch's answers in order, with one flush.
func (c *conn) answer() bool {
	for _, cl := range c.batch {
		_, _ = c.w.Write(cl.out)
	}
	if now := time.Now(); now.After(c.writeDeadlineFresh) {
		_ = c.nc.SetWriteDeadline(now.Add(c.s.cfg.WriteTimeout))
		c.writeDeadlineFresh = now.Add(c.s.cfg.WriteTimeout / 2)
	}
	return c.w.Flush() == nil
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
