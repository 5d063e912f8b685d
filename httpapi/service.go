// Package httpapi is ticketd's HTTP API (Echo v4) over a small Store
// interface. Every node answers every request: a node that is not the serving
// leader forwards sequence and membership requests to the leader, once.
// Errors are RFC 9457 problem details with a stable type.
package httpapi

import (
	"bytes"
	"context"
	_ "embed" // openapi.json
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/http/pprof"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/auth"
	"github.com/ticketd/ticketd/domain"
	"github.com/ticketd/ticketd/metrics"
	"github.com/ticketd/ticketd/ui"
)

// Store is what the API needs of a node: a few methods over domain values.
// Its errors carry a kind of package domain (errors.Is), which decides the
// problem the client gets.
type Store interface {
	// ID is this node's ID.
	ID() string
	// Serving reports whether this node is the leader and serves requests.
	Serving() bool
	// LeaderHTTPAddr returns the leader's ID and API address (host:port).
	LeaderHTTPAddr() (id, addr string, ok bool)

	Reserve(ctx context.Context, name string, count int64) (first, last int64, err error)
	// CreateSequence creates a sequence, or finds it with the same
	// settings (created false).
	CreateSequence(ctx context.Context, s domain.SequenceSettings) (seq domain.Sequence, created bool, err error)
	// RaiseSequence lifts a sequence's high-water mark to at least
	// atLeast: once it returns, nothing this cluster hands out is atLeast
	// or below. It never lowers a mark.
	RaiseSequence(ctx context.Context, name string, atLeast int64) (domain.RaiseResult, error)
	// Sequence and Sequences are linearizable reads on the leader.
	Sequence(ctx context.Context, name string) (domain.Sequence, error)
	// Sequences returns up to limit (at least 1) sequences whose names are
	// strictly greater than after, in byte order of names, and whether
	// more follow the last one.
	Sequences(ctx context.Context, after string, limit int) (page []domain.Sequence, more bool, err error)

	Status() (domain.ClusterStatus, error)
	// Join adds a voter; UpdateMember records the addresses of an
	// existing member.
	Join(ctx context.Context, m domain.Member) error
	UpdateMember(ctx context.Context, m domain.Member) error
	Remove(ctx context.Context, id string) error
	// Snapshot makes this node take a Raft snapshot now.
	Snapshot(ctx context.Context) error
	// Backup writes a consistent copy of the replicated state.
	Backup(ctx context.Context, w io.Writer) error
	// Restore seeds a new cluster from a backup, lifting every high-water
	// mark by advance.
	Restore(ctx context.Context, backup []byte, advance int64) error

	SnowflakeStore
	// Ready returns nil when the node knows a leader and has caught up.
	Ready() error
}

// ForwardedHeader marks a request one node forwarded to the leader (see
// api.ForwardedHeader).
const ForwardedHeader = api.ForwardedHeader

// Config configures the service.
type Config struct {
	Store  Store
	Logger *slog.Logger
	// RequestTimeout bounds the work of one request on the leader.
	RequestTimeout time.Duration
	// ForwardTransport carries forwarded requests (nil: a default one).
	ForwardTransport http.RoundTripper
	// Pprof serves Go's profiler under /debug/pprof/ (off by default: it
	// exposes internals and costs CPU when used).
	Pprof bool
	// Tokens, if set, turns authentication on; nil means every request is
	// allowed (dev mode).
	Tokens *auth.Tokens
	// MetricsPublic serves /metrics without a token even when auth is on.
	MetricsPublic bool
	// Metrics, if set, is served at /metrics and receives request metrics.
	Metrics *metrics.Metrics
	// MaxInflight bounds requests in progress under /v1 (429 beyond);
	// 0 means 4096.
	MaxInflight int
	// ForwardScheme is "http" or "https", the scheme of the other nodes'
	// APIs; "" means http.
	ForwardScheme string
	// Unsafe, if set, is served under /unsafe/ without authentication:
	// the fault-injection build's controls (a production build never sets
	// it).
	Unsafe http.Handler
}

// Service is the HTTP API of one node.
type Service struct {
	store   Store
	log     *slog.Logger
	timeout time.Duration
	echo    *echo.Echo

	tokens  *auth.Tokens
	metrics *metrics.Metrics
	scheme  string

	transport http.RoundTripper
	proxyMu   sync.Mutex
	proxies   map[string]*httputil.ReverseProxy

	draining chan struct{}
	drainMu  sync.Once

	coalesce *coalescer // reservations a follower forwards
}

// New builds the service.
func New(cfg Config) *Service {
	s := &Service{
		store:     cfg.Store,
		log:       cfg.Logger,
		timeout:   cfg.RequestTimeout,
		transport: cfg.ForwardTransport,
		proxies:   map[string]*httputil.ReverseProxy{},
		draining:  make(chan struct{}),
		tokens:    cfg.Tokens,
		metrics:   cfg.Metrics,
		scheme:    cfg.ForwardScheme,
	}
	if s.scheme == "" {
		s.scheme = "http"
	}
	maxInflight := cfg.MaxInflight
	if maxInflight <= 0 {
		maxInflight = 4096
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.timeout <= 0 {
		s.timeout = 10 * time.Second
	}
	if s.transport == nil {
		s.transport = &http.Transport{
			MaxIdleConns:        256,
			MaxIdleConnsPerHost: 256,
			IdleConnTimeout:     90 * time.Second,
		}
	}
	s.coalesce = newCoalescer(s)
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.handleEchoError

	e.Use(s.observe, decodeParams)
	admin, reserve := s.require(auth.ScopeAdmin), s.require(auth.ScopeReserve)
	if cfg.Pprof {
		for _, p := range []struct {
			path string
			h    http.HandlerFunc
		}{{"/debug/pprof/*", pprof.Index}, {"/debug/pprof/cmdline", pprof.Cmdline}, {"/debug/pprof/profile", pprof.Profile}, {"/debug/pprof/symbol", pprof.Symbol}, {"/debug/pprof/trace", pprof.Trace}} {
			e.GET(p.path, echo.WrapHandler(p.h), admin)
		}
	}
	if cfg.Unsafe != nil {
		e.Any("/unsafe/*", echo.WrapHandler(cfg.Unsafe))
	}
	e.GET("/livez", s.livez)
	// The status page and the API's description are public: the page asks
	// for a token and sends it with each API call it makes, and the
	// description holds nothing a client does not already see.
	e.GET("/ui", func(c echo.Context) error { return c.Redirect(http.StatusMovedPermanently, "/ui/") })
	e.GET("/ui/*", echo.WrapHandler(ui.Handler()))
	e.GET("/openapi.json", s.openAPI)
	e.GET("/readyz", s.readyz)
	if cfg.Metrics != nil {
		h := echo.WrapHandler(promhttp.HandlerFor(cfg.Metrics.Registry, promhttp.HandlerOpts{}))
		if cfg.MetricsPublic {
			e.GET("/metrics", h)
		} else {
			e.GET("/metrics", h, reserve)
		}
	}

	// Middleware is attached per route: as group middleware Echo would
	// register catch-all routes that turn every 405 under /v1 into a 404.
	// Order: shed load, authenticate, then forward or serve.
	limit, lead := s.limitInflight(maxInflight), s.leaderOnly
	v1 := composedGroup{e.Group("/v1")} // see routes.go
	v1.GET("/cluster", s.clusterStatus, limit, reserve)
	v1.GET("/cluster/nodes", s.nodesStatus, limit, reserve)
	v1.POST("/cluster/snapshot", s.snapshot, limit, admin)
	v1.PUT("/sequences/:name", s.createSequence, limit, admin, lead)
	v1.GET("/sequences", s.listSequences, limit, reserve, lead)
	v1.GET("/sequences/:name", s.getSequence, limit, reserve, lead)
	v1.POST("/sequences/:name/ranges", s.reserve, limit, reserve, s.forwardReserve)
	v1.POST("/sequences/:name/raise", s.raiseSequence, limit, admin, lead)
	v1.POST("/cluster/members", s.join, limit, admin, lead)
	v1.PUT("/cluster/members/:id", s.updateMember, limit, admin, lead)
	v1.DELETE("/cluster/members/:id", s.remove, limit, admin, lead)
	v1.GET("/backup", s.backup, bulk, limit, admin, lead)
	v1.POST("/restore", s.restore, bulk, limit, admin, lead)

	v1.PUT("/namespaces/:name", s.createNamespace, limit, admin, lead)
	v1.GET("/namespaces", s.listNamespaces, limit, reserve, lead)
	v1.GET("/namespaces/:name", s.getNamespace, limit, reserve, lead)
	v1.POST("/namespaces/:name/leases", s.acquireLease, limit, reserve, lead)
	v1.GET("/namespaces/:name/leases", s.listLeases, limit, reserve, lead)
	v1.PUT("/namespaces/:name/leases/:worker", s.renewLease, limit, reserve, lead)
	v1.DELETE("/namespaces/:name/leases/:worker", s.releaseLease, limit, reserve, lead)
	v1.POST("/namespaces/:name/leases/:worker/revoke", s.revokeLease, limit, admin, lead)
	v1.GET("/audit", s.audit, limit, admin, lead)
	v1.GET("/audit/check", s.auditCheck, limit, reserve, lead)
	v1.GET("/inspect/sequence/:name/:id", s.inspectSequence, limit, reserve, lead)
	v1.GET("/inspect/snowflake/:name/:id", s.inspectSnowflake, limit, reserve, lead)
	s.echo = e
	return s
}

// Route is one route the service serves: an HTTP method and an Echo path
// (parameters as :name, a trailing * for a prefix).
type Route struct{ Method, Path string }

// Routes lists every route the service registered, for the test that holds
// them against the OpenAPI description.
func (s *Service) Routes() []Route {
	var out []Route
	for _, r := range s.echo.Routes() {
		out = append(out, Route{Method: r.Method, Path: r.Path})
	}
	return out
}

//go:embed openapi.json
var openAPISpec []byte

// OpenAPISpec is the OpenAPI description of this API that GET /openapi.json
// serves.
func OpenAPISpec() []byte { return slices.Clone(openAPISpec) }

func (s *Service) openAPI(c echo.Context) error {
	return c.Blob(http.StatusOK, "application/json", openAPISpec)
}

// Handler returns the service as an http.Handler.
func (s *Service) Handler() http.Handler { return s.echo }

// Drain makes /readyz fail from now on, so load balancers stop sending
// traffic before the listener closes.
func (s *Service) Drain() { s.drainMu.Do(func() { close(s.draining) }) }

func (s *Service) livez(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok", "node": s.store.ID()})
}

func (s *Service) readyz(c echo.Context) error {
	select {
	case <-s.draining:
		return problem(http.StatusServiceUnavailable, api.ProblemUnavailable, "not ready", "node is shutting down")
	default:
	}
	if err := s.store.Ready(); err != nil {
		return problem(http.StatusServiceUnavailable, api.ProblemUnavailable, "not ready", err.Error())
	}
	return c.JSON(http.StatusOK, map[string]string{"status": "ready", "node": s.store.ID()})
}

// leaderOnly runs the handler on the serving leader and forwards everywhere
// else.
func (s *Service) leaderOnly(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		addr, err := s.forwardTo(c)
		switch {
		case err != nil:
			return err
		case addr == "":
			return next(c) // this node is the serving leader
		}
		// The proxy adds the leader's headers to these, never clears them.
		c.Response().Header().Set(api.LeaderHeader, addr)
		s.proxy(addr).ServeHTTP(c.Response(), c.Request())
		return nil
	}
}

// forwardTo says where c is served: here ("", on the serving leader), or at
// the API address of the leader this node forwards it to (counted as
// forwarded); or the problem that says why neither can be.
func (s *Service) forwardTo(c echo.Context) (string, error) {
	if s.store.Serving() {
		return "", nil
	}
	id, addr, ok := s.store.LeaderHTTPAddr()
	switch {
	case c.Request().Header.Get(ForwardedHeader) != "":
		return "", unavailable("this node was named leader by "+c.Request().Header.Get(ForwardedHeader)+" but is not serving as leader", id)
	case id == s.store.ID():
		return "", unavailable("this node was just elected leader and is not serving yet", id)
	case !ok:
		if id == "" {
			return "", unavailable("no leader is known", "")
		}
		return "", unavailable("the leader's API address is not known yet", id)
	}
	if s.metrics != nil {
		s.metrics.ForwardedRequests.Inc()
	}
	return addr, nil
}

func (s *Service) proxy(addr string) *httputil.ReverseProxy {
	s.proxyMu.Lock()
	defer s.proxyMu.Unlock()
	if p, ok := s.proxies[addr]; ok {
		return p
	}
	target := &url.URL{Scheme: s.scheme, Host: addr}
	self := s.store.ID()
	p := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = r.In.Host
			r.Out.Header.Set(ForwardedHeader, self)
		},
		Transport:  s.transport,
		BufferPool: copyBuffers,
		// This node's answer already carries the request id (observe set
		// it, and the leader got the same one): the proxy would add the
		// leader's copy a second time.
		ModifyResponse: func(r *http.Response) error {
			r.Header.Del(RequestIDHeader)
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			writeProblem(w, http.StatusServiceUnavailable, api.Problem{
				Type: api.ProblemUnavailable, Title: "leader unreachable",
				Detail: fmt.Sprintf("forwarding to the leader at %s failed: %v", addr, err),
			})
		},
	}
	s.proxies[addr] = p
	return p
}

// copyBuffers lends the proxy its copy buffers: without a pool it makes a
// 32 KiB one for every answer it relays.
var copyBuffers = &bufferPool{pool: sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}}

type bufferPool struct{ pool sync.Pool }

func (p *bufferPool) Get() []byte  { return *p.pool.Get().(*[]byte) }
func (p *bufferPool) Put(b []byte) { p.pool.Put(&b) }

func (s *Service) ctx(c echo.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.Request().Context(), s.timeout)
}

// reserveInput reads and checks a reservation's sequence name and count,
// the count read from the body by readCount: reserveCount on the leader, a
// reader that keeps the body on a follower that coalesces it (coalesce.go).
func reserveInput(c echo.Context, readCount func(echo.Context) (int64, error)) (name string, count int64, err error) {
	name = c.Param("name")
	if err := api.ValidateSequenceName(name); err != nil {
		return "", 0, badRequest(err.Error())
	}
	count, err = readCount(c)
	if err != nil {
		return "", 0, err
	}
	if err := api.ValidateCount(count); err != nil {
		return "", 0, badRequest(`field "count": ` + err.Error())
	}
	return name, count, nil
}

func (s *Service) reserve(c echo.Context) error {
	name, count, err := reserveInput(c, reserveCount) // see reservebody.go
	if err != nil {
		return err
	}
	ctx, cancel := s.ctx(c)
	defer cancel()
	start := time.Now()
	first, last, err := s.store.Reserve(ctx, name, count)
	if err != nil {
		perr := s.storeError(c, err)
		s.metrics.ObserveReservation(name, outcome(perr), 0, time.Since(start))
		return perr
	}
	s.metrics.ObserveReservation(name, "ok", count, time.Since(start))
	return writeRange(c, api.Range{Sequence: name, First: first, Last: last}) // see rangejson.go
}

// outcome names the result of a reservation for metrics.
func outcome(err error) string {
	var pe *problemError
	if !errors.As(err, &pe) {
		return "error"
	}
	switch pe.p.Type {
	case api.ProblemNotFound:
		return "not_found"
	case api.ProblemExhausted:
		return "exhausted"
	case api.ProblemUnavailable:
		return "unavailable"
	case api.ProblemBadRequest:
		return "bad_request"
	}
	return "error"
}

func (s *Service) backup(c echo.Context) error {
	ctx, cancel := s.ctx(c)
	defer cancel()
	// Buffered so that a failure can still be reported as a problem
	// rather than as a truncated 200. Backups are a few MB at most: one
	// record per sequence, namespace and lease, and the audit (at most
	// 20,000 records).
	var buf bytes.Buffer
	if err := s.store.Backup(ctx, &buf); err != nil {
		return s.storeError(c, err)
	}
	c.Response().Header().Set("Content-Disposition", `attachment; filename="ticketd.backup"`)
	return c.Blob(http.StatusOK, "application/octet-stream", buf.Bytes())
}

// bulkTransferTime is how long a backup or restore may take to send: the
// server's read and write timeouts are sized for small requests.
const bulkTransferTime = 10 * time.Minute

// bulk extends the connection's deadlines for a backup or restore, on the
// node that forwards it as on the leader.
func bulk(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		rc := http.NewResponseController(c.Response())
		_ = rc.SetReadDeadline(time.Now().Add(bulkTransferTime))
		_ = rc.SetWriteDeadline(time.Now().Add(bulkTransferTime))
		return next(c)
	}
}

func (s *Service) restore(c echo.Context) error {
	adv := c.QueryParam("advance")
	if adv == "" {
		return badRequest(`query parameter "advance" is required: how far to lift every high-water mark above the backup's (see README, backup and restore)`)
	}
	advance, err := strconv.ParseInt(adv, 10, 64)
	if err != nil || advance < 1 {
		return badRequest(fmt.Sprintf(`query parameter "advance" must be a positive integer, got %q`, adv))
	}
	body := http.MaxBytesReader(c.Response(), c.Request().Body, api.MaxBackupBytes)
	data, err := io.ReadAll(body)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return problem(http.StatusRequestEntityTooLarge, api.ProblemTooLarge, "backup too large",
				fmt.Sprintf("a backup may be at most %d bytes", api.MaxBackupBytes))
		}
		return badRequest("could not read the backup: " + err.Error())
	}
	ctx, cancel := s.ctx(c)
	defer cancel()
	if err := s.store.Restore(ctx, data, advance); err != nil {
		return s.storeError(c, err)
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Service) createSequence(c echo.Context) error {
	name := c.Param("name")
	if err := api.ValidateNewSequenceName(name); err != nil {
		return badRequest(err.Error())
	}
	var req api.CreateSequenceRequest
	if err := decodeBody(c, &req, true); err != nil {
		return err
	}
	settings := domain.SequenceSettings{Name: name, Start: api.DefaultStart, Max: api.DefaultMax}
	if req.Start != nil {
		settings.Start = *req.Start
	}
	if req.Max != nil {
		settings.Max = *req.Max
	}
	if err := api.ValidateBounds(settings.Start, settings.Max); err != nil {
		return badRequest(err.Error())
	}
	ctx, cancel := s.ctx(c)
	defer cancel()
	seq, created, err := s.store.CreateSequence(ctx, settings)
	if err != nil {
		return s.storeError(c, err)
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	return c.JSON(status, sequenceView(seq))
}

// raiseSequence lifts a sequence's high-water mark (issue #16): the tool for
// moving to ticketd from another generator while both still write.
func (s *Service) raiseSequence(c echo.Context) error {
	name := c.Param("name")
	if err := api.ValidateSequenceName(name); err != nil {
		return badRequest(err.Error())
	}
	var req api.RaiseSequenceRequest
	if err := decodeBody(c, &req, false); err != nil {
		return err
	}
	if req.AtLeast < 1 {
		return badRequest(fmt.Sprintf("at_least is required and must be at least 1, got %d", req.AtLeast))
	}
	ctx, cancel := s.ctx(c)
	defer cancel()
	res, err := s.store.RaiseSequence(ctx, name, req.AtLeast)
	if err != nil {
		return s.storeError(c, err)
	}
	return c.JSON(http.StatusOK, api.RaiseSequenceResult{Raised: res.Raised, Skipped: res.Skipped, Sequence: sequenceView(res.Sequence)})
}

func (s *Service) getSequence(c echo.Context) error {
	name := c.Param("name")
	if err := api.ValidateSequenceName(name); err != nil {
		return badRequest(err.Error())
	}
	ctx, cancel := s.ctx(c)
	defer cancel()
	seq, err := s.store.Sequence(ctx, name)
	if err != nil {
		return s.storeError(c, err)
	}
	return c.JSON(http.StatusOK, sequenceView(seq))
}

// listSequences answers a page: ?after=NAME (names strictly greater, in
// byte order; absent or empty: from the first) and ?limit=L (1 to
// api.MaxSequencePage, default api.DefaultSequencePage). "next" names the
// cursor of the following page when there is one.
func (s *Service) listSequences(c echo.Context) error {
	after, limit, err := sequencePageParams(c)
	if err != nil {
		return err
	}
	ctx, cancel := s.ctx(c)
	defer cancel()
	seqs, more, err := s.store.Sequences(ctx, after, limit)
	if err != nil {
		return s.storeError(c, err)
	}
	out := api.SequenceList{Sequences: make([]api.Sequence, 0, len(seqs))}
	for _, q := range seqs {
		out.Sequences = append(out.Sequences, sequenceView(q))
	}
	if more && len(seqs) > 0 {
		out.Next = seqs[len(seqs)-1].Name
	}
	return c.JSON(http.StatusOK, out)
}

// sequencePageParams reads GET /v1/sequences' query. A cursor is a name the
// server returned, so "after" must pass the naming rule: should api's rule
// ever be tightened, this check must keep accepting every name that exists.
func sequencePageParams(c echo.Context) (after string, limit int, err error) {
	if limit, err = pageLimit(c, api.DefaultSequencePage, api.MaxSequencePage); err != nil {
		return "", 0, err
	}
	if after = c.QueryParam("after"); after != "" {
		if err := api.ValidateSequenceName(after); err != nil {
			return "", 0, badRequest(fmt.Sprintf(`query parameter "after" must be a sequence name (the "next" of the previous page), got %q: %v`, after, err))
		}
	}
	return after, limit, nil
}

// pageLimit reads a listing's "limit" query parameter: def when absent,
// else an integer in [1, max].
func pageLimit(c echo.Context, def, max int) (int, error) {
	v := c.QueryParam("limit")
	if v == "" {
		return def, nil
	}
	l, err := strconv.Atoi(v)
	if err != nil || l < 1 || l > max {
		return 0, badRequest(fmt.Sprintf(`query parameter "limit" must be between 1 and %d, got %q`, max, v))
	}
	return l, nil
}

func sequenceView(s domain.Sequence) api.Sequence {
	v := api.Sequence{Name: s.Name, Start: s.Start, Max: s.Max, Remaining: s.Remaining}
	if !s.Exhausted {
		next := s.Next
		v.Next = &next
	}
	return v
}

func (s *Service) clusterStatus(c echo.Context) error {
	out, err := s.ownStatus(c)
	if err != nil {
		return s.storeError(c, err)
	}
	return c.JSON(http.StatusOK, out)
}

// ownStatus is this node's answer to GET /v1/cluster.
func (s *Service) ownStatus(c echo.Context) (api.ClusterStatus, error) {
	st, err := s.store.Status()
	if err != nil {
		return api.ClusterStatus{}, err
	}
	out := api.ClusterStatus{
		Node: st.Node, State: st.State, Leader: st.Leader, Term: st.Term,
		CommitIndex: st.CommitIndex, AppliedIndex: st.AppliedIndex,
		RaftTLS: st.RaftTLS, APITLS: c.Request().TLS != nil,
		Members:       make([]api.Member, 0, len(st.Members)),
		LastContactMs: -1,
		LeaderChanges: make([]api.LeaderChange, 0, len(st.LeaderChanges)),
	}
	if st.LastContact >= 0 {
		out.LastContactMs = st.LastContact.Milliseconds()
	}
	for _, m := range st.Members {
		out.Members = append(out.Members, api.Member(m))
	}
	for _, lc := range st.LeaderChanges {
		out.LeaderChanges = append(out.LeaderChanges, api.LeaderChange(lc))
	}
	select {
	case <-s.draining:
		st.NotReady = "node is shutting down"
	default:
	}
	out.Ready, out.NotReady, out.LagEntries = st.NotReady == "", st.NotReady, st.LagEntries
	out.Storage = api.NodeStorage{
		Healthy: st.Storage.Healthy, ErrorKind: st.Storage.ErrorKind, Error: st.Storage.Error,
		FailingForMs: st.Storage.FailingFor.Milliseconds(),
		FreeBytes:    st.Storage.FreeBytes, LogBytes: st.Storage.LogBytes, SnapshotBytes: st.Storage.SnapshotBytes,
	}
	return out, nil
}

func (s *Service) join(c echo.Context) error {
	req, err := s.memberRequest(c)
	if err != nil {
		return err
	}
	ctx, cancel := s.ctx(c)
	defer cancel()
	if err := s.store.Join(ctx, domain.Member{ID: req.ID, RaftAddr: req.RaftAddr, HTTPAddr: req.HTTPAddr, Voter: true}); err != nil {
		return s.storeError(c, err)
	}
	return c.JSON(http.StatusOK, api.Member{ID: req.ID, RaftAddr: req.RaftAddr, HTTPAddr: req.HTTPAddr, Voter: true})
}

func (s *Service) updateMember(c echo.Context) error {
	req, err := s.memberRequest(c)
	if err != nil {
		return err
	}
	if req.ID != c.Param("id") {
		return badRequest(fmt.Sprintf("field \"id\" (%q) differs from the id in the path (%q)", req.ID, c.Param("id")))
	}
	ctx, cancel := s.ctx(c)
	defer cancel()
	if err := s.store.UpdateMember(ctx, domain.Member{ID: req.ID, RaftAddr: req.RaftAddr, HTTPAddr: req.HTTPAddr, Voter: true}); err != nil {
		return s.storeError(c, err)
	}
	return c.JSON(http.StatusOK, api.Member{ID: req.ID, RaftAddr: req.RaftAddr, HTTPAddr: req.HTTPAddr, Voter: true})
}

func (s *Service) memberRequest(c echo.Context) (api.JoinRequest, error) {
	var req api.JoinRequest
	if err := decodeBody(c, &req, false); err != nil {
		return req, err
	}
	switch {
	case req.ID == "":
		return req, badRequest(`field "id" is required`)
	case req.RaftAddr == "":
		return req, badRequest(`field "raft_addr" is required`)
	case req.HTTPAddr == "":
		return req, badRequest(`field "http_addr" is required`)
	}
	if err := validateHostPort(req.RaftAddr); err != nil {
		return req, badRequest(fmt.Sprintf(`field "raft_addr": %v`, err))
	}
	if err := validateHostPort(req.HTTPAddr); err != nil {
		return req, badRequest(fmt.Sprintf(`field "http_addr": %v`, err))
	}
	return req, nil
}

func validateHostPort(addr string) error {
	u, err := url.Parse("//" + addr)
	if err != nil || u.Host != addr || u.Port() == "" || u.Hostname() == "" {
		return fmt.Errorf("%q is not host:port", addr)
	}
	// url.Parse lets through hosts no dialer takes ("]:1"); the address
	// is dialed with net, so net must be able to split it.
	if host, _, err := net.SplitHostPort(addr); err != nil || host == "" {
		return fmt.Errorf("%q is not host:port", addr)
	}
	if p, err := strconv.Atoi(u.Port()); err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("%q has no valid port", addr)
	}
	return nil
}

func (s *Service) remove(c echo.Context) error {
	id := c.Param("id")
	ctx, cancel := s.ctx(c)
	defer cancel()
	if err := s.store.Remove(ctx, id); err != nil {
		return s.storeError(c, err)
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Service) snapshot(c echo.Context) error {
	ctx, cancel := s.ctx(c)
	defer cancel()
	if err := s.store.Snapshot(ctx); err != nil {
		return s.storeError(c, err)
	}
	return c.NoContent(http.StatusNoContent)
}

// decodeBody decodes a JSON body strictly: unknown fields, trailing data and
// wrong types are 400s that name the problem, a body over api.MaxBodyBytes
// is a 413. With optional set, an empty body leaves v as it is.
func decodeBody(c echo.Context, v any, optional bool) error {
	r := c.Request()
	body := http.MaxBytesReader(c.Response(), r.Body, api.MaxBodyBytes)
	data, err := io.ReadAll(body)
	if err != nil {
		return bodyReadError(err)
	}
	return decodeJSONBody(data, v, optional)
}

// bodyReadError is the problem for a request body that could not be read.
func bodyReadError(err error) error {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return problem(http.StatusRequestEntityTooLarge, api.ProblemTooLarge, "body too large",
			fmt.Sprintf("request body exceeds %d bytes", api.MaxBodyBytes))
	}
	return badRequest("could not read the request body: " + err.Error())
}

// decodeJSONBody is decodeBody's decoding of a body already read.
func decodeJSONBody(data []byte, v any, optional bool) error {
	if len(data) == 0 {
		if optional {
			return nil
		}
		return badRequest("request body is empty; a JSON object is required")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badRequest("malformed JSON body: " + describeJSONError(err))
	}
	// More() misses a stray '}' or ']'; only EOF means nothing follows.
	if _, err := dec.Token(); err != io.EOF {
		return badRequest("malformed JSON body: data after the JSON object")
	}
	return nil
}

func describeJSONError(err error) string {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		if typeErr.Field != "" {
			return fmt.Sprintf("field %q must be %s, got %s", typeErr.Field, jsonKind(typeErr.Type.Kind().String()), typeErr.Value)
		}
		return fmt.Sprintf("body must be a JSON object, got %s", typeErr.Value)
	case errors.As(err, &syntaxErr):
		return fmt.Sprintf("%v (at byte %d)", syntaxErr, syntaxErr.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "body ends in the middle of a JSON value"
	}
	return err.Error()
}

func jsonKind(k string) string {
	switch k {
	case "int64", "int", "int32":
		return "an integer that fits a signed 64-bit value"
	case "string":
		return "a string"
	}
	return k
}
