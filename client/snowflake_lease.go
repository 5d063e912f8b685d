package client

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/ticketd/ticketd/api"
)

// The lease keeper of a Snowflake: the worker-id lease it holds and the
// background goroutine that acquires it, renews it every TTL/3, acquires a
// new one when it is lost, and releases it at the end (see Snowflake for the
// rules).

// sfLease is the lease the generator holds. Its fields are guarded by
// Snowflake.mu; only the background goroutine replaces it.
type sfLease struct {
	worker    int64
	token     uint64
	ttl       time.Duration
	grantedMs int64
	grantSeq  uint64 // the grant's audit sequence number (0: not named)
	// The generator issues only while mono < deadlineMono and the
	// timestamp it issues is below deadlineWall: both are the send time
	// of the last successful grant or renewal plus TTL minus the margin,
	// read from the monotonic and from the wall clock. The monotonic one
	// holds however the wall clock is stepped; the wall one holds when the
	// monotonic clock stands still while the host is suspended.
	deadlineMono int64
	deadlineWall int64
	// floorMs is the timestamp floor the cluster handed out with the
	// grant (Unix ms; 0: none): the highest timestamp any earlier holder of
	// the worker id may have used. aboveFloorNs is the start of the first
	// tick after it, the lowest timestamp this lease may use.
	floorMs      int64
	aboveFloorNs int64
	// minNs is the lowest timestamp the generator issues under this lease:
	// aboveFloorNs, or its own time when it asked for the lease if that is
	// later (so that no ID predates the lease it was issued under, and the
	// cluster's inspections name the right holder).
	minNs    int64
	renewAt  time.Time // real time of the next renewal
	expired  bool      // the deadline passed (counted once)
	released bool
}

// run is the background goroutine: it acquires a lease, renews it every
// TTL/3, acquires a new one when it is lost, and releases it at the end.
func (g *Snowflake) run() {
	defer close(g.done)
	defer g.shutdown()
	bo := g.c.newBackoff()
	for g.ctx.Err() == nil {
		g.mu.Lock()
		l := g.lease
		g.mu.Unlock()
		if l == nil {
			if err := g.acquire(); err != nil {
				g.mu.Lock()
				fatal := g.fatal != nil
				g.mu.Unlock()
				if fatal {
					g.c.log.Error("ticketd: the Snowflake generator stopped", "namespace", g.ns, "err", err)
					return
				}
				g.fail(err, "acquiring a worker-id lease failed; retrying")
				g.sleep(bo.NextBackOff())
				continue
			}
			bo.Reset()
			continue
		}
		if !g.sleep(time.Until(l.renewAt)) {
			return
		}
		err := g.renew(l)
		switch {
		case err == nil:
			bo.Reset()
		case g.ctx.Err() != nil:
			return
		case errors.Is(err, ErrLeaseLost), errors.Is(err, ErrNamespaceNotFound):
			g.lose(l, err)
		default:
			g.mu.Lock()
			g.stats.RenewFailures++
			g.mu.Unlock()
			g.fail(err, "renewing the worker-id lease failed; retrying")
			if !errors.Is(err, ErrUnavailable) {
				// A final answer such as 401, or one this generator
				// cannot use (a 200 that is not JSON): the next renewal
				// would get the same at once, and renewAt has not moved.
				// Do not hammer. (ErrUnavailable comes after retries
				// that took the renewal's whole time.)
				g.sleep(bo.NextBackOff())
			}
		}
	}
}

// sleep waits d or until the generator is closed; false when closed.
func (g *Snowflake) sleep(d time.Duration) bool {
	if d <= 0 {
		return g.ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-g.ctx.Done():
		return false
	}
}

func (g *Snowflake) fail(err error, msg string) {
	g.mu.Lock()
	g.lastErr = err
	g.mu.Unlock()
	g.c.log.Warn("ticketd: "+msg, "namespace", g.ns, "err", err)
}

func (g *Snowflake) leasePath(worker int64) string {
	return "/v1/namespaces/" + api.PathSegment(g.ns) + "/leases/" + strconv.FormatInt(worker, 10)
}

// maxFloorGiveUps is how many leases in a row the generator gives back
// because their timestamp floor lies at or past their deadline, before it
// keeps one and waits for its clock to pass the floor.
//
// Such a floor means that this host's clock is behind an earlier holder's
// by about the recycle delay plus the TTL or more. Either that holder's clock ran
// ahead (it was stepped, say, an hour forward): then only the worker ids it
// held are out of reach, another lease serves at once, and waiting for the
// floor instead would stop this generator for up to that hour. Or this
// host's clock is the one behind: then every recently used worker id is out
// of reach, and giving them all back in turn would keep each one resting
// for a recycle delay, which starves the other generators of a small
// namespace. A few give-ups tell the two apart well enough; after them the
// generator holds one worker id and refuses with ErrClockMovedBackwards
// until its clock has passed the floor, as it does for any clock behind the
// timestamps it must stay above.
const maxFloorGiveUps = 3

// acquire asks for a lease (retrying transient failures for up to the
// Client's call timeout) and installs it.
func (g *Snowflake) acquire() error {
	ctx, cancel := g.c.withCallTimeout(g.ctx)
	defer cancel()
	sendW, sendM := g.cfg.clock.Now()
	renewAt := time.Now()
	// One request id and one client time for this acquire and all its
	// retries: a retry whose first attempt was granted (answer lost, or a
	// 503 after the grant) gets that lease back instead of tying up a
	// second worker id, and the cluster bounds it by this send time, the
	// one the deadline is counted from.
	req := api.LeaseRequest{Holder: g.cfg.holder, RequestID: rand.Text(), ClientTimeMs: clientTimeMs(sendW)}
	if g.cfg.chosen {
		req.WorkerID = &g.cfg.workerID
	}
	body, _ := json.Marshal(req)
	var out api.Lease
	_, err := g.c.roundTrip(ctx, http.MethodPost, "/v1/namespaces/"+api.PathSegment(g.ns)+"/leases", body, &out, g.onFailure)
	if err != nil {
		err = snowflakeError(err)
		var wu *WorkerUnavailableError
		if errors.As(err, &wu) {
			wu.Namespace = g.ns
		}
		return err
	}
	recvW, _ := g.cfg.clock.Now()
	lay, lerr := newLayout(out.Layout)
	if lerr == nil && (out.WorkerID < 0 || out.WorkerID > lay.maxWorker || out.Token == 0 || out.TTLMs < 1 || out.TTLMs > maxLeaseTTLMs || out.TimestampFloorMs < 0) {
		lerr = fmt.Errorf("worker %d, token %d, ttl_ms %d, timestamp_floor_ms %d", out.WorkerID, out.Token, out.TTLMs, out.TimestampFloorMs)
	}
	if lerr == nil && g.cfg.chosen && out.WorkerID != g.cfg.workerID {
		lerr = fmt.Errorf("worker %d granted, %d asked for (a server from before issue #16 ignores worker_id)", out.WorkerID, g.cfg.workerID)
	}
	g.mu.Lock()
	if lerr == nil && g.layout != nil && !g.layout.same(out.Layout) {
		lerr = fmt.Errorf("the layout changed from %+v to %+v", g.layout.ns, out.Layout)
	}
	if lerr != nil {
		g.fatal = fmt.Errorf("ticketd: the cluster answered a lease of %q that this generator cannot use: %v", g.ns, lerr)
		g.notifyLocked()
		g.mu.Unlock()
		g.release(&sfLease{worker: out.WorkerID, token: out.Token})
		return g.fatal
	}
	l := &sfLease{worker: out.WorkerID, token: out.Token, ttl: time.Duration(out.TTLMs) * time.Millisecond, grantedMs: out.GrantedMs, grantSeq: out.GrantSeq}
	if err := g.setDeadlineLocked(l, sendW, sendM, renewAt); err != nil {
		g.fatal = err
		g.notifyLocked()
		g.mu.Unlock()
		g.release(l)
		return err
	}
	if g.closed {
		g.mu.Unlock()
		g.release(l)
		return ErrClosed
	}
	g.layout = lay
	// The lease's start: the timeline when the request was sent, or the
	// wall clock when the answer came if that is later.
	l.minNs = max(g.timelineLocked(int64(sendM)), recvW.UnixNano())
	g.raiseFloorLocked(l, out.TimestampFloorMs)
	var floorErr error
	if l.aboveFloorNs >= l.deadlineWall { // no ID of this lease could be above the floor
		if !g.cfg.chosen && g.floorGiveUps < maxFloorGiveUps {
			g.floorGiveUps++
			g.stats.FloorGiveUps++
			err := g.floorError(l, sendW.UnixNano(), fmt.Sprintf("that is past the lease's deadline: gave the lease back to acquire another (%d of %d in a row)", g.floorGiveUps, maxFloorGiveUps))
			g.lastErr = err
			g.mu.Unlock()
			g.release(l)
			return err
		}
		floorErr = g.floorError(l, sendW.UnixNano(), fmt.Sprintf("that is past the lease's deadline, as it was for the %d leases before: keeping this one and refusing until the clock has passed the floor", maxFloorGiveUps))
		g.c.log.Error("ticketd: the Snowflake generator refuses to issue until this host's clock has passed the lease's timestamp floor",
			"namespace", g.ns, "worker", l.worker, "token", l.token, "err", floorErr)
	}
	g.floorGiveUps = 0
	g.lease = l
	g.lastErr = floorErr
	g.stats.Acquired++
	g.notifyLocked()
	g.mu.Unlock()
	g.c.log.Info("ticketd: acquired a worker-id lease", "namespace", g.ns, "worker", l.worker, "token", l.token,
		"ttl", l.ttl, "timestamp_floor_ms", l.floorMs, "holder", g.cfg.holder)
	return nil
}

// maxLeaseTTLMs is the longest lease TTL a generator takes (the cluster
// allows an hour): a longer one is a bogus answer, and far longer ones
// overflow a time.Duration (ttl_ms 18446744073710 made a lease of 448 µs)
// or the deadlines computed from it.
const maxLeaseTTLMs = int64(24 * time.Hour / time.Millisecond)

// clientTimeMs is the client_time_ms of a request sent at sendW: its Unix
// time in ms, rounded up, so that the bound the cluster records,
// client_time_ms + TTL, is above the lease's wall deadline, sendW + TTL -
// margin, whatever the margin.
func clientTimeMs(sendW time.Time) int64 {
	ms := sendW.UnixMilli() // rounded down: the nanoseconds are in [0, 1e9)
	if sendW.Nanosecond()%1e6 != 0 {
		ms++
	}
	return ms
}

// raiseFloorLocked makes l honour the timestamp floor floorMs: it issues
// only ticks that start after it.
func (g *Snowflake) raiseFloorLocked(l *sfLease, floorMs int64) {
	if floorMs <= l.floorMs || g.cfg.faults.ignoreTimestampFloor() {
		return
	}
	l.floorMs = floorMs
	l.aboveFloorNs = g.layout.aboveFloor(floorMs)
	l.minNs = max(l.minNs, l.aboveFloorNs)
}

func (g *Snowflake) onFailure(err error) {
	g.mu.Lock()
	g.lastErr = err
	g.mu.Unlock()
}

// setDeadlineLocked sets l's deadlines from the send time of the request
// that granted or renewed it and checks the margin. Nothing the cluster's
// clock says takes part.
func (g *Snowflake) setDeadlineLocked(l *sfLease, sendW time.Time, sendM time.Duration, realSend time.Time) error {
	margin := g.cfg.margin
	if margin == 0 {
		margin = l.ttl / 10
	}
	if margin >= l.ttl/2 {
		return fmt.Errorf("%w: the safety margin %v must be below half the lease TTL %v of namespace %q", ErrInvalidArgument, margin, l.ttl, g.ns)
	}
	l.deadlineMono = max(l.deadlineMono, int64(sendM+l.ttl-margin))
	l.deadlineWall = max(l.deadlineWall, sendW.UnixNano()+int64(l.ttl-margin))
	l.renewAt = realSend.Add(l.ttl / 3)
	l.expired = false
	return nil
}

// renew renews l once. The call is bounded by TTL/3 so that a retry starts
// with a fresh send time.
func (g *Snowflake) renew(l *sfLease) error {
	ctx, cancel := context.WithTimeout(g.ctx, l.ttl/3)
	defer cancel()
	sendW, sendM := g.cfg.clock.Now()
	realSend := time.Now()
	body, _ := json.Marshal(api.LeaseTokenRequest{Token: l.token, ClientTimeMs: clientTimeMs(sendW)})
	var out api.Lease
	_, err := g.c.roundTrip(ctx, http.MethodPut, g.leasePath(l.worker), body, &out, g.onFailure)
	if err != nil {
		return snowflakeError(err)
	}
	if out.WorkerID != l.worker || out.Token != l.token || out.TTLMs < 1 || out.TTLMs > maxLeaseTTLMs {
		return fmt.Errorf("%w: the renewal of worker %d token %d was answered with worker %d token %d ttl_ms %d",
			ErrLeaseLost, l.worker, l.token, out.WorkerID, out.Token, out.TTLMs)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.lease != l {
		return nil
	}
	ttl := time.Duration(out.TTLMs) * time.Millisecond
	if ttl < l.ttl { // the TTL never changes for a namespace; take the shorter to be safe
		// Checked before the lease changes: a TTL the margin does not fit
		// would leave a lease no renewal can extend. Drop it; the next
		// acquire refuses that TTL as it refuses it at the start.
		margin := g.cfg.margin
		if margin == 0 {
			margin = ttl / 10
		}
		if margin >= ttl/2 {
			return fmt.Errorf("%w: the renewal of worker %d answered a TTL of %v, too short for the safety margin %v",
				ErrLeaseLost, l.worker, ttl, margin)
		}
		l.ttl = ttl
	}
	if err := g.setDeadlineLocked(l, sendW, sendM, realSend); err != nil {
		return err
	}
	// A renewal's answer carries the grant's floor again; should it ever
	// carry a higher one, that is honoured too.
	g.raiseFloorLocked(l, out.TimestampFloorMs)
	g.stats.Renewed++
	g.lastErr = nil
	g.notifyLocked()
	return nil
}

// lose drops l at once: the cluster says it is not held any more.
func (g *Snowflake) lose(l *sfLease, err error) {
	g.mu.Lock()
	if g.lease == l {
		g.lease = nil
		g.stats.LeasesLost++
		g.lastErr = err
		g.notifyLocked()
	}
	g.mu.Unlock()
	g.c.log.Warn("ticketd: the worker-id lease was lost; stopped issuing under it and acquiring a new one",
		"namespace", g.ns, "worker", l.worker, "token", l.token, "err", err)
}

// shutdown ends the generator and releases its lease.
func (g *Snowflake) shutdown() {
	g.mu.Lock()
	g.closed = true
	l := g.lease
	g.lease = nil
	g.notifyLocked()
	g.mu.Unlock()
	if l != nil {
		g.closeErr = g.release(l)
	}
}

// release gives the lease back, once, bounded by the attempt timeout.
func (g *Snowflake) release(l *sfLease) error {
	if l.released || l.token == 0 {
		return nil
	}
	l.released = true
	ctx, cancel := context.WithTimeout(context.WithoutCancel(g.ctx), g.c.attemptTimeout)
	defer cancel()
	body, _ := json.Marshal(api.LeaseTokenRequest{Token: l.token})
	_, err := g.c.roundTrip(ctx, http.MethodDelete, g.leasePath(l.worker), body, nil, nil)
	err = snowflakeError(err)
	if errors.Is(err, ErrLeaseLost) || errors.Is(err, ErrClosed) {
		return nil // nothing to release, or the Client is closing: the lease expires by itself
	}
	if err != nil {
		return fmt.Errorf("ticketd: releasing worker %d of %q: %w (the lease expires by itself after its TTL)", l.worker, g.ns, err)
	}
	return nil
}
