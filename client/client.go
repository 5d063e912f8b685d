// Package client is the Go SDK of ticketd, a Raft-replicated ID server. It
// speaks ticketd's HTTP API and imports nothing of the server: only the wire
// types of package api.
//
// A Client makes single calls: Reserve one range of IDs, create and inspect
// sequences, read the cluster's status, add and remove members. A Sequence,
// made by Client.Sequence, hands out single IDs from a local cache of ranges
// that it refills in the background; its Next costs an atomic add while the
// cache holds IDs, and the cache is sized to ride out a cluster outage (10 s
// of the observed rate by default).
//
// # Endpoints, retries and errors
//
// Give New the base URLs of several nodes. Any of them may be down or a
// follower (a follower forwards to the leader, and names it in its answer).
// A call goes first to the endpoint that answered last, or to the leader a
// forwarding node named when that leader is one of the endpoints (so the
// client saves the hop from then on), then to the others; when a whole round
// over the endpoints fails it waits (exponential backoff with full jitter, at
// least as long as a Retry-After header asks) and goes round again, until it
// succeeds or its context ends. Only transport failures, timeouts, 429 and
// 500/502/503/504 are retried; any other 4xx is final.
//
// Errors match the sentinels ErrNotFound, ErrExhausted, ErrConflict,
// ErrInvalidArgument, ErrUnauthorized, ErrUnavailable and ErrClosed with
// errors.Is; a server answer is also an *APIError.
//
// # Unknown outcomes
//
// When a reservation times out or gets a 503, its outcome is unknown: the
// cluster may have reserved the range and lost the answer. Retrying is safe:
// ticketd may waste a range that way (a gap in the IDs), never hand the same
// ID out twice. Reserve and Sequence retry on their own.
package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
	"weak"

	"github.com/cenkalti/backoff/v5"

	"github.com/ticketd/ticketd/api"
)

// Defaults of the options.
const (
	DefaultAttemptTimeout = 5 * time.Second
	DefaultCallTimeout    = 30 * time.Second
	DefaultMinBackoff     = 50 * time.Millisecond
	DefaultMaxBackoff     = 2 * time.Second
)

// maxRetryAfter caps how long a Retry-After header can hold a call back, so
// that a misconfigured proxy cannot stall a client for hours.
const maxRetryAfter = 30 * time.Second

// maxAnswerBytes bounds how much of an answer is read.
const maxAnswerBytes = 1 << 20

// Range is an inclusive range of IDs: First..Last, each handed out once.
type Range struct {
	First, Last int64
}

// Len is the number of IDs in r.
func (r Range) Len() int64 { return r.Last - r.First + 1 }

// Contains reports whether id lies in r.
func (r Range) Contains(id int64) bool { return id >= r.First && id <= r.Last }

// All yields the IDs of r in increasing order.
func (r Range) All() iter.Seq[int64] {
	return func(yield func(int64) bool) {
		for id := r.First; id <= r.Last && id >= r.First; id++ {
			if !yield(id) {
				return
			}
		}
	}
}

// Option configures a Client; pass them to New.
type Option func(*config) error

type config struct {
	httpClient     *http.Client
	tls            *tls.Config
	token          string
	tokenFunc      func(context.Context) (string, error)
	attemptTimeout time.Duration
	callTimeout    time.Duration
	minBackoff     time.Duration
	maxBackoff     time.Duration
	log            *slog.Logger
}

// WithHTTPClient makes the client send its requests through hc (for
// proxies, tracing or your own transport). Close does not close hc's idle
// connections. It cannot be combined with WithTLSConfig: configure TLS in
// hc's transport instead.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *config) error {
		if hc == nil {
			return invalidf("WithHTTPClient: nil *http.Client")
		}
		c.httpClient = hc
		return nil
	}
}

// WithTLSConfig sets the TLS configuration of the client's own transport,
// for https endpoints (private CAs, client certificates).
func WithTLSConfig(cfg *tls.Config) Option {
	return func(c *config) error {
		if cfg == nil {
			return invalidf("WithTLSConfig: nil *tls.Config")
		}
		c.tls = cfg.Clone()
		return nil
	}
}

// WithBearerToken sends "Authorization: Bearer <token>" with every request.
func WithBearerToken(token string) Option {
	return func(c *config) error {
		if err := checkToken(token); err != nil {
			return invalidf("WithBearerToken: %v", err)
		}
		c.token = token
		return nil
	}
}

// WithBearerTokenFunc sends "Authorization: Bearer <token>" with every
// request, asking token for it each time, so that a token that rotates (a
// file a secret manager rewrites, a vault's lease) is followed without
// making the Client again. token must be safe for concurrent use and
// quick: it runs before every attempt, within the attempt's timeout (ctx).
// An error, or an answer that cannot be a token (empty, not visible
// ASCII), fails that attempt like a node that did not answer: it is
// retried with backoff, since a secret being rewritten or a vault briefly
// down is usually over soon, and a call that never gets a token ends with
// ErrUnavailable wrapping the last such failure. Exclusive with
// WithBearerToken.
func WithBearerTokenFunc(token func(ctx context.Context) (string, error)) Option {
	return func(c *config) error {
		if token == nil {
			return invalidf("WithBearerTokenFunc: nil function")
		}
		c.tokenFunc = token
		return nil
	}
}

// checkToken refuses what cannot go in an Authorization header. Its error
// is plain: a token function's bad answer is a failed attempt, not the
// caller's invalid argument.
func checkToken(token string) error {
	if token == "" {
		return errors.New("empty token")
	}
	for i := 0; i < len(token); i++ {
		if token[i] < 0x21 || token[i] > 0x7e {
			return fmt.Errorf("the token has byte %#x at %d; only visible ASCII is allowed", token[i], i)
		}
	}
	return nil
}

// WithTimeout bounds each HTTP attempt, one endpoint once (default
// DefaultAttemptTimeout). An attempt that times out is retried like any
// other failure.
func WithTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return invalidf("WithTimeout: the attempt timeout must be positive, got %v", d)
		}
		c.attemptTimeout = d
		return nil
	}
}

// WithCallTimeout bounds a whole call, every attempt and backoff included,
// when the caller's context has no earlier deadline (default
// DefaultCallTimeout). Zero means the context alone bounds a call. It also
// bounds how long Sequence.Next waits when the cache is empty; it does not
// bound a Sequence's background refills, which retry until they succeed or
// the Client is closed.
func WithCallTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return invalidf("WithCallTimeout: negative timeout %v", d)
		}
		c.callTimeout = d
		return nil
	}
}

// WithBackoff sets the waits between rounds over the endpoints: the k-th
// wait is drawn uniformly from [0, min(max, min·2^(k-1))] (full jitter), and
// is at least what a Retry-After header asked for (capped at 30 s).
// Defaults: DefaultMinBackoff, DefaultMaxBackoff.
func WithBackoff(min, max time.Duration) Option {
	return func(c *config) error {
		if min <= 0 || max < min {
			return invalidf("WithBackoff: want 0 < min <= max, got min %v, max %v", min, max)
		}
		c.minBackoff, c.maxBackoff = min, max
		return nil
	}
}

// WithLogger sets where the client logs: retries at Debug, a Sequence's
// refill failures at Warn and its recoveries at Info. By default it logs
// nothing.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return invalidf("WithLogger: nil *slog.Logger")
		}
		c.log = l
		return nil
	}
}

type endpoint struct {
	base string // "http://host:port", no trailing slash
	host string // "host:port" of base, as a node names the leader
}

// Client talks to a ticketd cluster. It is safe for concurrent use; make
// one per process and share it. Close it when done: it stops the
// background refills of its Sequences.
type Client struct {
	endpoints      []endpoint
	http           *http.Client
	ownTransport   *http.Transport                       // nil when the caller gave the HTTP client
	auth           string                                // Authorization header value, or ""
	tokenFunc      func(context.Context) (string, error) // asked for the token before each attempt, or nil
	attemptTimeout time.Duration
	callTimeout    time.Duration
	minBackoff     time.Duration
	maxBackoff     time.Duration
	log            *slog.Logger

	preferred atomic.Int64 // index of the endpoint that answered last

	// ctx is the context of background work; cancelled by Close.
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	closed bool
	// seqs are the Sequences to close with the client, held weakly: a
	// Sequence nobody references is dropped from it by a cleanup.
	seqs map[weak.Pointer[Sequence]]struct{}
	wg   sync.WaitGroup // background goroutines
}

// New returns a client for the cluster whose nodes answer at endpoints:
// base URLs such as "http://10.0.0.1:8080" or "https://ticketd-1:8443".
// It sends nothing: a cluster that is down does not make New fail.
func New(endpoints []string, opts ...Option) (*Client, error) {
	if len(endpoints) == 0 {
		return nil, invalidf("no endpoints given; pass the base URLs of one or more nodes, such as http://127.0.0.1:8080")
	}
	cfg := config{
		attemptTimeout: DefaultAttemptTimeout,
		callTimeout:    DefaultCallTimeout,
		minBackoff:     DefaultMinBackoff,
		maxBackoff:     DefaultMaxBackoff,
	}
	for i, o := range opts {
		if o == nil {
			return nil, invalidf("option %d is nil", i)
		}
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	if cfg.token != "" && cfg.tokenFunc != nil {
		return nil, invalidf("WithBearerToken and WithBearerTokenFunc are exclusive: give the token one way")
	}
	if cfg.httpClient != nil && cfg.tls != nil {
		return nil, invalidf("WithHTTPClient and WithTLSConfig are exclusive: set TLS in your HTTP client's transport")
	}
	c := &Client{
		attemptTimeout: cfg.attemptTimeout,
		callTimeout:    cfg.callTimeout,
		minBackoff:     cfg.minBackoff,
		maxBackoff:     cfg.maxBackoff,
		log:            cfg.log,
		tokenFunc:      cfg.tokenFunc,
		seqs:           map[weak.Pointer[Sequence]]struct{}{},
	}
	seen := map[string]bool{}
	for _, e := range endpoints {
		base, err := parseEndpoint(e)
		if err != nil {
			return nil, err
		}
		if !seen[base] {
			seen[base] = true
			c.endpoints = append(c.endpoints, endpoint{base: base, host: base[strings.Index(base, "://")+3:]})
		}
	}
	if cfg.token != "" {
		c.auth = "Bearer " + cfg.token
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	c.http = cfg.httpClient
	if c.http == nil {
		// http.DefaultTransport's settings, with more idle connections
		// per node.
		c.ownTransport = &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          100,
			MaxIdleConnsPerHost:   64,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ExpectContinueTimeout: time.Second,
			TLSClientConfig:       cfg.tls,
		}
		c.http = &http.Client{Transport: c.ownTransport}
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	return c, nil
}

func parseEndpoint(e string) (string, error) {
	u, err := url.Parse(strings.TrimRight(strings.TrimSpace(e), "/"))
	switch {
	case err != nil:
		return "", invalidf("endpoint %q is not a URL: %v", e, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return "", invalidf("endpoint %q: want an http:// or https:// base URL such as http://127.0.0.1:8080", e)
	case u.Host == "" || u.Hostname() == "":
		return "", invalidf("endpoint %q has no host", e)
	case u.User != nil, u.RawQuery != "", u.Fragment != "", u.Path != "":
		return "", invalidf("endpoint %q: want only scheme://host[:port], without path, query or user info", e)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return "", invalidf("endpoint %q has an invalid port", e)
		}
	}
	return u.Scheme + "://" + u.Host, nil
}

// Close stops the client: it cancels the background refills of its
// Sequences and waits until every background goroutine has returned, then
// closes the idle connections of the transport it created. Calls made after
// Close return ErrClosed, and so do the Sequences once their in-progress
// call ends. Close is idempotent and safe to call concurrently.
func (c *Client) Close() error {
	if c == nil || c.cancel == nil {
		return nil
	}
	c.mu.Lock()
	first := !c.closed
	c.closed = true
	seqs := c.seqs
	c.seqs = nil
	c.mu.Unlock()
	if first {
		c.cancel()
		for wp := range seqs {
			if s := wp.Value(); s != nil {
				s.close()
			}
		}
	}
	c.wg.Wait()
	if c.ownTransport != nil {
		c.ownTransport.CloseIdleConnections()
	}
	return nil
}

// register adds s to the Sequences that Close closes; ErrClosed if the
// client is closed already.
func (c *Client) register(s *Sequence) error {
	wp := weak.Make(s)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	c.seqs[wp] = struct{}{}
	runtime.AddCleanup(s, func(wp weak.Pointer[Sequence]) {
		c.mu.Lock()
		delete(c.seqs, wp)
		c.mu.Unlock()
	}, wp)
	return nil
}

// goBackground runs f on a goroutine that Close waits for; it reports false
// (and runs nothing) once the client is closed.
func (c *Client) goBackground(f func()) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		f()
	}()
	return true
}

// usable checks the receiver and the context of a call.
func (c *Client) usable(ctx context.Context) error {
	switch {
	case c == nil || c.ctx == nil:
		return invalidf("the Client is nil or was not made by client.New")
	case ctx == nil:
		return invalidf("nil context")
	case c.ctx.Err() != nil:
		return ErrClosed
	}
	return nil
}

// Reserve reserves count consecutive IDs of a sequence (1 <= count <=
// api.MaxReserveCount), retrying until it succeeds or ctx ends.
//
// A failed Reserve may still have consumed a range on the server (see
// "Unknown outcomes" in the package documentation); calling it again is
// safe.
func (c *Client) Reserve(ctx context.Context, sequence string, count int64) (Range, error) {
	if err := c.usable(ctx); err != nil {
		return Range{}, err
	}
	if err := api.ValidateSequenceName(sequence); err != nil {
		return Range{}, fmt.Errorf("%w: %v", ErrInvalidArgument, err)
	}
	if err := api.ValidateCount(count); err != nil {
		return Range{}, fmt.Errorf("%w: %v", ErrInvalidArgument, err)
	}
	ctx, cancel := c.withCallTimeout(ctx)
	defer cancel()
	return c.reserve(ctx, sequence, count, nil)
}

// reserve is Reserve without checks or call timeout; onFailure, if not nil,
// sees every retried failure.
func (c *Client) reserve(ctx context.Context, sequence string, count int64, onFailure func(error)) (Range, error) {
	var r api.Range
	body, _ := json.Marshal(api.ReserveRequest{Count: count})
	if _, err := c.roundTrip(ctx, http.MethodPost, "/v1/sequences/"+api.PathSegment(sequence)+"/ranges", body, &r, onFailure); err != nil {
		return Range{}, err
	}
	if r.Sequence != sequence || r.First < 1 || r.Last < r.First || r.Last-r.First+1 != count {
		return Range{}, fmt.Errorf("ticketd: the server answered range %d..%d of %q for %d IDs of %q", r.First, r.Last, r.Sequence, count, sequence)
	}
	return Range{First: r.First, Last: r.Last}, nil
}

// SequenceSettings are the settings of a new sequence. A zero field takes
// the server's default: Start api.DefaultStart (1), Max api.DefaultMax
// (2^63-1).
type SequenceSettings struct {
	Start int64
	Max   int64
}

// CreateSequence creates a sequence, or confirms that it already exists with
// the same settings (created is then false). A sequence that exists with
// other settings gives ErrConflict. It is idempotent, so it is retried like
// every call. Names "." and ".." are refused (ErrInvalidArgument) before
// anything is sent: see api.ValidateNewSequenceName.
func (c *Client) CreateSequence(ctx context.Context, name string, s SequenceSettings) (info api.Sequence, created bool, err error) {
	if err := c.usable(ctx); err != nil {
		return info, false, err
	}
	if err := api.ValidateNewSequenceName(name); err != nil {
		return info, false, fmt.Errorf("%w: %v", ErrInvalidArgument, err)
	}
	if s.Start < 0 || s.Max < 0 {
		return info, false, invalidf("start (%d) and max (%d) must not be negative; zero takes the default", s.Start, s.Max)
	}
	var req api.CreateSequenceRequest
	start, maxID := api.DefaultStart, api.DefaultMax
	if s.Start != 0 {
		start, req.Start = s.Start, &s.Start
	}
	if s.Max != 0 {
		maxID, req.Max = s.Max, &s.Max
	}
	if err := api.ValidateBounds(start, maxID); err != nil {
		return info, false, fmt.Errorf("%w: %v", ErrInvalidArgument, err)
	}
	body, _ := json.Marshal(req)
	ctx, cancel := c.withCallTimeout(ctx)
	defer cancel()
	status, err := c.roundTrip(ctx, http.MethodPut, "/v1/sequences/"+api.PathSegment(name), body, &info, nil)
	return info, status == http.StatusCreated, err
}

// SequenceInfo returns a sequence's settings, the lowest ID never handed to
// any leader (nil once exhausted) and how many IDs remain.
func (c *Client) SequenceInfo(ctx context.Context, name string) (api.Sequence, error) {
	var info api.Sequence
	if err := c.usable(ctx); err != nil {
		return info, err
	}
	if err := api.ValidateSequenceName(name); err != nil {
		return info, fmt.Errorf("%w: %v", ErrInvalidArgument, err)
	}
	ctx, cancel := c.withCallTimeout(ctx)
	defer cancel()
	_, err := c.roundTrip(ctx, http.MethodGet, "/v1/sequences/"+api.PathSegment(name), nil, &info, nil)
	return info, err
}

// Sequences lists every sequence, in byte order of names, walking the pages
// of GET /v1/sequences (api.MaxSequencePage at a time, each request with its
// own call timeout). Sequences created while it walks are listed if their
// names come after the page being read. To hold less than the whole list,
// use SequencesPage.
func (c *Client) Sequences(ctx context.Context) ([]api.Sequence, error) {
	var all []api.Sequence
	after := ""
	for {
		page, err := c.SequencesPage(ctx, after, api.MaxSequencePage)
		if err != nil {
			return nil, err
		}
		all = append(all, page.Sequences...)
		if page.Next == "" {
			return all, nil
		}
		if page.Next <= after {
			// A loop, not a page: never ask for the same page again.
			return nil, fmt.Errorf("ticketd: the server's cursor does not advance: next %q after %q", page.Next, after)
		}
		after = page.Next
	}
}

// SequencesPage lists up to limit sequences whose names are strictly greater
// than after ("" for the first page), in byte order of names. The answer's
// Next is the after of the following page, "" when no more follow. A limit
// of 0 takes the server's default (api.DefaultSequencePage); one below 0 or
// above api.MaxSequencePage, or an after that is no sequence name, is
// ErrInvalidArgument.
func (c *Client) SequencesPage(ctx context.Context, after string, limit int) (api.SequenceList, error) {
	var out api.SequenceList
	if err := c.usable(ctx); err != nil {
		return out, err
	}
	if limit < 0 || limit > api.MaxSequencePage {
		return out, fmt.Errorf("%w: limit must be between 1 and %d (0 for the default), got %d", ErrInvalidArgument, api.MaxSequencePage, limit)
	}
	q := url.Values{}
	if after != "" {
		if err := api.ValidateSequenceName(after); err != nil {
			return out, fmt.Errorf("%w: after: %v", ErrInvalidArgument, err)
		}
		q.Set("after", after)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	path := "/v1/sequences"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	ctx, cancel := c.withCallTimeout(ctx)
	defer cancel()
	_, err := c.roundTrip(ctx, http.MethodGet, path, nil, &out, nil)
	return out, err
}

// Cluster returns the cluster's status as the first node that answers sees
// it (the node that answered last is asked first).
func (c *Client) Cluster(ctx context.Context) (api.ClusterStatus, error) {
	var st api.ClusterStatus
	if err := c.usable(ctx); err != nil {
		return st, err
	}
	ctx, cancel := c.withCallTimeout(ctx)
	defer cancel()
	_, err := c.roundTrip(ctx, http.MethodGet, "/v1/cluster", nil, &st, nil)
	return st, err
}

// AddMember adds a voter to the cluster. If an attempt's answer is lost and
// the retry finds the member already added with other addresses, the call
// returns ErrConflict.
func (c *Client) AddMember(ctx context.Context, m api.JoinRequest) error {
	if err := c.usable(ctx); err != nil {
		return err
	}
	if m.ID == "" || m.RaftAddr == "" || m.HTTPAddr == "" {
		return invalidf("AddMember needs ID, RaftAddr and HTTPAddr, got %+v", m)
	}
	body, _ := json.Marshal(m)
	ctx, cancel := c.withCallTimeout(ctx)
	defer cancel()
	_, err := c.roundTrip(ctx, http.MethodPost, "/v1/cluster/members", body, nil, nil)
	return err
}

// RemoveMember removes a member from the cluster. If an attempt's answer is
// lost and the retry finds the member gone, the call returns ErrNotFound.
func (c *Client) RemoveMember(ctx context.Context, id string) error {
	if err := c.usable(ctx); err != nil {
		return err
	}
	if id == "" {
		return invalidf("RemoveMember: empty member id")
	}
	ctx, cancel := c.withCallTimeout(ctx)
	defer cancel()
	_, err := c.roundTrip(ctx, http.MethodDelete, "/v1/cluster/members/"+url.PathEscape(id), nil, nil, nil)
	return err
}

func (c *Client) withCallTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if c.callTimeout > 0 {
		return context.WithTimeout(ctx, c.callTimeout)
	}
	return ctx, func() {}
}

func (c *Client) newBackoff() *backoff.ExponentialBackOff {
	// With RandomizationFactor 1 the library draws uniformly from
	// [0, 2·interval]: full jitter over [0, min(max, min·2^(k-1))] for the
	// k-th wait when the interval starts at min/2 and is capped at max/2.
	b := &backoff.ExponentialBackOff{
		InitialInterval:     c.minBackoff / 2,
		RandomizationFactor: 1,
		Multiplier:          2,
		MaxInterval:         c.maxBackoff / 2,
	}
	b.Reset()
	return b
}

// roundTrip sends a request until an endpoint serves it, a final answer
// comes, or ctx ends. Each round tries every endpoint once, starting with
// the one that answered last; between rounds it waits with backoff (and at
// least any Retry-After). It returns the status of the answer.
func (c *Client) roundTrip(ctx context.Context, method, path string, body []byte, out any, onFailure func(error)) (int, error) {
	var bo *backoff.ExponentialBackOff
	var last error
	for round := 1; ; round++ {
		var retryAfter time.Duration
		start := int(c.preferred.Load())
		for i := range c.endpoints {
			idx := (start + i) % len(c.endpoints)
			status, ra, err := c.attempt(ctx, c.endpoints[idx], method, path, body, out)
			if err == nil {
				c.preferred.Store(int64(c.leaderOr(idx, ra)))
				return status, nil
			}
			var apiErr *APIError
			if errors.As(err, &apiErr) && !apiErr.retryable() {
				c.preferred.Store(int64(c.leaderOr(idx, ra)))
				return status, err
			}
			var fatal *fatalError
			if errors.As(err, &fatal) {
				return status, fatal.err
			}
			if ctx.Err() != nil {
				break // this failure is the context's doing
			}
			last = err
			retryAfter = max(retryAfter, ra.retryAfter)
			if onFailure != nil {
				onFailure(err)
			}
		}
		if ctx.Err() != nil {
			return 0, c.ended(ctx, last)
		}
		if bo == nil {
			bo = c.newBackoff()
		}
		wait := max(bo.NextBackOff(), min(retryAfter, maxRetryAfter))
		c.log.Debug("ticketd: no endpoint could serve; retrying", "method", method, "path", path,
			"round", round, "wait", wait, "err", last)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return 0, c.ended(ctx, last)
		case <-c.ctx.Done():
			t.Stop()
			return 0, ErrClosed
		}
	}
}

// leaderOr is the endpoint to prefer after endpoint idx answered: the leader
// the answer named (api.LeaderHeader, set when idx forwarded the call) if it
// is one of the endpoints, so the next call saves the hop; else idx. A name
// that is none of the endpoints is ignored: the client never sends to an
// address it was not given.
func (c *Client) leaderOr(idx int, a answerMeta) int {
	if a.leader == "" {
		return idx
	}
	for i, ep := range c.endpoints {
		if ep.host == a.leader {
			return i
		}
	}
	return idx
}

// answerMeta is what an attempt learned besides the answer itself.
type answerMeta struct {
	retryAfter time.Duration // what a Retry-After header asked for
	leader     string        // the leader a forwarding node named
}

// ended is the error of a call whose context ended.
func (c *Client) ended(ctx context.Context, last error) error {
	if c.ctx.Err() != nil && errors.Is(context.Cause(ctx), context.Canceled) {
		return ErrClosed
	}
	return unavailableError(ctx, last)
}

// fatalError marks a failure that no retry can fix (a request that cannot
// be built, an answer that cannot be decoded).
type fatalError struct{ err error }

func (e *fatalError) Error() string { return e.err.Error() }

// attempt sends the request to one endpoint once. It returns the status,
// what the answer's headers said (Retry-After, the leader), and an error: an
// *APIError for a non-2xx answer, a *fatalError for one no retry can fix,
// anything else for a transport failure.
func (c *Client) attempt(ctx context.Context, ep endpoint, method, path string, body []byte, out any) (int, answerMeta, error) {
	ctx, cancel := context.WithTimeout(ctx, c.attemptTimeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, ep.base+path, rd)
	if err != nil {
		return 0, answerMeta{}, &fatalError{fmt.Errorf("%w: %v", ErrInvalidArgument, err)}
	}
	req.Header.Set("Accept", "application/json, application/problem+json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.auth != "" {
		req.Header.Set("Authorization", c.auth)
	}
	if c.tokenFunc != nil {
		// A failure here is retried like a transport failure: see
		// WithBearerTokenFunc.
		tok, err := c.tokenFunc(ctx)
		if err == nil {
			err = checkToken(tok)
		}
		if err != nil {
			return 0, answerMeta{}, fmt.Errorf("%s %s%s: the bearer token function: %w", method, ep.base, path, err)
		}
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, answerMeta{}, fmt.Errorf("%s %s%s: %w", method, ep.base, path, err)
	}
	defer resp.Body.Close()
	meta := answerMeta{leader: resp.Header.Get(api.LeaderHeader)}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return resp.StatusCode, answerMeta{}, fmt.Errorf("%s %s%s: reading the answer: %w", method, ep.base, path, err)
	}
	if resp.StatusCode/100 != 2 {
		e := &APIError{Endpoint: ep.base, StatusCode: resp.StatusCode, Problem: problemOf(resp.StatusCode, data)}
		meta.retryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
		return resp.StatusCode, meta, e
	}
	if out != nil {
		// Every answer with a body is a JSON object: an empty one (or
		// null) would leave out as zero values, a bogus answer.
		if t := bytes.TrimSpace(data); len(t) == 0 || string(t) == "null" {
			return resp.StatusCode, meta, &fatalError{fmt.Errorf("ticketd: %s answered %s %s with %d and no body, where a JSON object was expected",
				ep.base, method, path, resp.StatusCode)}
		}
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, meta, &fatalError{fmt.Errorf("ticketd: %s answered %s %s with a body that is not the expected JSON: %v",
				ep.base, method, path, err)}
		}
	}
	return resp.StatusCode, meta, nil
}

// problemOf reads the problem details of a non-2xx answer. Every member of
// a problem document is optional (RFC 9457), and each is read on its own,
// by its exact name: a document with a type, title or detail keeps them as
// they came, whatever its other members hold, with the status's text for a
// missing title. Any other body (a proxy's HTML page, plain text) becomes
// the detail, cut to 200 bytes.
func problemOf(status int, data []byte) api.Problem {
	title := http.StatusText(status)
	if title == "" {
		title = "HTTP " + strconv.Itoa(status)
	}
	var p api.Problem
	var m map[string]json.RawMessage
	if json.Unmarshal(data, &m) == nil {
		str := func(k string) string {
			var s string
			_ = json.Unmarshal(m[k], &s) // absent or not a string: ""
			return s
		}
		p = api.Problem{Type: str("type"), Title: str("title"), Detail: str("detail"), Leader: str("leader")}
		_ = json.Unmarshal(m["status"], &p.Status)
		// A worker-unavailable problem's own members (issue #16).
		p.Holder, p.State, p.EndReason = str("holder"), str("state"), str("end_reason")
		var w int64
		if raw := m["worker_id"]; len(raw) > 0 && json.Unmarshal(raw, &w) == nil && string(raw) != "null" {
			p.WorkerID = &w
		}
		_ = json.Unmarshal(m["earliest_free_ms"], &p.EarliestFreeMs)
		// The Snowflake service's (issue #32).
		p.Namespace, p.Node = str("namespace"), str("node")
		_ = json.Unmarshal(m["clock_behind_ms"], &p.ClockBehindMs)
	}
	if p.Type != "" || p.Title != "" || p.Detail != "" {
		if p.Title == "" {
			p.Title = title
		}
		return p
	}
	p = api.Problem{Title: title, Status: status, Detail: strings.TrimSpace(string(data))}
	if len(p.Detail) > 200 {
		cut := 200
		for cut > 0 && !utf8.RuneStart(p.Detail[cut]) {
			cut-- // not inside a UTF-8 sequence
		}
		p.Detail = p.Detail[:cut] + "..."
	}
	return p
}

// parseRetryAfter reads a Retry-After header: delay-seconds or an HTTP date.
// Anything else, or a time in the past, is zero.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(min(s, int64(maxRetryAfter/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return min(t.Sub(now), maxRetryAfter)
	}
	return 0
}
