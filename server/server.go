// Package server assembles one ticketd node: the FSM, the Raft node, the
// leader's issuer and the HTTP API, and runs them until shutdown. The binary
// and the in-process cluster tests both start nodes through it.
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/client"
	"github.com/ticketd/ticketd/cluster"
	"github.com/ticketd/ticketd/domain"
	"github.com/ticketd/ticketd/fsm"
	"github.com/ticketd/ticketd/httpapi"
	"github.com/ticketd/ticketd/idgen"
	"github.com/ticketd/ticketd/internal/buildinfo"
	"github.com/ticketd/ticketd/issuer"
	"github.com/ticketd/ticketd/lessor"
	"github.com/ticketd/ticketd/metrics"
	"github.com/ticketd/ticketd/respapi"
)

// Server is a running node.
type Server struct {
	cfg    Config
	log    *slog.Logger
	node   *cluster.Node
	issuer *issuer.Issuer
	lessor *lessor.Lessor
	// newConns are API connections that have not carried a request yet.
	newConns newConns
	api      *httpapi.Service
	http     *http.Server
	ln       net.Listener
	resp     *respapi.Server // nil without RESPAddr
	respLn   net.Listener
	client   *http.Client
	scheme   string // of every node's API: http or https
	// snowflake is the node's Snowflake service; selfAPI the SDK client
	// its lease keepers reach this node's own API through.
	snowflake *idgen.Service
	selfAPI   *client.Client
	selfConn  *killableTransport

	stop     chan struct{}
	stopCtx  context.Context // cancelled when stop closes, for outgoing calls
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	stopOnce sync.Once
	serveErr chan error
}

// Start opens the node and starts serving its API.
func Start(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	ln := cfg.HTTPListener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", cfg.HTTPAddr); err != nil {
			return nil, fmt.Errorf("listen on HTTP address: %w", err)
		}
	}
	// The Redis-protocol front's port is taken now, with the API's, so
	// that a bad --resp-addr fails before the node opens its Raft state.
	respLn := cfg.RESPListener
	if respLn == nil && cfg.RESPAddr != "" {
		var err error
		if respLn, err = net.Listen("tcp", cfg.RESPAddr); err != nil {
			_ = ln.Close()
			return nil, fmt.Errorf("listen on RESP address: %w", err)
		}
	}
	closeListeners := func() {
		_ = ln.Close()
		if respLn != nil {
			_ = respLn.Close()
		}
	}
	advertise := cfg.HTTPAdvertise
	if advertise == "" {
		advertise = ln.Addr().String()
	}
	if err := checkReachable(advertise); err != nil {
		closeListeners()
		return nil, err
	}
	stopCtx, cancel := context.WithCancel(context.Background())
	s := &Server{
		stopCtx:  stopCtx,
		cancel:   cancel,
		cfg:      cfg,
		log:      log,
		ln:       ln,
		respLn:   respLn,
		stop:     make(chan struct{}),
		serveErr: make(chan error, 1),
	}
	if cfg.Metrics == nil {
		cfg.Metrics = metrics.New("dev")
	}
	s.scheme = "http"
	if cfg.APITLS != nil {
		s.scheme = "https"
		ln = tls.NewListener(ln, cfg.APITLS)
		s.ln = ln
	}
	// Forwards to the leader and asks of peers connect within
	// cluster.ConnectTimeout: a peer's name may still resolve to the
	// address of a pod that was rescheduled, where a connect never
	// completes, and a forward waiting on it held its caller and this
	// node's shutdown (issue 43's rehearsal).
	peerDialer := &net.Dialer{Timeout: cluster.ConnectTimeout, KeepAlive: 30 * time.Second}
	peerTransport := &http.Transport{
		DialContext:         peerDialer.DialContext,
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     90 * time.Second,
	}
	if cfg.PeerTLS != nil {
		peerTransport.DialTLSContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			return dialTLS(ctx, network, addr, cfg.PeerTLS())
		}
	}
	s.client = &http.Client{Timeout: 5 * time.Second, Transport: peerTransport}
	cc := cfg.Cluster
	cc.HTTPAdvertise = advertise
	cc.WillJoin = len(cfg.Join) > 0
	if cc.Version == "" {
		cc.Version = buildinfo.Version()
	}
	cc.Logger = log
	cc.Metrics = cfg.Metrics
	cfg.Issuer.Metrics = cfg.Metrics
	s.cfg = cfg
	state := fsm.New()
	cfg.plantFaults(state)
	node, err := cluster.Open(cc, state)
	if err != nil {
		cancel()
		closeListeners()
		return nil, err
	}
	s.node = node
	s.issuer = issuer.New(node, cfg.Issuer)
	// The lease timers start only when the node serves as leader.
	s.lessor = lessor.New(state, node.ApplyLeaseOp, lessor.Config{Logger: log, Metrics: cfg.Metrics})
	if err := node.Start(leadershipListener{s.issuer, s.lessor, cfg.faultConfig}); err != nil {
		_ = node.Shutdown(context.Background(), false)
		cancel()
		closeListeners()
		return nil, err
	}
	s.api = httpapi.New(httpapi.Config{
		Store:            store{s},
		Logger:           log,
		RequestTimeout:   cfg.RequestTimeout,
		Pprof:            cfg.Pprof,
		Tokens:           cfg.Tokens,
		MetricsPublic:    cfg.MetricsPublic,
		Metrics:          cfg.Metrics,
		MaxInflight:      cfg.MaxInflight,
		ForwardScheme:    s.scheme,
		ForwardTransport: peerTransport,
		Unsafe:           cfg.UnsafeHandler,
	})
	// Before the API serves: its handlers read s.snowflake. The leases of
	// --snowflake-namespaces are asked for through the API, in the
	// background, until it answers.
	if err := s.startSnowflake(advertise); err != nil {
		_ = node.Shutdown(context.Background(), false)
		cancel()
		closeListeners()
		return nil, err
	}
	s.http = &http.Server{
		ConnState:         s.newConns.track,
		Handler:           s.api.Handler(),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       cfg.HTTPReadTimeout,
		WriteTimeout:      cfg.HTTPWriteTimeout,
		IdleTimeout:       2 * time.Minute,
	}
	go func() {
		err := s.http.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		s.serveErr <- err
	}()
	s.startRESP(peerTransport)
	cfg.Metrics.Register(newCapacityCollector(node.FSM()))
	cfg.Metrics.Register(newSnowflakeCollector(s.snowflake.States))
	cfg.Metrics.Register(newStandbyCollector(standbyAndFence(node)))
	s.wg.Add(2)
	go s.membershipLoop(advertise)
	go s.auditLoop(cfg.AuditInterval)
	log.Info("node started", "id", cc.ID, "http", advertise, "raft", node.RaftAddr())
	return s, nil
}

// startSnowflake starts the node's Snowflake service. Its lease keepers
// reach the cluster through this node's own API, with the node's peer
// transport and admin token, as the node's other calls to the cluster go.
func (s *Server) startSnowflake(advertise string) error {
	s.selfConn = &killableTransport{rt: s.client.Transport}
	opts := []client.Option{client.WithHTTPClient(&http.Client{Transport: s.selfConn}), client.WithLogger(s.log.With("component", "snowflake-leases"))}
	if s.cfg.Tokens != nil {
		opts = append(opts, client.WithBearerToken(s.cfg.Tokens.AdminToken()))
	}
	self, err := client.New([]string{s.scheme + "://" + advertise}, opts...)
	if err != nil {
		return fmt.Errorf("snowflake service: %w", err)
	}
	svc, err := idgen.New(idgen.Config{
		Node:      s.node.ID(),
		Client:    self,
		Clock:     s.snowflakeClock(),
		Exists:    func(ns string) bool { _, ok := s.node.FSM().Namespace(ns); return ok },
		LeaseWait: s.cfg.SnowflakeLeaseWait,
		Options:   s.cfg.snowflakeOptions(),
		Logger:    s.log,
	})
	if err != nil {
		_ = self.Close()
		return err
	}
	if err := svc.Start(s.cfg.SnowflakeNamespaces); err != nil {
		_ = svc.Close()
		_ = self.Close()
		return err
	}
	s.selfAPI, s.snowflake = self, svc
	return nil
}

// killableTransport carries the Snowflake lease keepers' requests to this
// node's API until Kill: from then on it refuses each at once, as a crashed
// process would send nothing, so that no lease is released (the cluster
// expires them after their TTL) and Kill does not wait for retries.
type killableTransport struct {
	rt     http.RoundTripper
	killed atomic.Bool
}

func (k *killableTransport) kill() { k.killed.Store(true) }

func (k *killableTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if !k.killed.Load() {
		return k.rt.RoundTrip(r)
	}
	if r.Body != nil {
		_ = r.Body.Close()
	}
	// Not retryable (a 4xx), so the release gives up at once.
	body := `{"type":"` + api.ProblemUnavailable + `","title":"node killed","status":410,"detail":"this node was killed: it sends nothing"}`
	return &http.Response{
		StatusCode: http.StatusGone, Status: "410 Gone", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": []string{"application/problem+json"}},
		Body:   io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: r,
	}, nil
}

// snowflakeClock is the Snowflake generators' clock: this node's wall clock
// (the one the fault suite steps) and Go's monotonic clock, both from one
// time.Now where the wall clock is time.Now plus an offset. Two reads
// would disagree by the time between them, and a thread descheduled there
// (tens of ms on a busy host) looks to a generator like a step of the wall
// clock: forward, then back, which it refuses as clock-behind.
func (s *Server) snowflakeClock() client.Clock {
	base := time.Now()
	if off := s.cfg.WallClockOffset; off != nil {
		return offsetClock{base: base, offset: off}
	}
	if wall := s.cfg.Cluster.WallClock; wall != nil {
		return wallClock{base: base, wall: wall}
	}
	return offsetClock{base: base}
}

// offsetClock reads time.Now once: the wall clock plus offset (none if
// nil), and the monotonic time since base.
type offsetClock struct {
	base   time.Time
	offset func() time.Duration
}

func (c offsetClock) Now() (time.Time, time.Duration) {
	t := time.Now()
	if c.offset != nil {
		return t.Add(c.offset()).Round(0), t.Sub(c.base)
	}
	return t.Round(0), t.Sub(c.base)
}

// wallClock reads a wall clock given as a function beside the monotonic
// clock: two reads (tests that give no offset).
type wallClock struct {
	base time.Time
	wall func() time.Time
}

func (c wallClock) Now() (time.Time, time.Duration) {
	m := time.Since(c.base)
	return c.wall(), m
}

// stopSnowflake releases the node's worker-id leases while its API can
// still forward the releases to the leader.
func (s *Server) stopSnowflake() {
	if s.snowflake == nil {
		return
	}
	if err := s.snowflake.Close(); err != nil {
		s.log.Warn("releasing the Snowflake leases", "err", err)
	}
	_ = s.selfAPI.Close()
}

// HTTPAddr is the address the API listens on.
func (s *Server) HTTPAddr() string { return s.ln.Addr().String() }

// RESPAddr is the address the Redis-protocol front listens on ("" when it
// is off).
func (s *Server) RESPAddr() string {
	if s.respLn == nil {
		return ""
	}
	return s.respLn.Addr().String()
}

// startRESP starts the Redis-protocol front when the configuration asks
// for it: same store, tokens and TLS as the HTTP API, and the same
// transport to reach the leader's API from a follower.
func (s *Server) startRESP(peerTransport http.RoundTripper) {
	cfg := s.cfg
	ln := s.respLn // taken in Start
	if ln == nil {
		return
	}
	if cfg.APITLS != nil {
		ln = tls.NewListener(ln, cfg.APITLS)
	}
	version := cfg.Version
	if version == "" {
		version = "dev"
	}
	s.resp = respapi.New(respapi.Config{
		Store:            store{s},
		Logger:           s.log,
		Tokens:           cfg.Tokens,
		Metrics:          cfg.Metrics,
		Version:          version,
		RequestTimeout:   cfg.RequestTimeout,
		MaxConns:         cfg.RESPMaxConns,
		ForwardScheme:    s.scheme,
		ForwardTransport: peerTransport,
	})
	go func() {
		if err := s.resp.Serve(ln); err != nil && !errors.Is(err, respapi.ErrServerClosed) {
			s.log.Error("RESP front stopped", "err", err)
		}
	}()
	s.log.Info("serving the Redis protocol", "addr", s.respLn.Addr().String(), "tls", cfg.APITLS != nil)
}

// Node returns the Raft node (tests use it to inspect and to force
// snapshots).
func (s *Server) Node() *cluster.Node { return s.node }

// Issuer returns the leader-side issuer.
func (s *Server) Issuer() *issuer.Issuer { return s.issuer }

// Shutdown stops the node gracefully: /readyz fails, a leader hands its
// leadership over, in-flight requests finish, Raft stops.
func (s *Server) Shutdown(ctx context.Context) error {
	var err error
	s.stopOnce.Do(func() {
		s.stopSnowflake()
		s.api.Drain()
		close(s.stop)
		s.cancel()
		s.wg.Wait()
		if _, leading := s.node.Leadership(); leading {
			if terr := s.node.TransferLeadership(ctx); terr != nil {
				s.log.Warn("leadership transfer failed", "err", terr)
			}
		}
		var rerr error
		if s.resp != nil {
			rerr = s.resp.Shutdown(ctx)
		}
		stopSweep := s.newConns.sweep()
		herr := s.http.Shutdown(ctx)
		stopSweep()
		if herr != nil {
			_ = s.http.Close()
		}
		nerr := s.node.Shutdown(ctx, false)
		err = errors.Join(herr, rerr, nerr)
	})
	return err
}

// Kill stops the node abruptly, as close to a crash as an in-process node
// gets: no leadership transfer, connections cut.
func (s *Server) Kill() error {
	var err error
	s.stopOnce.Do(func() {
		close(s.stop)
		s.cancel()
		s.wg.Wait()
		if s.selfAPI != nil {
			// A crash releases nothing: the leases expire by themselves.
			s.selfConn.kill()
			_ = s.selfAPI.Close()
		}
		_ = s.http.Close()
		if s.resp != nil {
			s.resp.Close()
		}
		err = s.node.Shutdown(context.Background(), false)
	})
	return err
}

// Done returns the HTTP server's exit error once it stops.
func (s *Server) Done() <-chan error { return s.serveErr }

// leadershipListener connects the node's leadership to the issuer and the
// lessor's lease timers, and every applied raise to the issuer's cut.
type leadershipListener struct {
	is     *issuer.Issuer
	ls     *lessor.Lessor
	faults faultConfig
}

func (l leadershipListener) LeadershipAcquired(ld cluster.Leadership) {
	l.is.Acquire(ld.Term)
	l.ls.LeadershipAcquired()
}

func (l leadershipListener) LeadershipLost(cluster.Leadership) {
	l.is.Drop()
	l.ls.LeadershipLost()
}

// RaiseApplying cuts what this node's issuer holds at or below atLeast,
// right before the raise entry applies. The state machine's mark counts the
// blocks already granted to this leader, so a raise to a value inside such a
// block changes no mark, yet the IDs below the value that the block still
// holds must not be served once the raise is acknowledged, nor once a read
// has shown the raised mark. A raise that applies in this node's term can only meet
// blocks of this node's issuer; any later leader takes its blocks from above
// the raised mark; on a follower the issuer holds nothing and this is a
// lookup in an empty map.
func (l leadershipListener) RaiseApplying(sequence string, atLeast int64) {
	if l.faults.raiseCutByCaller() {
		return // the planted bug raise-cut-by-caller: the handler cuts, if it still waits
	}
	l.is.Raise(sequence, atLeast)
}

var _ httpapi.Store = store{}

func (st store) ID() string { return st.s.node.ID() }

func (st store) Serving() bool {
	_, ok := st.s.issuer.Serving()
	return ok
}

func (st store) LeaderHTTPAddr() (string, string, bool) { return st.s.node.LeaderHTTPAddr() }

var _ respapi.Store = store{}

func (st store) SequenceCount() int { return st.s.node.FSM().SequenceCount() }

func (st store) Reserve(ctx context.Context, name string, count int64) (int64, int64, error) {
	r, err := st.s.issuer.Reserve(ctx, name, count)
	if err != nil {
		return 0, 0, kindOf(err)
	}
	return r.First, r.Last, nil
}

func (st store) CreateSequence(ctx context.Context, c domain.SequenceSettings) (domain.Sequence, bool, error) {
	resp, err := st.s.node.Apply(ctx, fsm.EncodeCreateSequence(fsm.CreateSequence{Name: c.Name, Start: c.Start, Max: c.Max}))
	if err != nil {
		return domain.Sequence{}, false, kindOf(err)
	}
	res, ok := resp.(fsm.CreateResult)
	if !ok {
		return domain.Sequence{}, false, fmt.Errorf("create sequence: unexpected FSM response %T", resp)
	}
	return sequenceOf(res.Sequence), res.Created, nil
}

// RaiseSequence applies a raise. The leader's cut of what it holds at or
// below atLeast is not made here but where the entry applies
// (leadershipListener.RaiseApplying), before the entry applies: a caller that
// hangs up ends this wait, never the entry, and the cut must not depend on
// who still waits for the answer (issue 30).
func (st store) RaiseSequence(ctx context.Context, name string, atLeast int64) (domain.RaiseResult, error) {
	resp, err := st.s.node.ApplyOnStandby(ctx, fsm.EncodeRaiseSequence(fsm.RaiseSequence{Name: name, AtLeast: atLeast, Stamp: st.s.node.Stamp()}))
	if err != nil {
		return domain.RaiseResult{}, kindOf(err)
	}
	res, ok := resp.(fsm.RaiseResult)
	if !ok {
		return domain.RaiseResult{}, fmt.Errorf("raise sequence: unexpected FSM response %T", resp)
	}
	if st.s.cfg.raiseCutByCaller() {
		st.s.issuer.Raise(name, atLeast) // the planted bug raise-cut-by-caller (faults.go)
	}
	return domain.RaiseResult{Sequence: sequenceOf(res.Sequence), Raised: res.Raised, Skipped: res.Skipped()}, nil
}

// verifyRead makes a read of the leader's FSM linearizable: the node has
// applied everything committed before its term (the Barrier before serving)
// and a quorum confirms it still leads in that term.
func (st store) verifyRead(ctx context.Context) error {
	term, serving := st.s.issuer.Serving()
	if !serving {
		return kindOf(issuer.ErrNotServing)
	}
	vterm, err := st.s.node.VerifyLeader(ctx)
	if err != nil {
		return kindOf(err)
	}
	if vterm != term {
		return kindOf(issuer.ErrStaleLeadership)
	}
	return nil
}

func (st store) Sequence(ctx context.Context, name string) (domain.Sequence, error) {
	if err := st.verifyRead(ctx); err != nil {
		return domain.Sequence{}, err
	}
	seq, ok := st.s.node.Sequence(name)
	if !ok {
		return domain.Sequence{}, kindOf(fmt.Errorf("%w: %q", fsm.ErrSequenceNotFound, name))
	}
	return sequenceOf(seq), nil
}

func (st store) Sequences(ctx context.Context, after string, limit int) ([]domain.Sequence, bool, error) {
	if err := st.verifyRead(ctx); err != nil {
		return nil, false, err
	}
	seqs, more := st.s.node.FSM().SequencesPage(after, limit)
	out := make([]domain.Sequence, 0, len(seqs))
	for _, q := range seqs {
		out = append(out, sequenceOf(q))
	}
	return out, more, nil
}

func (st store) Status() (domain.ClusterStatus, error) {
	status, err := st.s.node.Status()
	if err != nil {
		return status, kindOf(err)
	}
	if rerr := st.Ready(); rerr != nil {
		status.NotReady = rerr.Error()
	}
	if st.s.snowflake != nil {
		status.Snowflake = st.s.snowflake.States()
	}
	return status, nil
}

// SnowflakeIDs are made by this node's own generator of the namespace:
// no Raft round, no forwarding, whichever node this is.
func (st store) SnowflakeIDs(ctx context.Context, ns string, count int) (domain.SnowflakeIDs, error) {
	if st.s.snowflake == nil {
		return domain.SnowflakeIDs{}, domain.Kindf(domain.ErrUnavailable, "this node's Snowflake service is not running")
	}
	return st.s.snowflake.Take(ctx, ns, count)
}

func (st store) Join(ctx context.Context, m domain.Member) error {
	return kindOf(st.s.node.Join(ctx, m.ID, m.RaftAddr, m.HTTPAddr))
}

// JoinStandby adds a disaster-recovery standby (issue #34).
func (st store) JoinStandby(ctx context.Context, m domain.Member, bound, timeoutMs int64) error {
	return kindOf(st.s.node.JoinStandby(ctx, m.ID, m.RaftAddr, m.HTTPAddr, bound, timeoutMs))
}

// IsStandby reports whether this node is the cluster's standby, as the log
// records it or as it was started (before it has joined).
func (st store) IsStandby() bool {
	if st.s.cfg.Standby != nil {
		return true
	}
	sb, ok := st.s.node.FSM().StandbyInfo()
	return ok && sb.ID == st.s.node.ID()
}

func (st store) UpdateMember(ctx context.Context, m domain.Member) error {
	return kindOf(st.s.node.UpdateMetadata(ctx, m.ID, m.RaftAddr, m.HTTPAddr))
}

// TransferLeadershipTo hands leadership to the voter to and names the node
// that leads once the transfer has finished (issue 43, G4: the Helm chart's
// scale-down hook moves leadership off a member it removes, to a voter it
// chose).
func (st store) TransferLeadershipTo(ctx context.Context, to string) (string, error) {
	leader, err := st.s.node.TransferLeadershipTo(ctx, to)
	return leader, kindOf(err)
}

// Remove takes a member out of the cluster and then revokes the worker-id
// leases its Snowflake service held, so that its worker ids start their
// recycle delay now rather than when the leases expire. (A removed node that
// still runs stops by its lease deadlines, as any holder of a revoked lease
// does, before the recycle delay lets anyone else have the ids.)
func (st store) Remove(ctx context.Context, id string) error {
	if err := st.s.node.Remove(ctx, id); err != nil {
		return kindOf(err)
	}
	f := st.s.node.FSM()
	holder := idgen.Holder(id)
	for _, n := range f.Namespaces() {
		for _, l := range f.Leases(n.Name) {
			if l.State != fsm.LeaseHeld || l.Holder != holder {
				continue
			}
			if _, err := st.s.node.ApplyLeaseOp(ctx, fsm.LeaseOp{Op: fsm.LeaseOpRevoke, Namespace: n.Name, WorkerID: l.WorkerID}); err != nil {
				st.s.log.Warn("revoking a removed member's worker-id lease; it expires by itself", "member", id, "namespace", n.Name, "worker", l.WorkerID, "err", err)
			}
		}
	}
	return nil
}

func (st store) Snapshot(ctx context.Context) error { return kindOf(st.s.node.Snapshot(ctx)) }

func (st store) Backup(ctx context.Context, w io.Writer) error {
	if err := st.verifyRead(ctx); err != nil {
		return err
	}
	return kindOf(st.s.node.FSM().Backup(w))
}

// Restore seeds this (new) cluster from a backup. The state machine decides
// it where the entry applies: only onto a state with no sequences and no
// namespaces, so nothing acknowledged before it can be handed out again. The
// backup is checked here first with the state machine's own rules, so a bad
// one is a 400 before anything is written. Apply returns once the entry has
// committed on a majority and applied here.
func (st store) Restore(ctx context.Context, backup []byte, advance int64) error {
	if err := fsm.ValidateBackup(backup, advance); err != nil {
		return kindOf(err)
	}
	// In the oldest format that carries its data, so that the restore
	// needs no higher feature level than its data does: a backup of a
	// newer cluster restores into an older one when its data allows, and
	// is refused (cluster upgrading, naming the levels) when not.
	backup, err := fsm.ReencodeBackup(backup)
	if err != nil {
		return kindOf(err)
	}
	resp, err := st.s.node.ApplyOnStandby(ctx, fsm.EncodeRestoreBackup(fsm.RestoreBackup{Backup: backup, Advance: advance, Stamp: st.s.node.Stamp()}))
	if err != nil {
		return kindOf(err)
	}
	rep, ok := resp.(fsm.RestoreResult)
	if !ok {
		return fmt.Errorf("restore: unexpected FSM response %T", resp)
	}
	// The state changed under the issuer and the lessor: the node's leader
	// loop starts a new stretch of leadership after a Barrier, asked for
	// where the entry applied (cluster's appliedFSM), so that it happens
	// whether or not this caller still waits; and the restored leases
	// count as a lease change there, which starts their recycle timers.
	// The answer waits for the new stretch so that the caller's next
	// request meets it; the restore has committed whatever happens here,
	// so a failure is only logged.
	if err := st.s.node.AwaitReestablished(ctx); err != nil {
		st.s.log.Warn("restore committed; waiting for leadership to be re-established failed", "err", err)
	}
	st.s.log.Info("restored from backup", "sequences", rep.Sequences, "namespaces", rep.Namespaces, "advance", advance, "exhausted", rep.Exhausted)
	return nil
}

func (st store) Ready() error {
	n := st.s.node
	if f, failing := n.StorageFailure(); failing {
		return fmt.Errorf("this node cannot write to its Raft log (%s, for %s): %v", f.Kind, time.Since(f.Since).Round(time.Second), f.Err)
	}
	switch {
	case !n.IsMember():
		return errors.New("this node is not a member of a cluster yet")
	case n.LeaderID() == "":
		return errors.New("no leader is known")
	case !n.CaughtUp():
		return errors.New("this node has not applied every committed entry yet")
	}
	if lag := n.Lag(); lag > st.s.cfg.MaxReadyLag {
		return fmt.Errorf("this node is %d committed entries behind the leader (ready again at %d or fewer)", lag, st.s.cfg.MaxReadyLag)
	}
	if _, _, ok := n.LeaderHTTPAddr(); !ok {
		return errors.New("the leader's API address is not known yet")
	}
	if m, ok := n.FSM().Member(n.ID()); !ok || m.HTTPAddr == "" {
		return errors.New("this node's API address is not registered with the cluster yet")
	}
	return nil
}

// newConns tracks the API connections that have not carried a request yet,
// so that a graceful shutdown can close them. net/http's Shutdown waits up to
// 5 s for such a connection to become idle (golang/go#21204, #22682), and
// Go's own http.Transport leaves them behind: it parks a connection it
// dialed but no longer needed in its idle pool, unused. A shutdown then took
// 5 s and missed its deadline whenever a client had done so.
type newConns struct {
	mu    sync.Mutex
	since map[net.Conn]time.Time
}

// newConnGrace is how long a new connection may stay silent during a
// shutdown before it is closed: enough for a request already sent to be
// read (it is then served), far below net/http's 5 s.
const newConnGrace = 250 * time.Millisecond

func (nc *newConns) track(c net.Conn, st http.ConnState) {
	nc.mu.Lock()
	defer nc.mu.Unlock()
	if st == http.StateNew {
		if nc.since == nil {
			nc.since = map[net.Conn]time.Time{}
		}
		nc.since[c] = time.Now()
		return
	}
	delete(nc.since, c)
}

// sweep closes, until the returned function is called, every connection
// that has carried no request for newConnGrace.
func (nc *newConns) sweep() (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(newConnGrace / 5)
		defer t.Stop()
		for {
			nc.mu.Lock()
			for c, at := range nc.since {
				if time.Since(at) >= newConnGrace {
					_ = c.Close()
					delete(nc.since, c)
				}
			}
			nc.mu.Unlock()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// dialTLS opens a verified TLS connection to addr with a copy of cfg whose
// ServerName, if unset, is addr's host.
func dialTLS(ctx context.Context, network, addr string, cfg *tls.Config) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	d := net.Dialer{Timeout: cluster.ConnectTimeout, KeepAlive: 30 * time.Second}
	raw, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	c := cfg.Clone()
	if c.ServerName == "" {
		c.ServerName = host
	}
	conn := tls.Client(raw, c)
	if err := conn.HandshakeContext(ctx); err != nil {
		_ = raw.Close()
		return nil, err
	}
	return conn, nil
}
