// Package client is the Go SDK of ticketd. It speaks the HTTP API and imports
// nothing of the server: only the wire types of package api.
//
// Client reserves ranges and manages sequences and membership. Any endpoint
// may be a follower (it forwards to the leader) or down: a call tries the
// endpoint that answered last, then the others.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ticketd/ticketd/api"
)

// Errors a call can return, usable with errors.Is. The *APIError that
// carries the server's problem details matches them too.
var (
	// ErrNotFound: the sequence (or member) does not exist.
	ErrNotFound = errors.New("ticketd: not found")
	// ErrExhausted: the sequence has fewer IDs left than asked for.
	ErrExhausted = errors.New("ticketd: sequence exhausted")
	// ErrConflict: the sequence exists with other settings, or a member
	// conflicts.
	ErrConflict = errors.New("ticketd: conflict")
	// ErrInvalidArgument: the request was refused as malformed.
	ErrInvalidArgument = errors.New("ticketd: invalid argument")
	// ErrUnavailable: no endpoint could serve the call.
	ErrUnavailable = errors.New("ticketd: unavailable")
)

// APIError is an error answer from the server.
type APIError struct {
	StatusCode int
	Problem    api.Problem
}

func (e *APIError) Error() string {
	if e.Problem.Detail != "" {
		return fmt.Sprintf("ticketd: %d %s: %s", e.StatusCode, e.Problem.Title, e.Problem.Detail)
	}
	return fmt.Sprintf("ticketd: %d %s", e.StatusCode, e.Problem.Title)
}

// Is maps the problem type to the package's sentinel errors.
func (e *APIError) Is(target error) bool {
	switch target {
	case ErrNotFound:
		return e.Problem.Type == api.ProblemNotFound || e.Problem.Type == api.ProblemMemberNotFound
	case ErrExhausted:
		return e.Problem.Type == api.ProblemExhausted
	case ErrConflict:
		return e.Problem.Type == api.ProblemConflict
	case ErrInvalidArgument:
		return e.StatusCode == http.StatusBadRequest || e.StatusCode == http.StatusRequestEntityTooLarge
	case ErrUnavailable:
		return e.StatusCode == http.StatusServiceUnavailable
	}
	return false
}

// Range is an inclusive range of IDs: First..Last.
type Range struct {
	First, Last int64
}

// Len is the number of IDs in r.
func (r Range) Len() int64 { return r.Last - r.First + 1 }

// Option configures a Client.
type Option func(*Client) error

// WithHTTPClient sets the HTTP client (for TLS settings, proxies, tracing).
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) error {
		if hc == nil {
			return errors.New("ticketd: nil HTTP client")
		}
		c.http = hc
		return nil
	}
}

// WithBearerToken sends token as "Authorization: Bearer <token>".
func WithBearerToken(token string) Option {
	return func(c *Client) error { c.token = token; return nil }
}

// WithTimeout bounds each HTTP attempt (default 5s).
func WithTimeout(d time.Duration) Option {
	return func(c *Client) error {
		if d <= 0 {
			return fmt.Errorf("ticketd: timeout must be positive, got %v", d)
		}
		c.attemptTimeout = d
		return nil
	}
}

// Client talks to a ticketd cluster. It is safe for concurrent use.
type Client struct {
	endpoints      []*url.URL
	http           *http.Client
	token          string
	attemptTimeout time.Duration
	preferred      atomic.Int64 // index of the endpoint that answered last
}

// New returns a client for the cluster reachable at endpoints (base URLs
// such as "http://10.0.0.1:8080").
func New(endpoints []string, opts ...Option) (*Client, error) {
	if len(endpoints) == 0 {
		return nil, fmt.Errorf("%w: no endpoints given", ErrInvalidArgument)
	}
	c := &Client{attemptTimeout: 5 * time.Second}
	for _, e := range endpoints {
		u, err := url.Parse(strings.TrimRight(e, "/"))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("%w: endpoint %q is not an http(s) URL with a host", ErrInvalidArgument, e)
		}
		c.endpoints = append(c.endpoints, u)
	}
	for _, o := range opts {
		if err := o(c); err != nil {
			return nil, err
		}
	}
	if c.http == nil {
		c.http = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 90 * time.Second}}
	}
	return c, nil
}

// Reserve reserves count consecutive IDs of a sequence.
func (c *Client) Reserve(ctx context.Context, sequence string, count int64) (Range, error) {
	if err := api.ValidateSequenceName(sequence); err != nil {
		return Range{}, fmt.Errorf("%w: %v", ErrInvalidArgument, err)
	}
	if err := api.ValidateCount(count); err != nil {
		return Range{}, fmt.Errorf("%w: %v", ErrInvalidArgument, err)
	}
	var r api.Range
	if err := c.do(ctx, http.MethodPost, "/v1/sequences/"+sequence+"/ranges", api.ReserveRequest{Count: count}, &r); err != nil {
		return Range{}, err
	}
	if r.Last-r.First+1 != count || r.First < 1 {
		return Range{}, fmt.Errorf("ticketd: server answered range %d..%d for %d IDs", r.First, r.Last, count)
	}
	return Range{First: r.First, Last: r.Last}, nil
}

// SequenceSettings are the optional settings of a new sequence; zero fields
// take the server's defaults (start 1, max 2^63-1).
type SequenceSettings struct {
	Start int64
	Max   int64
}

// CreateSequence creates a sequence, or confirms that it exists with the
// same settings (created is then false). Other settings give ErrConflict.
func (c *Client) CreateSequence(ctx context.Context, name string, s SequenceSettings) (info api.Sequence, created bool, err error) {
	if err := api.ValidateSequenceName(name); err != nil {
		return info, false, fmt.Errorf("%w: %v", ErrInvalidArgument, err)
	}
	var req api.CreateSequenceRequest
	if s.Start != 0 {
		req.Start = &s.Start
	}
	if s.Max != 0 {
		req.Max = &s.Max
	}
	status, err := c.doStatus(ctx, http.MethodPut, "/v1/sequences/"+name, req, &info)
	return info, status == http.StatusCreated, err
}

// SequenceInfo returns a sequence's settings and the lowest ID never handed
// out.
func (c *Client) SequenceInfo(ctx context.Context, name string) (api.Sequence, error) {
	var info api.Sequence
	if err := api.ValidateSequenceName(name); err != nil {
		return info, fmt.Errorf("%w: %v", ErrInvalidArgument, err)
	}
	err := c.do(ctx, http.MethodGet, "/v1/sequences/"+name, nil, &info)
	return info, err
}

// Sequences lists every sequence.
func (c *Client) Sequences(ctx context.Context) ([]api.Sequence, error) {
	var out api.SequenceList
	err := c.do(ctx, http.MethodGet, "/v1/sequences", nil, &out)
	return out.Sequences, err
}

// Cluster returns the first reachable endpoint's view of the cluster.
func (c *Client) Cluster(ctx context.Context) (api.ClusterStatus, error) {
	var st api.ClusterStatus
	err := c.do(ctx, http.MethodGet, "/v1/cluster", nil, &st)
	return st, err
}

// AddMember adds a voter to the cluster.
func (c *Client) AddMember(ctx context.Context, m api.JoinRequest) error {
	return c.do(ctx, http.MethodPost, "/v1/cluster/members", m, nil)
}

// RemoveMember removes a member from the cluster.
func (c *Client) RemoveMember(ctx context.Context, id string) error {
	if id == "" {
		return fmt.Errorf("%w: member id is empty", ErrInvalidArgument)
	}
	return c.do(ctx, http.MethodDelete, "/v1/cluster/members/"+url.PathEscape(id), nil, nil)
}

func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	_, err := c.doStatus(ctx, method, path, body, out)
	return err
}

// doStatus tries each endpoint once, starting with the one that answered
// last. Transport errors and 503s move on to the next endpoint; any other
// answer is final.
func (c *Client) doStatus(ctx context.Context, method, path string, body, out any) (int, error) {
	var payload []byte
	if body != nil {
		var err error
		if payload, err = json.Marshal(body); err != nil {
			return 0, fmt.Errorf("%w: %v", ErrInvalidArgument, err)
		}
	}
	start := int(c.preferred.Load())
	var errs []error
	for i := range c.endpoints {
		idx := (start + i) % len(c.endpoints)
		status, err := c.attempt(ctx, c.endpoints[idx], method, path, payload, out)
		if err == nil {
			c.preferred.Store(int64(idx))
			return status, nil
		}
		var apiErr *APIError
		if errors.As(err, &apiErr) && apiErr.StatusCode != http.StatusServiceUnavailable {
			c.preferred.Store(int64(idx))
			return status, err
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return 0, fmt.Errorf("%w: %w", ErrUnavailable, errors.Join(errs...))
}

func (c *Client) attempt(ctx context.Context, base *url.URL, method, path string, payload []byte, out any) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, c.attemptTimeout)
	defer cancel()
	var rd io.Reader
	if payload != nil {
		rd = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(ctx, method, base.String()+path, rd)
	if err != nil {
		return 0, err
	}
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", base.Host, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return resp.StatusCode, fmt.Errorf("%s: read answer: %w", base.Host, err)
	}
	if resp.StatusCode/100 != 2 {
		e := &APIError{StatusCode: resp.StatusCode}
		if json.Unmarshal(data, &e.Problem) != nil || e.Problem.Title == "" {
			e.Problem.Title = http.StatusText(resp.StatusCode)
			e.Problem.Detail = strings.TrimSpace(string(data))
		}
		return resp.StatusCode, e
	}
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s: decode answer: %w", base.Host, err)
		}
	}
	return resp.StatusCode, nil
}
