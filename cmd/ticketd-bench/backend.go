package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// backend is one system under test as the load generator and the failover
// probe see it: a one-time setup (create the sequence, key, table...) and a
// source of reservers, one per worker.
type backend interface {
	// setup prepares the system, retrying for at most timeout while it is
	// not ready yet (a cluster electing its first leader).
	setup(ctx context.Context, timeout time.Duration) error
	// newReserver returns the reserver of worker i. Dialing happens here,
	// before any clock starts.
	newReserver(ctx context.Context, i int) (reserver, error)
	// note is a caveat printed with the results ("" if none).
	note() string
	close()
}

// reserver performs one reservation of the configured count. One worker
// goroutine uses it at a time.
type reserver interface {
	// reserve returns the inclusive range received. retries counts extra
	// round trips the system needed (a compare-and-swap that lost a race);
	// they are part of the latency, not errors.
	reserve(ctx context.Context) (r idRange, retries int, err error)
	close()
}

// opError is a classified failure: kind goes into the error counts, backoff
// says whether the worker should pause before the next try (the system is
// unavailable or overloaded, not just refusing this one request).
type opError struct {
	kind    string
	backoff bool
	err     error
}

func (e *opError) Error() string {
	if e.err == nil {
		return e.kind
	}
	return e.kind + ": " + e.err.Error()
}

func (e *opError) Unwrap() error { return e.err }

// errKind classifies err for the error counts.
func errKind(err error) (kind string, backoff bool) {
	var oe *opError
	if errors.As(err, &oe) {
		return oe.kind, oe.backoff
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "timeout", true
	}
	return classifyErr(err), true
}

var kinds = []string{"http", "etcd", "redis", "resp", "postgres", "mysql"}

func validKind(k string) bool {
	for _, v := range kinds {
		if k == v {
			return true
		}
	}
	return k == ""
}

func kindOrHTTP(k string) string {
	if k == "" {
		return "http"
	}
	return k
}

// parseKindTargets parses --target for kind: URLs for http, host:port
// endpoints on a loopback address for the peers. The peers are only ever
// started by scripts/bench.sh on 127.0.0.1, so anything else is refused
// rather than load-tested by accident.
func parseKindTargets(kind, s string) ([]string, error) {
	if kindOrHTTP(kind) == "http" {
		return parseTargets(s)
	}
	var out []string
	for _, raw := range strings.Split(s, ",") {
		raw = strings.TrimSpace(raw)
		if raw == "" {
			continue
		}
		raw = strings.TrimPrefix(strings.TrimPrefix(raw, "http://"), "https://")
		host, port, err := net.SplitHostPort(raw)
		if err != nil {
			return nil, fmt.Errorf("target %q: want host:port: %w", raw, err)
		}
		if _, err := strconv.ParseUint(port, 10, 16); err != nil {
			return nil, fmt.Errorf("target %q: bad port", raw)
		}
		if !isLoopback(host) && !inAllowedNet(host) {
			return nil, fmt.Errorf("target %q: peers are benchmarked on loopback addresses only (or in --allow-net)", raw)
		}
		out = append(out, net.JoinHostPort(host, port))
	}
	if len(out) == 0 {
		return nil, errors.New("no targets given")
	}
	return out, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// allowedNet is load's --allow-net: a network off loopback whose addresses
// peer and resp targets may have, such as the node namespaces of
// jepsen/cmd/leasebench (10.231.79.0/24), where bench.sh's lease section
// runs ticketd and redis-server under a delay. Nil: loopback only.
var allowedNet *net.IPNet

func inAllowedNet(host string) bool {
	ip := net.ParseIP(host)
	return ip != nil && allowedNet != nil && allowedNet.Contains(ip)
}

// newBackend returns the backend of cfg.Kind; conns is the most workers
// that will run at once (pool sizes).
func newBackend(cfg loadConfig, conns int) (backend, error) {
	switch kindOrHTTP(cfg.Kind) {
	case "http":
		return newHTTPBackend(cfg, conns), nil
	case "etcd":
		return newEtcdBackend(cfg)
	case "redis":
		return newRedisBackend(cfg, conns)
	case "resp":
		return newRESPBackend(cfg, conns)
	case "postgres":
		return newPostgresBackend(cfg)
	case "mysql":
		return newMySQLBackend(cfg, conns)
	}
	return nil, fmt.Errorf("unknown kind %q", cfg.Kind)
}

// httpBackend drives ticketd or the baseline over HTTP/1.1 keep-alive.
// Worker i sends to target i%len(targets).
type httpBackend struct {
	cfg  loadConfig
	tr   *http.Transport
	body []byte
}

func newHTTPBackend(cfg loadConfig, conns int) *httpBackend {
	return &httpBackend{cfg: cfg, tr: newTransport(conns), body: []byte(fmt.Sprintf(`{"count":%d}`, cfg.Count))}
}

func (b *httpBackend) setup(ctx context.Context, timeout time.Duration) error {
	return ensureSequence(ctx, &http.Client{Transport: b.tr, Timeout: b.cfg.Timeout}, b.cfg.Targets, b.cfg.Sequence, timeout)
}

func (b *httpBackend) newReserver(_ context.Context, i int) (reserver, error) {
	// Each worker has its own Client but they share the transport: a
	// closed-loop worker holds at most one request in flight, so it keeps
	// reusing one keep-alive connection from the pool.
	r := &httpReserver{
		client: &http.Client{Transport: b.tr, Timeout: b.cfg.Timeout},
		url:    b.cfg.Targets[i%len(b.cfg.Targets)] + rangesPath(b.cfg.Sequence),
		body:   b.body,
	}
	if b.cfg.FollowLeader && len(b.cfg.Targets) > 1 {
		r.targets = map[string]string{}
		for _, t := range b.cfg.Targets {
			if u, err := url.Parse(t); err == nil {
				r.targets[u.Host] = t + rangesPath(b.cfg.Sequence)
			}
		}
	}
	r.buf.Grow(256)
	return r, nil
}

func (b *httpBackend) note() string {
	if b.cfg.FollowLeader && len(b.cfg.Targets) > 1 {
		return "workers move to the leader a follower names in its answer"
	}
	return ""
}
func (b *httpBackend) close() { b.tr.CloseIdleConnections() }

type httpReserver struct {
	client  *http.Client
	url     string
	body    []byte
	buf     bytes.Buffer
	targets map[string]string // host:port -> ranges URL; nil: never move
}

func (r *httpReserver) reserve(ctx context.Context) (idRange, int, error) {
	status, leader, err := postOnce(ctx, r.client, r.url, r.body, &r.buf)
	if u, ok := r.targets[leader]; ok && leader != "" {
		r.url = u
	}
	if err != nil {
		return idRange{}, 0, &opError{kind: classifyErr(err), backoff: true, err: err}
	}
	if status != http.StatusOK {
		return idRange{}, 0, &opError{kind: strconv.Itoa(status), backoff: status >= 500}
	}
	var rr rangeResponse
	if err := json.Unmarshal(r.buf.Bytes(), &rr); err != nil {
		return idRange{}, 0, &opError{kind: "decode", err: err}
	}
	return idRange{First: rr.First, Last: rr.Last}, 0, nil
}

func (r *httpReserver) close() {}
