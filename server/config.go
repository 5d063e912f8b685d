package server

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/auth"
	"github.com/ticketd/ticketd/cluster"
	"github.com/ticketd/ticketd/issuer"
	"github.com/ticketd/ticketd/metrics"
)

// Config configures a node.
type Config struct {
	Cluster cluster.Config
	Issuer  issuer.Config

	// HTTPAddr is the address the API listens on; HTTPAdvertise the
	// host:port other nodes and clients reach it at (HTTPAddr if empty).
	HTTPAddr      string
	HTTPAdvertise string
	// HTTPListener, if set, is used instead of listening on HTTPAddr.
	HTTPListener net.Listener

	// RESPAddr, if set, serves the Redis-protocol front (package
	// respapi) there, with the API's tokens and TLS; RESPListener, if set,
	// is used instead of listening on it. Neither: no front.
	RESPAddr     string
	RESPListener net.Listener
	// RESPMaxConns bounds the front's open connections (0: 10,000).
	RESPMaxConns int
	// Version is what the Redis-protocol front reports (HELLO, INFO).
	Version string

	// Join lists API URLs of existing members. At start the node asks the
	// cluster through them to have it in its configuration, and so joins
	// when it is in none, or in no longer than its own copy says (it was
	// removed while it was down): see membershipLoop. A node that
	// Cluster.InitialCluster does not name needs it.
	Join []string
	// Standby, if set, makes the node join as the cluster's
	// disaster-recovery standby (issue #34): a non-voting member that
	// issues no IDs until promoted.
	Standby *StandbySettings

	RequestTimeout time.Duration
	// Pprof serves Go's profiler under /debug/pprof/ (admin scope).
	Pprof bool

	// Tokens turns authentication on; nil is dev mode (no auth).
	Tokens *auth.Tokens
	// MetricsPublic serves /metrics without a token.
	MetricsPublic bool
	// Metrics receives the node's metrics and is served at /metrics; nil
	// means a new set.
	Metrics *metrics.Metrics
	// MaxInflight bounds requests in progress (429 beyond).
	MaxInflight int

	// APITLS, if set, serves the API over HTTPS with it. PeerTLS gives the
	// client side of one connection to another node's API (forwarding,
	// join, metadata): it must trust their certificates and, if they
	// require client certificates, present one. It is called per
	// connection, so reloaded certificate files take effect on the next.
	APITLS  *tls.Config
	PeerTLS func() *tls.Config
	// AuditInterval is how often the uniqueness probe checks this node's
	// replica of the allocation audit.
	AuditInterval time.Duration
	// MetadataInterval is how often a node checks that the replicated
	// metadata knows its API address.
	MetadataInterval time.Duration
	// HTTPReadTimeout bounds reading a whole request (headers and body),
	// HTTPWriteTimeout writing its answer, so that a slow or stalled
	// client cannot hold an in-flight slot. Backup and restore extend them
	// for their large bodies.
	HTTPReadTimeout  time.Duration
	HTTPWriteTimeout time.Duration
	// MaxReadyLag is how many committed entries a node may have yet to
	// apply and still answer /readyz 200: a node further behind than
	// that (replaying a backlog, or unable to append) is taken out of a
	// load balancer until it catches up.
	MaxReadyLag uint64
	// SnowflakeNamespaces are the namespaces whose worker-id lease this
	// node's Snowflake service takes at start; any other is taken on its
	// first request (POST /v1/namespaces/{name}/ids).
	SnowflakeNamespaces []string
	// WallClockOffset, if set, is how far this node's wall clock is from
	// time.Now (the fault suite's clock control; tests): the Snowflake
	// generators read their wall and monotonic clocks from one time.Now
	// and add it, so that the two halves of a reading never disagree by
	// the time between two reads. Without it, a Cluster.WallClock is read
	// by itself beside the monotonic clock.
	WallClockOffset func() time.Duration
	// SnowflakeLeaseWait is how long a Snowflake request waits for a lease
	// when this node holds none in the namespace (0: idgen's default).
	SnowflakeLeaseWait time.Duration
	// faultConfig holds the state machine's planted bugs in the
	// fault-injection build (faults.go, built with the ticketd_faults tag)
	// and nothing in any other build (nofaults.go).
	faultConfig
	// UnsafeHandler, if set, is served under /unsafe/ without
	// authentication: the fault-injection build's controls (its clock).
	UnsafeHandler http.Handler

	Logger *slog.Logger
}

// DefaultConfig returns production settings.
func DefaultConfig() Config {
	return Config{
		Cluster:          cluster.DefaultConfig(),
		Issuer:           issuer.DefaultConfig(),
		RequestTimeout:   10 * time.Second,
		MetadataInterval: time.Second,
		AuditInterval:    30 * time.Second,
		HTTPReadTimeout:  30 * time.Second,
		HTTPWriteTimeout: 60 * time.Second, // above a 30 s CPU profile
		// A healthy follower trails by a batch or two of entries; a
		// leader pre-commits blocks, so a few thousand entries are
		// minutes of reservations at most.
		MaxReadyLag: 4096,
	}
}

// Validate reports every setting that keeps a node from starting, all at
// once, before anything is opened or listened on. Start calls it; the binary
// calls it first so that a bad flag is a usage error.
func (c Config) Validate() error {
	var errs []error
	if c.HTTPListener == nil && c.HTTPAddr == "" {
		errs = append(errs, errors.New("HTTP address is empty"))
	}
	// The API address other nodes will be told, as far as it is known
	// before listening: a port of 0 is chosen then, the host is not.
	advertise := c.HTTPAdvertise
	switch {
	case advertise != "":
	case c.HTTPListener != nil:
		advertise = c.HTTPListener.Addr().String()
	default:
		advertise = c.HTTPAddr
	}
	if advertise != "" {
		if err := checkReachable(advertise); err != nil {
			errs = append(errs, err)
		}
	}
	cc := c.Cluster
	cc.HTTPAdvertise = advertise
	cc.WillJoin = len(c.Join) > 0
	if err := cc.Validate(); err != nil {
		errs = append(errs, err)
	}
	for _, u := range c.Join {
		if p, err := url.Parse(u); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			errs = append(errs, fmt.Errorf("join URL %q: want http://host:port or https://host:port", u))
		}
	}
	if c.RequestTimeout <= 0 {
		errs = append(errs, errors.New("request timeout must be positive"))
	}
	if c.AuditInterval <= 0 || c.MetadataInterval <= 0 {
		errs = append(errs, errors.New("audit and metadata intervals must be positive"))
	}
	if c.HTTPReadTimeout < 0 || c.HTTPWriteTimeout < 0 {
		errs = append(errs, errors.New("HTTP read and write timeouts must not be negative (0 is none)"))
	}
	if c.MaxInflight < 0 {
		errs = append(errs, errors.New("max in-flight requests must not be negative (0 is no limit)"))
	}
	if err := c.Issuer.Validate(); err != nil {
		errs = append(errs, err)
	}
	for _, ns := range c.SnowflakeNamespaces {
		if err := api.ValidateSequenceName(ns); err != nil {
			errs = append(errs, fmt.Errorf("snowflake namespace %q: %v", ns, err))
		}
	}
	if c.SnowflakeLeaseWait < 0 {
		errs = append(errs, errors.New("snowflake lease wait must not be negative"))
	}
	if sb := c.Standby; sb != nil {
		switch {
		case len(c.Join) == 0:
			errs = append(errs, errors.New("a standby joins an existing cluster: give --join"))
		case c.Cluster.Bootstrap || len(c.Cluster.InitialCluster) > 0:
			errs = append(errs, errors.New("a standby joins an existing cluster: it cannot bootstrap one or take a seed list (drop --bootstrap and --initial-cluster)"))
		case c.RESPAddr != "" || c.RESPListener != nil:
			errs = append(errs, errors.New("a standby issues no IDs: it serves no Redis-protocol front (drop --resp-addr)"))
		case len(c.SnowflakeNamespaces) > 0:
			errs = append(errs, errors.New("a standby issues no IDs: it serves no Snowflake namespaces (drop --snowflake-namespaces)"))
		}
		bound, timeout := sb.Bound, sb.Timeout
		if bound == 0 {
			bound = api.DefaultStandbyBound
		}
		if timeout == 0 {
			timeout = time.Duration(api.DefaultStandbyTimeoutMs) * time.Millisecond
		}
		if bound < api.MaxReserveCount {
			errs = append(errs, fmt.Errorf("standby bound %d: must be at least %d IDs (one reservation of the largest size)", bound, api.MaxReserveCount))
		}
		if timeout < 100*time.Millisecond || timeout > time.Hour {
			errs = append(errs, fmt.Errorf("standby timeout %s: must be between 100ms and 1h", timeout))
		}
	}
	return errors.Join(errs...)
}

// checkReachable refuses an API address other nodes could not dial: one
// that is not host:port, or whose host is empty or unspecified (0.0.0.0, ::).
func checkReachable(hostPort string) error {
	host, _, err := net.SplitHostPort(hostPort)
	if err != nil {
		return fmt.Errorf("HTTP address %q: %v", hostPort, err)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		return fmt.Errorf("HTTP address %s is not reachable by other nodes: set an advertise address", hostPort)
	}
	return nil
}

// StandbySettings are a standby's bound (IDs per sequence the leader may
// serve past what the standby stored; 0: the default) and timeout (how
// long it may make no progress before it is recorded out of sync; 0: the
// default).
type StandbySettings struct {
	Bound   int64
	Timeout time.Duration
}
