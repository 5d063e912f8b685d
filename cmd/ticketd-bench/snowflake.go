package main

// load --snowflake NS: server-made Snowflake IDs (issue #32), count IDs per
// request, over HTTP (POST /v1/namespaces/{NS}/ids, ticketd or the
// baseline) or ticketd's Redis-protocol front (--kind resp:
// TICKETD.SNOWFLAKE NS count -> array of integers). Every node answers
// from its own generator, so worker i simply sends to target i%len: nothing
// is forwarded and there is no leader to follow.
//
// The answers are checked as they arrive, without keeping every ID (an
// answer of 100 at 20k answers/s would be 2 M IDs/s): within an answer the
// IDs must number count, strictly increase and all carry the answer's
// worker id in their worker bits. Across answers, an answer is kept as its
// maximal runs of consecutive IDs, each an idRange: a run holds every
// integer of its interval, so two runs overlap exactly when they share an
// ID, and the load generator's range check over all runs of the run is an
// exact duplicate check in a few ranges per answer. (The answers' own
// [first, last] would not do: a node's generator takes what the current
// tick has left under its lock and the rest in the next tick, so two
// answers made at once interleave across a tick without any ID twice.)
// A violation inside an answer is counted as an error of its own kind (a
// correctness problem in the report), a shared ID as the range check's
// overlap.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/ticketd/ticketd/api"
)

// Error kinds of an answer that breaks the Snowflake promises.
const (
	sfErrCount     = "sf-wrong-count"
	sfErrOrder     = "sf-not-increasing"
	sfErrWorker    = "sf-worker-bits"
	sfErrNegative  = "sf-negative"
	sfErrWorkerMix = "sf-workers-mixed"
)

// rangesReserver answers a request with several ranges (appended to dst):
// a Snowflake answer's runs of consecutive IDs. On error dst is returned
// as it came.
type rangesReserver interface {
	reserver
	reserveRanges(ctx context.Context, dst []idRange) ([]idRange, int, error)
}

// snowflakeLayout is what the checks need of the namespace.
type snowflakeLayout struct {
	WorkerBits   uint8 `json:"worker_bits"`
	SequenceBits uint8 `json:"sequence_bits"`
}

// worker is the worker field of id.
func (l snowflakeLayout) worker(id int64) int64 {
	return (id >> l.SequenceBits) & (int64(1)<<l.WorkerBits - 1)
}

// snowflakeIDsPath is the path of POST .../ids for namespace ns.
func snowflakeIDsPath(ns string) string {
	return "/v1/namespaces/" + url.PathEscape(ns) + "/ids"
}

// ensureNamespace creates ns with the default layout (PUT answers 201, or
// 200 when it exists) on the first target that answers, retrying while the
// cluster starts, and returns its layout as the answer states it.
func ensureNamespace(ctx context.Context, client *http.Client, targets []string, ns string, timeout time.Duration) (snowflakeLayout, error) {
	var l snowflakeLayout
	i := 0
	err := retrySetup(ctx, timeout, "PUT namespace "+ns, func(ctx context.Context) error {
		t := targets[i%len(targets)]
		i++
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, t+"/v1/namespaces/"+url.PathEscape(ns), bytes.NewReader([]byte("{}")))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
			return fmt.Errorf("PUT %s: %s: %s", t, resp.Status, bytes.TrimSpace(body))
		}
		if err := json.Unmarshal(body, &l); err != nil {
			return fmt.Errorf("PUT %s: %w", t, err)
		}
		if l.WorkerBits == 0 && l.SequenceBits == 0 || int(l.WorkerBits)+int(l.SequenceBits) > 62 {
			return fmt.Errorf("PUT %s: no usable layout in %s", t, bytes.TrimSpace(body))
		}
		return nil
	})
	return l, err
}

// checkSnowflakeAnswer checks one answer of count IDs claimed to be made
// under worker (-1: any one worker id, the first ID's) and appends its
// maximal runs of consecutive IDs to dst.
func checkSnowflakeAnswer(dst []idRange, ids []int64, count int, worker int64, l snowflakeLayout) ([]idRange, error) {
	if len(ids) != count || count == 0 {
		return dst, &opError{kind: sfErrCount, err: fmt.Errorf("%d IDs, asked for %d", len(ids), count)}
	}
	if worker < 0 {
		worker = l.worker(ids[0])
	}
	start := len(dst)
	for i, id := range ids {
		if id < 0 {
			return dst[:start], &opError{kind: sfErrNegative, err: fmt.Errorf("ID %d", id)}
		}
		if i > 0 && id <= ids[i-1] {
			return dst[:start], &opError{kind: sfErrOrder, err: fmt.Errorf("ID %d after %d", id, ids[i-1])}
		}
		if w := l.worker(id); w != worker {
			return dst[:start], &opError{kind: sfErrWorker, err: fmt.Errorf("ID %d has worker %d, the answer says %d", id, w, worker)}
		}
		if i > 0 && id == ids[i-1]+1 {
			dst[len(dst)-1].Last = uint64(id)
		} else {
			dst = append(dst, idRange{First: uint64(id), Last: uint64(id)})
		}
	}
	return dst, nil
}

// newSnowflakeBackend returns the backend of a --snowflake run.
func newSnowflakeBackend(cfg loadConfig, conns int) (backend, error) {
	if err := api.ValidateSequenceName(cfg.Snowflake); err != nil {
		return nil, fmt.Errorf("--snowflake: %w", err)
	}
	if cfg.Count < 1 || cfg.Count > api.MaxSnowflakeIDs {
		return nil, fmt.Errorf("--snowflake: --count must be 1..%d", api.MaxSnowflakeIDs)
	}
	switch kindOrHTTP(cfg.Kind) {
	case "http":
		b := &sfHTTPBackend{cfg: cfg, tr: newTransport(conns), body: []byte(fmt.Sprintf(`{"count":%d}`, cfg.Count))}
		return b, nil
	case "resp":
		setup, err := parseTargets(cfg.SnowflakeSetup)
		if err != nil {
			return nil, fmt.Errorf("--kind resp --snowflake needs --snowflake-setup URL (a node's HTTP API, to create the namespace): %w", err)
		}
		b := &sfRESPBackend{cfg: cfg, setupURLs: setup}
		per := conns/len(cfg.Targets) + 1
		for _, t := range cfg.Targets {
			c := cfg
			c.Targets = []string{t}
			b.rdbs = append(b.rdbs, newRedisClient(c, per))
		}
		return b, nil
	}
	return nil, fmt.Errorf("--snowflake needs --kind http or resp, not %s", cfg.Kind)
}

// ---- HTTP ------------------------------------------------------------------

type sfHTTPBackend struct {
	cfg    loadConfig
	tr     *http.Transport
	body   []byte
	layout snowflakeLayout
}

func (b *sfHTTPBackend) setup(ctx context.Context, timeout time.Duration) error {
	var err error
	b.layout, err = ensureNamespace(ctx, &http.Client{Transport: b.tr, Timeout: b.cfg.Timeout}, b.cfg.Targets, b.cfg.Snowflake, timeout)
	return err
}

func (b *sfHTTPBackend) newReserver(_ context.Context, i int) (reserver, error) {
	r := &sfHTTPReserver{
		client: &http.Client{Transport: b.tr, Timeout: b.cfg.Timeout},
		url:    b.cfg.Targets[i%len(b.cfg.Targets)] + snowflakeIDsPath(b.cfg.Snowflake),
		body:   b.body, count: int(b.cfg.Count), layout: b.layout,
	}
	r.buf.Grow(256)
	return r, nil
}

func (b *sfHTTPBackend) note() string {
	return "snowflake over HTTP: POST /v1/namespaces/<ns>/ids {\"count\":N}, worker i to target i%targets, never forwarded; every answer checked (count, strictly increasing, worker bits) and every ID of the run for duplicates (as runs of consecutive IDs)"
}

func (b *sfHTTPBackend) close() { b.tr.CloseIdleConnections() }

type sfHTTPReserver struct {
	client *http.Client
	url    string
	body   []byte
	buf    bytes.Buffer
	count  int
	layout snowflakeLayout
	ids    []int64
}

var _ rangesReserver = (*sfHTTPReserver)(nil)

func (r *sfHTTPReserver) reserve(ctx context.Context) (idRange, int, error) {
	rs, n, err := r.reserveRanges(ctx, nil)
	if err != nil {
		return idRange{}, n, err
	}
	return rs[0], n, nil
}

func (r *sfHTTPReserver) reserveRanges(ctx context.Context, dst []idRange) ([]idRange, int, error) {
	status, _, err := postOnce(ctx, r.client, r.url, r.body, &r.buf)
	if err != nil {
		return dst, 0, &opError{kind: classifyErr(err), backoff: true, err: err}
	}
	if status != http.StatusOK {
		return dst, 0, &opError{kind: strconv.Itoa(status), backoff: status >= 500}
	}
	var worker int64
	r.ids, worker, err = parseSnowflakeIDs(r.buf.Bytes(), r.ids[:0])
	if err != nil {
		return dst, 0, &opError{kind: "decode", err: err}
	}
	dst, err = checkSnowflakeAnswer(dst, r.ids, r.count, worker, r.layout)
	return dst, 0, err
}

func (r *sfHTTPReserver) close() {}

// parseSnowflakeIDs reads worker_id and ids of an api.SnowflakeIDs answer
// into ids. The load generator shares this machine's cores with the
// server, so the common shape (the one the server writes) is scanned by
// hand; anything else goes through encoding/json.
func parseSnowflakeIDs(b []byte, ids []int64) ([]int64, int64, error) {
	if ids, w, ok := scanSnowflakeIDs(b, ids); ok {
		return ids, w, nil
	}
	var a struct {
		WorkerID *int64  `json:"worker_id"`
		IDs      []int64 `json:"ids"`
	}
	if err := json.Unmarshal(b, &a); err != nil {
		return ids, 0, err
	}
	if a.WorkerID == nil {
		return ids, 0, errors.New("answer without worker_id")
	}
	return append(ids, a.IDs...), *a.WorkerID, nil
}

// scanSnowflakeIDs is the fast path of parseSnowflakeIDs: `"worker_id":N`
// and `"ids":[N,...]` with no spaces; ok false for anything else.
func scanSnowflakeIDs(b []byte, ids []int64) ([]int64, int64, bool) {
	i := bytes.Index(b, []byte(`"worker_id":`))
	if i < 0 {
		return ids, 0, false
	}
	w, n := scanInt(b[i+len(`"worker_id":`):])
	if n == 0 {
		return ids, 0, false
	}
	j := bytes.Index(b, []byte(`"ids":[`))
	if j < 0 {
		return ids, 0, false
	}
	rest := b[j+len(`"ids":[`):]
	if len(rest) > 0 && rest[0] == ']' {
		return ids, w, true
	}
	for {
		v, n := scanInt(rest)
		if n == 0 || n >= len(rest) {
			return ids, 0, false
		}
		ids = append(ids, v)
		switch rest[n] {
		case ',':
			rest = rest[n+1:]
		case ']':
			return ids, w, true
		default:
			return ids, 0, false
		}
	}
}

// scanInt reads a decimal int64 (optionally negative) at the start of b and
// how many bytes it took (0: none, or it overflows).
func scanInt(b []byte) (int64, int) {
	neg, i := false, 0
	if len(b) > 0 && b[0] == '-' {
		neg, i = true, 1
	}
	start := i
	var v uint64
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		if v > (1<<63-1)/10 {
			return 0, 0
		}
		v = v*10 + uint64(b[i]-'0')
	}
	if i == start || v > 1<<63-1 {
		return 0, 0
	}
	if neg {
		return -int64(v), i
	}
	return int64(v), i
}

// ---- Redis protocol ---------------------------------------------------------

type sfRESPBackend struct {
	cfg       loadConfig
	setupURLs []string
	rdbs      []*redis.Client // one per target
	layout    snowflakeLayout
}

// setup creates the namespace over HTTP (the RESP front has no command for
// it), then asks every target for one ID: a node that does not serve
// TICKETD.SNOWFLAKE fails the run here, not as errors of every request.
func (b *sfRESPBackend) setup(ctx context.Context, timeout time.Duration) error {
	var err error
	b.layout, err = ensureNamespace(ctx, &http.Client{Transport: newTransport(2), Timeout: b.cfg.Timeout}, b.setupURLs, b.cfg.Snowflake, timeout)
	if err != nil {
		return err
	}
	for i, rdb := range b.rdbs {
		var permanent error
		err := retrySetup(ctx, timeout, "resp: TICKETD.SNOWFLAKE "+b.cfg.Snowflake+" on "+b.cfg.Targets[i], func(ctx context.Context) error {
			err := rdb.Do(ctx, "TICKETD.SNOWFLAKE", b.cfg.Snowflake, 1).Err()
			if respPermanent(err) {
				permanent = err
				return nil
			}
			return err
		})
		if err == nil && permanent != nil {
			err = fmt.Errorf("resp: TICKETD.SNOWFLAKE on %s: %w", b.cfg.Targets[i], permanent)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (b *sfRESPBackend) newReserver(_ context.Context, i int) (reserver, error) {
	return &sfRESPReserver{
		rdb: b.rdbs[i%len(b.rdbs)], ns: b.cfg.Snowflake, count: int(b.cfg.Count), layout: b.layout,
	}, nil
}

func (b *sfRESPBackend) note() string {
	return "snowflake over the Redis protocol: TICKETD.SNOWFLAKE <ns> <count> -> array of integers, worker i to target i%targets (go-redis, a connection per worker); each answer checked (count, strictly increasing, one worker id in its bits) and every ID of the run for duplicates (as runs of consecutive IDs)"
}

func (b *sfRESPBackend) close() {
	for _, r := range b.rdbs {
		r.Close()
	}
}

type sfRESPReserver struct {
	rdb    *redis.Client
	ns     string
	count  int
	layout snowflakeLayout
}

var _ rangesReserver = (*sfRESPReserver)(nil)

func (r *sfRESPReserver) reserve(ctx context.Context) (idRange, int, error) {
	rs, n, err := r.reserveRanges(ctx, nil)
	if err != nil {
		return idRange{}, n, err
	}
	return rs[0], n, nil
}

func (r *sfRESPReserver) reserveRanges(ctx context.Context, dst []idRange) ([]idRange, int, error) {
	ids, err := r.rdb.Do(ctx, "TICKETD.SNOWFLAKE", r.ns, r.count).Int64Slice()
	if err != nil {
		return dst, 0, respErr(err)
	}
	dst, err = checkSnowflakeAnswer(dst, ids, r.count, -1, r.layout)
	var oe *opError
	if errors.As(err, &oe) && oe.kind == sfErrWorker {
		oe.kind = sfErrWorkerMix // no stated worker id: the IDs disagree among themselves
	}
	return dst, 0, err
}

func (r *sfRESPReserver) close() {}
