package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/cenkalti/backoff/v5"

	"github.com/ticketd/ticketd/api"
)

// The fetching of a SnowflakeRemote's batches: going round the nodes,
// skipping those that asked for it, and checking each answer before it
// enters the buffer (snowflake_remote.go).

func (r *SnowflakeRemote) runFetch(f *remoteFetch, count int64) {
	// One node failing is routine (the fetch moves on): Debug. A round in
	// which every node failed is logged by fetch.
	onFailure := func(err error) {
		r.mu.Lock()
		f.lastErr = err
		r.failures++
		r.mu.Unlock()
		r.c.log.Debug("ticketd: a node could not serve Snowflake IDs; trying another", "namespace", r.ns, "err", err)
	}
	started := time.Now()
	b, err := r.fetch(count, onFailure)
	if b != nil {
		b.fetchedAt = started
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.closed || r.ctx.Err() != nil:
		err = ErrClosed
	case err == nil:
		r.nxt = b
	default:
		r.c.log.Warn("ticketd: fetching Snowflake IDs failed", "namespace", r.ns, "err", err)
	}
	f.err = err
	r.inflight = nil
	close(f.done)
}

// fetch asks the nodes for count IDs, one after the other from r.rr, until
// one serves, an answer is final, or r.ctx ends; onFailure sees every
// failure it moves past. Between rounds it waits with the Client's backoff,
// and at least until a node may be asked again when every node is skipped.
func (r *SnowflakeRemote) fetch(count int64, onFailure func(error)) (*idBatch, error) {
	body, _ := json.Marshal(api.SnowflakeIDsRequest{Count: &count})
	eps := r.c.endpoints
	var bo *backoff.ExponentialBackOff
	var last error
	for round := 1; ; round++ {
		r.mu.Lock()
		start := r.rr
		r.mu.Unlock()
		for i := range eps {
			idx := (start + i) % len(eps)
			if r.skipped(idx, time.Now()) > 0 {
				continue
			}
			var out api.SnowflakeIDs
			_, meta, err := r.c.attempt(r.ctx, eps[idx], http.MethodPost, r.path, body, &out)
			if err == nil {
				b, err := r.accept(idx, &out, count)
				if err == nil {
					if round > 1 {
						r.c.log.Info("ticketd: fetched Snowflake IDs after every node had failed", "namespace", r.ns,
							"rounds", round, "endpoint", eps[idx].base)
					}
					return b, nil
				}
				last = err
				onFailure(err)
				continue
			}
			if r.ctx.Err() != nil {
				break // this failure is the context's doing
			}
			var fatal *fatalError
			if errors.As(err, &fatal) && errors.Is(fatal.err, ErrInvalidArgument) {
				return nil, fatal.err // the request cannot be built
			}
			var apiErr *APIError
			if errors.As(err, &apiErr) {
				if !apiErr.retryable() && !routeUnknown(apiErr) {
					return nil, snowflakeError(err)
				}
				if meta.retryAfter > 0 {
					r.skip(idx, min(meta.retryAfter, maxRetryAfter))
				}
			} else if len(eps) > 1 {
				// A transport failure or timeout: a node that is down or
				// cut off would cost every fetch that asks it first a
				// timeout; rest it as long as the longest backoff.
				r.skip(idx, r.c.maxBackoff)
			}
			last = snowflakeError(err)
			onFailure(last)
		}
		if r.ctx.Err() != nil {
			return nil, ErrClosed
		}
		if bo == nil {
			bo = r.c.newBackoff()
		}
		wait := bo.NextBackOff()
		if soonest := r.soonestAllowed(time.Now()); soonest > 0 {
			wait = max(wait, soonest)
		}
		level := slog.LevelDebug
		if round == 1 {
			level = slog.LevelWarn
		}
		r.c.log.Log(r.ctx, level, "ticketd: no node could serve Snowflake IDs; retrying in the background", "namespace", r.ns,
			"round", round, "wait", wait, "err", last)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-r.ctx.Done():
			t.Stop()
			return nil, ErrClosed
		}
	}
}

// routeUnknown: a node that does not know the route or its method (an
// older release) answers 404 route-not-found or 405; another node may.
func routeUnknown(e *APIError) bool {
	return e.Problem.Type == api.ProblemRouteNotFound || e.StatusCode == http.StatusMethodNotAllowed
}

// skip keeps endpoint idx from being asked for d.
func (r *SnowflakeRemote) skip(idx int, d time.Duration) {
	r.mu.Lock()
	r.skipUntil[idx] = time.Now().Add(d)
	r.mu.Unlock()
}

// skipped is how long endpoint idx is still not to be asked (0: it may be).
func (r *SnowflakeRemote) skipped(idx int, now time.Time) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return max(r.skipUntil[idx].Sub(now), 0)
}

// soonestAllowed is how long until some endpoint may be asked again when
// every endpoint is skipped now; 0 when one may be asked at once.
func (r *SnowflakeRemote) soonestAllowed(now time.Time) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	var soonest time.Duration
	for _, t := range r.skipUntil {
		d := t.Sub(now)
		if d <= 0 {
			return 0
		}
		if soonest == 0 || d < soonest {
			soonest = d
		}
	}
	return soonest
}

// accept checks a node's answer and makes it the batch fetched ahead's
// content: count IDs of this namespace, strictly increasing, the first above
// the highest this SnowflakeRemote received under the same worker id.
func (r *SnowflakeRemote) accept(idx int, out *api.SnowflakeIDs, count int64) (*idBatch, error) {
	base := r.c.endpoints[idx].base
	bad := func(format string, args ...any) error {
		r.mu.Lock()
		r.refused++
		r.mu.Unlock()
		err := fmt.Errorf("ticketd: %s answered Snowflake IDs of %q that are refused: %s", base, r.ns, fmt.Sprintf(format, args...))
		r.c.log.Error("ticketd: Snowflake IDs refused", "namespace", r.ns, "endpoint", base, "node", out.Node, "err", err)
		return err
	}
	if out.Namespace != r.ns {
		return nil, bad("the answer is for namespace %q", out.Namespace)
	}
	if int64(len(out.IDs)) != count {
		return nil, bad("%d IDs for %d asked", len(out.IDs), count)
	}
	for i, id := range out.IDs {
		if id < 0 || (i > 0 && id <= out.IDs[i-1]) {
			return nil, bad("ID %d at %d does not increase", id, i)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	// A node that lost its lease as it answered names no worker id (-1):
	// such an answer cannot be checked against its worker id's IDs.
	if h, ok := r.highest[out.WorkerID]; ok && out.WorkerID >= 0 && out.IDs[0] <= h {
		r.refused++
		err := fmt.Errorf("ticketd: %s answered Snowflake IDs of %q from %d under worker id %d, not above %d, an ID this generator already received under it; refused",
			base, r.ns, out.IDs[0], out.WorkerID, h)
		r.c.log.Error("ticketd: Snowflake IDs refused", "namespace", r.ns, "endpoint", base, "node", out.Node, "err", err)
		return nil, err
	}
	if out.WorkerID >= 0 {
		r.highest[out.WorkerID] = out.IDs[len(out.IDs)-1]
	}
	r.fetches++
	r.byEndpoint[base] += count
	r.rr = (idx + 1) % len(r.c.endpoints) // the next fetch goes to the next node
	return &idBatch{block: block{n: count, trigger: -1}, ids: out.IDs}, nil
}
