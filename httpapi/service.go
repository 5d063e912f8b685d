// Package httpapi is ticketd's HTTP API (Echo v4) over a small Store
// interface. Every node answers every request: a node that is not the serving
// leader forwards sequence and membership requests to the leader, once.
// Errors are RFC 9457 problem details with a stable type.
package httpapi

import (
	"context"
	_ "embed" // openapi.json
	"io"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/http/pprof"
	"slices"
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
	v1.POST("/cluster/leader", s.transferLeader, limit, admin, lead)
	v1.GET("/backup", s.backup, bulk, limit, admin, lead)
	v1.POST("/restore", s.restore, bulk, limit, admin, lead)

	v1.PUT("/namespaces/:name", s.createNamespace, limit, admin, lead)
	v1.GET("/namespaces", s.listNamespaces, limit, reserve, lead)
	v1.GET("/namespaces/:name", s.getNamespace, limit, reserve, lead)
	v1.POST("/namespaces/:name/leases", s.acquireLease, limit, reserve, lead)
	// Made by this node's own generator: never forwarded (snowflakeids.go).
	v1.POST("/namespaces/:name/ids", s.snowflakeIDs, limit, reserve)
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
