package main

// --kind resp: ticketd's Redis-protocol front (issue 14, `ticketd serve
// --resp-addr`), driven exactly as the Redis peer is (the same go-redis
// pool, a connection per worker, INCRBY key count -> (n-count, n]) so that
// the two are compared by the same closed loop. Two differences, both
// ticketd's: the key is the sequence name itself, so it must be a valid one
// ([A-Za-z0-9._-]{1,64}: no "ticketd-bench:" prefix), and INCRBY on a
// sequence that does not exist answers -NOTFOUND instead of starting at 0,
// so setup creates it with TICKETD.CREATE (admin scope; no authentication
// under --dev). Send it to the leader's RESP port: a follower forwards every
// command to the leader.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/ticketd/ticketd/api"
)

type respBackend struct {
	cfg loadConfig
	rdb *redis.Client
}

func newRESPBackend(cfg loadConfig, conns int) (*respBackend, error) {
	if err := api.ValidateSequenceName(cfg.Sequence); err != nil {
		return nil, fmt.Errorf("--kind resp: the key is the sequence name: %w", err)
	}
	return &respBackend{cfg: cfg, rdb: newRedisClient(cfg, conns)}, nil
}

// setup creates the sequence (TICKETD.CREATE answers 1, or 0 when it
// exists), retrying while the node cannot serve yet (-TRYAGAIN, a refused
// connection while it starts); an answer that no retry will change (no
// permission, not ticketd at all) fails at once.
func (b *respBackend) setup(ctx context.Context, timeout time.Duration) error {
	var permanent error
	err := retrySetup(ctx, timeout, "resp: TICKETD.CREATE "+b.cfg.Sequence, func(ctx context.Context) error {
		err := b.rdb.Do(ctx, "TICKETD.CREATE", b.cfg.Sequence).Err()
		if respPermanent(err) {
			permanent = err
			return nil
		}
		return err
	})
	if err == nil && permanent != nil {
		err = fmt.Errorf("resp: TICKETD.CREATE %s: %w", b.cfg.Sequence, permanent)
	}
	return err
}

func (b *respBackend) newReserver(context.Context, int) (reserver, error) {
	return &respReserver{rdb: b.rdb, key: b.cfg.Sequence, count: int64(b.cfg.Count)}, nil
}

func (b *respBackend) note() string {
	return "ticketd RESP front: INCRBY <sequence> <count> (the last of count new IDs) to the leader's --resp-addr, the sequence created with TICKETD.CREATE in setup; the same go-redis pool as the Redis peer"
}

func (b *respBackend) close() { b.rdb.Close() }

type respReserver struct {
	rdb   *redis.Client
	key   string
	count int64
}

func (r *respReserver) reserve(ctx context.Context) (idRange, int, error) {
	n, err := r.rdb.IncrBy(ctx, r.key, r.count).Result()
	if err != nil {
		return idRange{}, 0, respErr(err)
	}
	return idRange{First: uint64(n - r.count + 1), Last: uint64(n)}, 0, nil
}

func (r *respReserver) close() {}

// respErrCode is the code of a Redis error reply (its first word:
// "NOTFOUND", "TRYAGAIN", "ERR"...), "" for any other error.
func respErrCode(err error) string {
	var re redis.Error
	if err == nil || !errors.As(err, &re) {
		return ""
	}
	code, _, _ := strings.Cut(re.Error(), " ")
	return code
}

// respPermanent: an error reply that retrying cannot change.
func respPermanent(err error) bool {
	switch respErrCode(err) {
	case "":
		return false
	case "NOPERM", "NOAUTH", "WRONGPASS":
		return true
	}
	return strings.HasPrefix(err.Error(), "ERR unknown command")
}

// respErr classifies a failed INCRBY: an error reply by its code (ticketd's
// -TRYAGAIN is the 503 of its HTTP API: no serving leader right now), any
// other error as a transport error.
func respErr(err error) error {
	if code := respErrCode(err); code != "" {
		return &opError{kind: code, backoff: true, err: err}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &opError{kind: "timeout", backoff: true, err: err}
	}
	return &opError{kind: classifyErr(err), backoff: true, err: err}
}
