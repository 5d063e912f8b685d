package respapi

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ticketd/ticketd/domain"
	"github.com/ticketd/ticketd/resp"
)

// reserve reserves count IDs here when this node serves, else at the
// leader.
func (c *conn) reserve(ctx context.Context, name string, count int64, token string) (first, last int64, err error) {
	st := c.s.cfg.Store
	if !st.Serving() {
		return c.s.leader.reserve(ctx, name, count, token)
	}
	start := time.Now()
	first, last, err = st.Reserve(ctx, name, count)
	c.s.cfg.Metrics.ObserveReservation(name, outcomeOf(err), count, time.Since(start))
	return first, last, err
}

// answerRange answers an INCR/INCRBY (the last ID) or TICKETD.RESERVE
// ([first, last]) whose range starts at first.
func (cl *call) answerRange(first int64, err error) {
	last := first + cl.count - 1
	switch {
	case err != nil:
		cl.out = resp.AppendError(cl.out, errorReply(err, cl.name))
	case cl.op == opIncr:
		cl.out = resp.AppendInt(cl.out, last)
	default:
		cl.out = resp.AppendArray(cl.out, 2)
		cl.out = resp.AppendInt(cl.out, first)
		cl.out = resp.AppendInt(cl.out, last)
	}
}

// execute runs a read or a create: here when this node serves, else at the
// leader's HTTP API.
func (c *conn) execute(cl *call) {
	ctx := c.s.deadlines.get()
	st := c.s.cfg.Store
	local := st.Serving()
	switch cl.op {
	case opGet:
		var seq domain.Sequence
		var err error
		if local {
			seq, err = st.Sequence(ctx, cl.name)
		} else {
			seq, err = c.s.leader.sequence(ctx, cl.name, cl.token)
		}
		switch {
		case errors.Is(err, domain.ErrNotFound):
			// As Redis answers GET of a key that does not exist.
			cl.out = resp.AppendNull(cl.out, cl.proto)
		case err != nil:
			cl.out = resp.AppendError(cl.out, errorReply(err, cl.name))
		default:
			cl.out = resp.AppendBulkInt(cl.out, highWaterMark(seq))
		}
	case opCreate:
		settings := domain.SequenceSettings{Name: cl.name, Start: cl.start, Max: cl.max}
		var created bool
		var err error
		if local {
			_, created, err = st.CreateSequence(ctx, settings)
		} else {
			created, err = c.s.leader.create(ctx, settings, cl.token)
		}
		switch {
		case err != nil:
			cl.out = resp.AppendError(cl.out, errorReply(err, cl.name))
		case created:
			cl.out = resp.AppendInt(cl.out, 1)
		default:
			cl.out = resp.AppendInt(cl.out, 0)
		}
	}
}

// snowflake answers TICKETD.SNOWFLAKE with the IDs of this node's own
// generator of the namespace, as an array of integers. It is never
// forwarded: any node makes these IDs from its own worker-id lease, with no
// Raft round (issue #32), whether it leads or not.
func (c *conn) snowflake(cl *call) {
	out, err := c.s.cfg.Store.SnowflakeIDs(c.s.deadlines.get(), cl.name, int(cl.count))
	if err != nil {
		cl.out = resp.AppendError(cl.out, snowflakeErrorReply(err, cl.name))
		return
	}
	cl.out = resp.AppendArray(cl.out, len(out.IDs))
	for _, id := range out.IDs {
		cl.out = resp.AppendInt(cl.out, id)
	}
}

// snowflakeErrorReply is the Redis error for an error of the Snowflake
// service: its code is the HTTP problem type's name, upper case and without
// hyphens (clock-behind is CLOCKBEHIND), and its message names the
// namespace. CLOCKBEHIND's second word is how many milliseconds this node's
// clock is behind, the wait after which it serves again, for a client to
// parse: CLOCKBEHIND 1200 ms: ...
func snowflakeErrorReply(err error, ns string) string {
	var cb *domain.ClockBehindError
	switch {
	case errors.Is(err, domain.ErrNotFound):
		return fmt.Sprintf("NOTFOUND namespace %q does not exist; create it first: ticketd namespaces %s --create, or PUT /v1/namespaces/%s (admin scope)", ns, ns, ns)
	case errors.As(err, &cb):
		return fmt.Sprintf("CLOCKBEHIND %d ms: %s (this node serves the namespace again once its clock has run that far; another node may serve it now)", cb.BehindMs, err)
	case errors.Is(err, domain.ErrClockBehind):
		return fmt.Sprintf("CLOCKBEHIND 0 ms: %s (namespace %q; how far behind is not known)", err, ns)
	case errors.Is(err, domain.ErrWorkersExhausted):
		return "WORKERSEXHAUSTED " + err.Error()
	case errors.Is(err, domain.ErrNoWorkerLease):
		return "NOWORKERLEASE " + err.Error()
	case errors.Is(err, domain.ErrTimestampExhausted):
		return "TIMESTAMPEXHAUSTED " + err.Error()
	}
	return errorReply(err, ns)
}

// highWaterMark is the largest ID ever handed to a leader (start-1 before
// the first): no ID above it has been issued or ever will be by a leader of
// an earlier term. IDs of blocks the leader holds lie below it, so an INCR
// after a GET may answer less than the GET did; never an ID answered before.
func highWaterMark(s domain.Sequence) int64 {
	if s.Exhausted {
		return s.Max
	}
	return s.Next - 1
}

// errorReply is the Redis error for a store error: its code is the name of
// the problem type the HTTP API would answer, upper case.
func errorReply(err error, sequence string) string {
	switch {
	case errors.Is(err, domain.ErrNotFound):
		return fmt.Sprintf("NOTFOUND sequence %q does not exist; create it first: TICKETD.CREATE %s (admin scope), or PUT /v1/sequences/%s", sequence, sequence, sequence)
	case errors.Is(err, domain.ErrExhausted):
		return "EXHAUSTED " + err.Error()
	case errors.Is(err, domain.ErrUnavailable):
		return "TRYAGAIN " + err.Error()
	case errors.Is(err, domain.ErrConflict):
		return "CONFLICT " + err.Error()
	case errors.Is(err, domain.ErrClusterUpgrading):
		return "UPGRADING " + err.Error()
	case errors.Is(err, domain.ErrInvalid):
		return "ERR " + err.Error()
	case errors.Is(err, errForbidden):
		return "NOPERM " + err.Error()
	case errors.Is(err, errUnauthorized):
		return "WRONGPASS " + err.Error()
	}
	return "ERR internal error: " + err.Error()
}

// outcomeOf names a reservation's result for metrics, as the HTTP API does.
func outcomeOf(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, domain.ErrNotFound):
		return "not_found"
	case errors.Is(err, domain.ErrExhausted):
		return "exhausted"
	case errors.Is(err, domain.ErrUnavailable):
		return "unavailable"
	case errors.Is(err, domain.ErrInvalid):
		return "bad_request"
	}
	return "error"
}
