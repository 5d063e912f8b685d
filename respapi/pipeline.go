package respapi

import (
	"context"
	"errors"
	"sync"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/domain"
)

// call is one command of a batch and its answer.
type call struct {
	args [][]byte
	out  []byte // the encoded answer

	// A command that needs the leader is checked when the batch is read
	// (in order, with the connection's authentication at that point) and
	// runs with the others afterwards.
	op         op
	name       string
	count      int64
	token      string
	proto      int
	start, max int64
}

// maxKeptAnswer is the largest answer buffer a call keeps for reuse: an
// ECHO of 64 KiB does not leave its memory behind on every call it ever used.
const maxKeptAnswer = 4 << 10

func (cl *call) reset() {
	cl.args, cl.out = cl.args[:0], cl.out[:0]
	if cap(cl.out) > maxKeptAnswer {
		cl.out = nil
	}
	cl.op, cl.name, cl.count, cl.token = opNone, "", 0, ""
}

// op is a command that needs the leader.
type op uint8

const (
	opNone    op = iota
	opIncr       // INCR, INCRBY: the last ID
	opReserve    // TICKETD.RESERVE: [first, last]
	opGet        // GET: the high-water mark
	opCreate     // TICKETD.CREATE
	// opSnowflake (TICKETD.SNOWFLAKE) is not the leader's: it runs here, in
	// its place in the batch.
	opSnowflake
)

// run answers every command of the batch in order. The connection's own
// commands (AUTH, HELLO, PING...) are answered as they are met. The
// reservations between two reads (GET, TICKETD.CREATE), made with one token,
// form a segment that runs as one: those of one sequence as a single
// reservation of their summed count, cut into each command's range in
// pipeline order, so that the answers on a connection grow in the order the
// commands were sent, as Redis's would; those of different sequences at
// once, so that they share the leader's leadership round. A read runs after
// every reservation before it has its answer, so GET never answers less than
// an INCR sent before it.
//
// A reservation made with another token than the segment's (an AUTH or
// HELLO AUTH switched tokens between them) starts a new segment, after the
// one before it has its answers: were they one segment, the two tokens'
// reservations of a sequence would be two groups run at once, and the later
// command could get the lower IDs. Each command is checked (authenticated,
// scope) when dispatch meets it, with the connection's authentication at its
// place in the pipeline, and keeps that token for forwarding; an AUTH after
// it changes nothing of it.
func (c *conn) run() {
	seg := c.segment[:0]
	for i, cl := range c.batch {
		c.dispatch(cl)
		switch cl.op {
		case opNone:
		case opSnowflake:
			// This node's own IDs, of another kind than a sequence's: the
			// reservations around it go on as one segment.
			c.snowflake(cl)
		case opIncr, opReserve:
			if len(seg) > 0 && seg[0].token != cl.token {
				c.runSegment(seg)
				seg = seg[:0]
			}
			seg = append(seg, cl)
		default:
			c.runSegment(seg)
			seg = seg[:0]
			c.execute(cl)
		}
		if c.quit {
			// Nothing after QUIT is answered.
			c.batch = c.batch[:i+1]
			break
		}
	}
	c.runSegment(seg)
	c.segment = seg[:0]
}

// runSegment runs a segment's reservations, all made with one token (see
// run): one group per sequence, the groups at once.
func (c *conn) runSegment(seg []*call) {
	if len(seg) == 0 {
		return
	}
	groups := c.groups[:0]
	for _, cl := range seg {
		found := false
		for gi := range groups {
			if g := groups[gi]; g[0].name == cl.name {
				groups[gi] = append(g, cl)
				found = true
				break
			}
		}
		if !found {
			groups = append(groups, []*call{cl})
		}
	}
	ctx := c.s.deadlines.get()
	if len(groups) > 1 {
		var wg sync.WaitGroup
		for _, g := range groups[1:] {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c.reserveGroup(ctx, g)
			}()
		}
		c.reserveGroup(ctx, groups[0])
		wg.Wait()
	} else {
		c.reserveGroup(ctx, groups[0])
	}
	clear(groups)
	c.groups = groups[:0]
}

// reserveGroup reserves for calls of one sequence: as few reservations as
// api.MaxReserveCount allows, each cut in order. When a summed reservation
// fails because the sequence would pass its maximum, each command is tried
// on its own, in order, so that the ones that fit are served as they would
// have been alone.
func (c *conn) reserveGroup(ctx context.Context, g []*call) {
	for len(g) > 0 {
		n, sum := 0, int64(0)
		for n < len(g) && sum+g[n].count <= api.MaxReserveCount {
			sum += g[n].count
			n++
		}
		part := g[:n]
		g = g[n:]
		first, _, err := c.reserve(ctx, part[0].name, sum, part[0].token)
		if errors.Is(err, domain.ErrExhausted) && len(part) > 1 {
			for _, cl := range part {
				f, _, err := c.reserve(ctx, cl.name, cl.count, cl.token)
				cl.answerRange(f, err)
			}
			continue
		}
		for _, cl := range part {
			cl.answerRange(first, err)
			first += cl.count
		}
	}
}
