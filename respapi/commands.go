package respapi

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/auth"
	"github.com/ticketd/ticketd/domain"
	"github.com/ticketd/ticketd/resp"
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
)

// run answers every command of the batch in order. The connection's own
// commands (AUTH, HELLO, PING...) are answered as they are met. The
// reservations between two reads (GET, TICKETD.CREATE) form a segment that
// runs as one: those of one sequence as a single reservation of their summed
// count, cut into each command's range in pipeline order, so that the
// answers on a connection grow in the order the commands were sent, as
// Redis's would; those of different sequences at once, so that they share
// the leader's leadership round. A read runs after every reservation before
// it has its answer, so GET never answers less than an INCR sent before it.
func (c *conn) run() {
	seg := c.segment[:0]
	for i, cl := range c.batch {
		c.dispatch(cl)
		switch cl.op {
		case opNone:
		case opIncr, opReserve:
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

// runSegment runs a segment's reservations: one group per sequence (and
// token), the groups at once.
func (c *conn) runSegment(seg []*call) {
	if len(seg) == 0 {
		return
	}
	groups := c.groups[:0]
	for _, cl := range seg {
		found := false
		for gi := range groups {
			if g := groups[gi]; g[0].name == cl.name && g[0].token == cl.token {
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

// commandName is the command's name in upper case, without allocating for
// the names the front knows.
func commandName(arg []byte) string {
	var buf [24]byte
	if len(arg) > len(buf) {
		return strings.ToUpper(string(arg))
	}
	for i, ch := range arg {
		if 'a' <= ch && ch <= 'z' {
			ch -= 'a' - 'A'
		}
		buf[i] = ch
	}
	switch n := buf[:len(arg)]; string(n) {
	case "INCR":
		return "INCR"
	case "INCRBY":
		return "INCRBY"
	case "GET":
		return "GET"
	case "PING":
		return "PING"
	default:
		return string(n)
	}
}

// preAuth are the commands a connection may send before it authenticates.
var preAuth = map[string]bool{"AUTH": true, "HELLO": true, "PING": true, "QUIT": true}

// dispatch answers cl, or checks it and sets its op for execute.
func (c *conn) dispatch(cl *call) {
	name := commandName(cl.args[0])
	args := cl.args[1:]
	if !c.authed && !preAuth[name] {
		cl.out = resp.AppendError(cl.out, "NOAUTH Authentication required.")
		return
	}
	switch name {
	case "INCR", "INCRBY", "TICKETD.RESERVE":
		c.reserveCommand(cl, name, args)
	case "GET":
		if !c.arity(cl, name, args, 1, 1) || !c.allowed(cl, name, auth.ScopeReserve) {
			return
		}
		if !c.sequenceName(cl, args[0]) {
			return
		}
		cl.op = opGet
	case "TICKETD.CREATE":
		c.createCommand(cl, args)
	case "PING":
		switch len(args) {
		case 0:
			cl.out = resp.AppendSimple(cl.out, "PONG")
		case 1:
			cl.out = resp.AppendBulk(cl.out, args[0])
		default:
			c.arity(cl, name, args, 0, 1)
		}
	case "ECHO":
		if c.arity(cl, name, args, 1, 1) {
			cl.out = resp.AppendBulk(cl.out, args[0])
		}
	case "QUIT":
		cl.out = resp.AppendSimple(cl.out, "OK")
		c.quit = true
	case "SELECT":
		if !c.arity(cl, name, args, 1, 1) {
			return
		}
		if n, ok := resp.ParseInt(args[0]); !ok || n != 0 {
			cl.out = resp.AppendError(cl.out, "ERR DB index is out of range (ticketd has only database 0)")
			return
		}
		cl.out = resp.AppendSimple(cl.out, "OK")
	case "AUTH":
		c.authCommand(cl, args)
	case "HELLO":
		c.helloCommand(cl, args)
	case "CLIENT":
		c.clientCommand(cl, args)
	case "COMMAND":
		c.commandCommand(cl, args)
	case "INFO":
		if c.allowed(cl, name, auth.ScopeReserve) {
			cl.out = resp.AppendBulkString(cl.out, c.info(args))
		}
	default:
		cl.out = resp.AppendError(cl.out, unknownCommand(cl.args))
	}
}

// unknownCommand is Redis's message for a command it does not have.
func unknownCommand(args [][]byte) string {
	var b strings.Builder
	fmt.Fprintf(&b, "ERR unknown command '%s', with args beginning with: ", clip(args[0]))
	for i, a := range args[1:] {
		if i == 8 {
			break
		}
		fmt.Fprintf(&b, "'%s' ", clip(a))
	}
	b.WriteString("(ticketd serves INCR, INCRBY, GET, TICKETD.RESERVE and TICKETD.CREATE; see COMMAND)")
	return b.String()
}

func clip(b []byte) string {
	if len(b) > 64 {
		return string(b[:64]) + "..."
	}
	return string(b)
}

// arity checks the argument count (after the name), answering the error
// Redis gives when it is wrong.
func (c *conn) arity(cl *call, name string, args [][]byte, min, max int) bool {
	if len(args) < min || (max >= 0 && len(args) > max) {
		cl.out = resp.AppendError(cl.out, fmt.Sprintf("ERR wrong number of arguments for '%s' command", strings.ToLower(name)))
		return false
	}
	return true
}

// allowed checks the connection's scope for a command.
func (c *conn) allowed(cl *call, name string, scope auth.Scope) bool {
	if scope == auth.ScopeAdmin && !c.mayAdmin || scope == auth.ScopeReserve && !c.mayReserve {
		c.s.cfg.Metrics.RESPAuthFailure("noperm")
		cl.out = resp.AppendError(cl.out, fmt.Sprintf("NOPERM this token may not run '%s': it needs the %s scope", strings.ToLower(name), scope))
		return false
	}
	return true
}

// sequenceName checks a sequence name argument and keeps it on cl.
func (c *conn) sequenceName(cl *call, arg []byte) bool {
	if err := api.ValidateSequenceName(string(arg)); err != nil {
		cl.out = resp.AppendError(cl.out, "ERR "+err.Error())
		return false
	}
	cl.name, cl.token, cl.proto = string(arg), c.token, c.proto
	return true
}

func (c *conn) reserveCommand(cl *call, name string, args [][]byte) {
	lo := 2
	if name == "INCR" {
		lo = 1
	}
	if !c.arity(cl, name, args, lo, lo) || !c.allowed(cl, name, auth.ScopeReserve) || !c.sequenceName(cl, args[0]) {
		return
	}
	cl.count, cl.op = 1, opIncr
	if name == "TICKETD.RESERVE" {
		cl.op = opReserve
	}
	if len(args) == 2 {
		n, ok := resp.ParseInt(args[1])
		if !ok {
			cl.op = opNone
			cl.out = resp.AppendError(cl.out, "ERR value is not an integer or out of range")
			return
		}
		if err := api.ValidateCount(n); err != nil {
			cl.op = opNone
			cl.out = resp.AppendError(cl.out, fmt.Sprintf("ERR %s %s: %v (ticketd IDs only grow: a count reserves that many new IDs)", strings.ToLower(name), cl.name, err))
			return
		}
		cl.count = n
	}
}

// createCommand: TICKETD.CREATE name [START n] [MAX n].
func (c *conn) createCommand(cl *call, args [][]byte) {
	const name = "TICKETD.CREATE"
	if !c.arity(cl, name, args, 1, 5) || !c.allowed(cl, name, auth.ScopeAdmin) || !c.sequenceName(cl, args[0]) {
		return
	}
	cl.start, cl.max = api.DefaultStart, api.DefaultMax
	opts := args[1:]
	for len(opts) > 0 {
		if len(opts) < 2 {
			cl.out = resp.AppendError(cl.out, fmt.Sprintf("ERR option %q needs a value: TICKETD.CREATE name [START n] [MAX n]", opts[0]))
			return
		}
		n, ok := resp.ParseInt(opts[1])
		if !ok {
			cl.out = resp.AppendError(cl.out, fmt.Sprintf("ERR value of %s is not an integer or out of range", strings.ToUpper(string(opts[0]))))
			return
		}
		switch strings.ToUpper(string(opts[0])) {
		case "START":
			cl.start = n
		case "MAX":
			cl.max = n
		default:
			cl.out = resp.AppendError(cl.out, fmt.Sprintf("ERR unknown option %q: TICKETD.CREATE name [START n] [MAX n]", opts[0]))
			return
		}
		opts = opts[2:]
	}
	if err := api.ValidateBounds(cl.start, cl.max); err != nil {
		cl.out = resp.AppendError(cl.out, "ERR "+err.Error())
		return
	}
	cl.op = opCreate
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

// authCommand: AUTH [user] token. The user name is accepted and ignored:
// the token alone decides, as a bearer token does on HTTP.
func (c *conn) authCommand(cl *call, args [][]byte) {
	if !c.arity(cl, "AUTH", args, 1, 2) {
		return
	}
	if msg := c.authenticate(string(args[len(args)-1])); msg != "" {
		cl.out = resp.AppendError(cl.out, msg)
		return
	}
	cl.out = resp.AppendSimple(cl.out, "OK")
}

// authenticate checks token and, when it is known, makes it the
// connection's; it returns the error to answer otherwise.
func (c *conn) authenticate(token string) string {
	t := c.s.cfg.Tokens
	if t == nil {
		return "ERR AUTH called without any password configured: this node runs without tokens (--dev)"
	}
	found, reserve := t.Check(token, auth.ScopeReserve)
	if !found {
		c.s.cfg.Metrics.RESPAuthFailure("wrongpass")
		return "WRONGPASS invalid username-password pair or user is disabled."
	}
	_, admin := t.Check(token, auth.ScopeAdmin)
	c.authed, c.token, c.mayReserve, c.mayAdmin = true, token, reserve, admin
	return ""
}

// helloCommand: HELLO [protover [AUTH user token] [SETNAME name]].
func (c *conn) helloCommand(cl *call, args [][]byte) {
	proto := c.proto
	if len(args) > 0 {
		v, ok := resp.ParseInt(args[0])
		if !ok {
			cl.out = resp.AppendError(cl.out, "ERR Protocol version is not an integer or out of range")
			return
		}
		if v != 2 && v != 3 {
			cl.out = resp.AppendError(cl.out, "NOPROTO unsupported protocol version")
			return
		}
		proto = int(v)
		args = args[1:]
	}
	var name []byte
	setName := false
	for len(args) > 0 {
		switch strings.ToUpper(string(args[0])) {
		case "AUTH":
			if len(args) < 3 {
				cl.out = resp.AppendError(cl.out, "ERR Syntax error in HELLO option 'auth'")
				return
			}
			if msg := c.authenticate(string(args[2])); msg != "" {
				cl.out = resp.AppendError(cl.out, msg)
				return
			}
			args = args[3:]
		case "SETNAME":
			if len(args) < 2 {
				cl.out = resp.AppendError(cl.out, "ERR Syntax error in HELLO option 'setname'")
				return
			}
			name, setName = args[1], true
			args = args[2:]
		default:
			cl.out = resp.AppendError(cl.out, fmt.Sprintf("ERR Syntax error in HELLO option '%s'", clip(args[0])))
			return
		}
	}
	if !c.authed {
		cl.out = resp.AppendError(cl.out, "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
		return
	}
	if setName {
		c.name = string(name)
	}
	c.proto = proto
	role := "replica"
	if c.s.cfg.Store.Serving() {
		role = "master"
	}
	b := resp.AppendMap(cl.out, 7, proto)
	b = resp.AppendBulkString(b, "server")
	b = resp.AppendBulkString(b, "ticketd")
	b = resp.AppendBulkString(b, "version")
	b = resp.AppendBulkString(b, c.s.cfg.Version)
	b = resp.AppendBulkString(b, "proto")
	b = resp.AppendInt(b, int64(proto))
	b = resp.AppendBulkString(b, "id")
	b = resp.AppendInt(b, c.id)
	b = resp.AppendBulkString(b, "mode")
	b = resp.AppendBulkString(b, "standalone")
	b = resp.AppendBulkString(b, "role")
	b = resp.AppendBulkString(b, role)
	b = resp.AppendBulkString(b, "modules")
	cl.out = resp.AppendArray(b, 0)
}

// clientCommand: CLIENT ID|SETNAME|GETNAME|SETINFO|INFO|NO-EVICT|NO-TOUCH,
// what client libraries send on connect.
func (c *conn) clientCommand(cl *call, args [][]byte) {
	if !c.arity(cl, "CLIENT", args, 1, -1) {
		return
	}
	sub := strings.ToUpper(string(args[0]))
	switch sub {
	case "ID":
		cl.out = resp.AppendInt(cl.out, c.id)
	case "SETNAME":
		if len(args) != 2 {
			cl.out = resp.AppendError(cl.out, "ERR wrong number of arguments for 'client|setname' command")
			return
		}
		c.name = string(args[1])
		cl.out = resp.AppendSimple(cl.out, "OK")
	case "GETNAME":
		if c.name == "" {
			cl.out = resp.AppendNull(cl.out, c.proto)
			return
		}
		cl.out = resp.AppendBulkString(cl.out, c.name)
	case "SETINFO", "NO-EVICT", "NO-TOUCH":
		cl.out = resp.AppendSimple(cl.out, "OK")
	case "INFO":
		cl.out = resp.AppendBulkString(cl.out, fmt.Sprintf("id=%d addr=%s name=%s db=0 resp=%d\n", c.id, c.nc.RemoteAddr(), c.name, c.proto))
	default:
		cl.out = resp.AppendError(cl.out, fmt.Sprintf("ERR unknown subcommand '%s'. Try CLIENT ID, SETNAME, GETNAME, SETINFO or INFO.", clip(args[0])))
	}
}

// commandSpec describes a command for COMMAND: arity as Redis counts it
// (negative: at least), flags and key positions.
type commandSpec struct {
	name              string
	arity             int
	flags             []string
	firstKey, lastKey int
}

var commandSpecs = []commandSpec{
	{"incr", 2, []string{"write", "denyoom", "fast"}, 1, 1},
	{"incrby", 3, []string{"write", "denyoom", "fast"}, 1, 1},
	{"get", 2, []string{"readonly", "fast"}, 1, 1},
	{"ticketd.reserve", 3, []string{"write", "denyoom", "fast"}, 1, 1},
	{"ticketd.create", -2, []string{"write", "denyoom"}, 1, 1},
	{"ping", -1, []string{"fast", "stale"}, 0, 0},
	{"echo", 2, []string{"fast"}, 0, 0},
	{"quit", -1, []string{"fast", "noauth"}, 0, 0},
	{"select", 2, []string{"fast", "loading", "stale"}, 0, 0},
	{"auth", -2, []string{"noscript", "loading", "stale", "fast", "noauth"}, 0, 0},
	{"hello", -1, []string{"noscript", "loading", "stale", "fast", "noauth"}, 0, 0},
	{"client", -2, []string{"noscript", "loading", "stale"}, 0, 0},
	{"command", -1, []string{"loading", "stale"}, 0, 0},
	{"info", -1, []string{"loading", "stale"}, 0, 0},
}

func appendSpec(b []byte, s commandSpec) []byte {
	b = resp.AppendArray(b, 6)
	b = resp.AppendBulkString(b, s.name)
	b = resp.AppendInt(b, int64(s.arity))
	b = resp.AppendArray(b, len(s.flags))
	for _, f := range s.flags {
		b = resp.AppendSimple(b, f)
	}
	b = resp.AppendInt(b, int64(s.firstKey))
	b = resp.AppendInt(b, int64(s.lastKey))
	step := int64(0)
	if s.firstKey > 0 {
		step = 1
	}
	return resp.AppendInt(b, step)
}

// commandCommand: COMMAND, COMMAND COUNT|LIST|INFO|DOCS, minimal: enough for
// redis-cli and client libraries that ask.
func (c *conn) commandCommand(cl *call, args [][]byte) {
	if len(args) == 0 {
		cl.out = resp.AppendArray(cl.out, len(commandSpecs))
		for _, s := range commandSpecs {
			cl.out = appendSpec(cl.out, s)
		}
		return
	}
	switch strings.ToUpper(string(args[0])) {
	case "COUNT":
		cl.out = resp.AppendInt(cl.out, int64(len(commandSpecs)))
	case "LIST":
		cl.out = resp.AppendArray(cl.out, len(commandSpecs))
		for _, s := range commandSpecs {
			cl.out = resp.AppendBulkString(cl.out, s.name)
		}
	case "INFO":
		cl.out = resp.AppendArray(cl.out, len(args)-1)
		for _, a := range args[1:] {
			if s, ok := specOf(string(a)); ok {
				cl.out = appendSpec(cl.out, s)
			} else {
				cl.out = resp.AppendNull(cl.out, c.proto)
			}
		}
	case "DOCS":
		// No documentation is served; an empty answer tells redis-cli to
		// go without hints.
		cl.out = resp.AppendMap(cl.out, 0, c.proto)
	default:
		cl.out = resp.AppendError(cl.out, fmt.Sprintf("ERR unknown subcommand '%s'. Try COMMAND COUNT, LIST, INFO or DOCS.", clip(args[0])))
	}
}

func specOf(name string) (commandSpec, bool) {
	for _, s := range commandSpecs {
		if strings.EqualFold(s.name, name) {
			return s, true
		}
	}
	return commandSpec{}, false
}

// info answers INFO [section ...]: server, clients, replication (role, as
// clients read it) and ticketd (leader, term, sequences).
func (c *conn) info(args [][]byte) string {
	want := map[string]bool{}
	for _, a := range args {
		want[strings.ToLower(string(a))] = true
	}
	all := len(want) == 0 || want["all"] || want["default"] || want["everything"]
	st := c.s.cfg.Store
	status, err := st.Status()
	serving := st.Serving()
	var b strings.Builder
	section := func(name string, lines ...string) {
		if !all && !want[strings.ToLower(name)] {
			return
		}
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString("# " + name + "\r\n")
		for _, l := range lines {
			b.WriteString(l + "\r\n")
		}
	}
	section("Server", "ticketd_version:"+c.s.cfg.Version, "redis_mode:standalone", "node:"+st.ID())
	c.s.mu.Lock()
	clients := len(c.s.conns)
	c.s.mu.Unlock()
	section("Clients", "connected_clients:"+strconv.Itoa(clients))
	role := "slave"
	if serving {
		role = "master"
	}
	leaderID, leaderAddr, _ := st.LeaderHTTPAddr()
	section("Replication", "role:"+role)
	lines := []string{
		"serving:" + boolDigit(serving),
		"leader:" + leaderID,
		"leader_http_addr:" + leaderAddr,
		"sequences:" + strconv.Itoa(st.SequenceCount()),
	}
	if err == nil {
		lines = append(lines, "state:"+status.State, "term:"+strconv.FormatUint(status.Term, 10),
			"commit_index:"+strconv.FormatUint(status.CommitIndex, 10),
			"applied_index:"+strconv.FormatUint(status.AppliedIndex, 10))
		if status.NotReady != "" {
			lines = append(lines, "not_ready:"+status.NotReady)
		}
	}
	section("Ticketd", lines...)
	return b.String()
}

func boolDigit(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
