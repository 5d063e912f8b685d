package respapi

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/auth"
	"github.com/ticketd/ticketd/resp"
)

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
	case "TICKETD.SNOWFLAKE":
		return "TICKETD.SNOWFLAKE"
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
	case "TICKETD.SNOWFLAKE":
		c.snowflakeCommand(cl, args)
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
	b.WriteString("(ticketd serves INCR, INCRBY, GET, TICKETD.RESERVE, TICKETD.CREATE and TICKETD.SNOWFLAKE; see COMMAND)")
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
	// Creation refuses the dot segments "." and "..", which every other
	// command accepts: sequences of that name from earlier releases exist.
	if err := api.ValidateNewSequenceName(cl.name); err != nil {
		cl.out = resp.AppendError(cl.out, "ERR "+err.Error())
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

// snowflakeCommand: TICKETD.SNOWFLAKE ns [count], count Snowflake IDs of the
// namespace (1 unless given) made by this node's own generator.
func (c *conn) snowflakeCommand(cl *call, args [][]byte) {
	const name = "TICKETD.SNOWFLAKE"
	if !c.arity(cl, name, args, 1, 2) || !c.allowed(cl, name, auth.ScopeReserve) {
		return
	}
	ns := string(args[0])
	if err := api.ValidateSequenceName(ns); err != nil {
		cl.out = resp.AppendError(cl.out, fmt.Sprintf("ERR ticketd.snowflake: namespace %q: %v", ns, err))
		return
	}
	count := int64(1)
	if len(args) == 2 {
		n, ok := resp.ParseInt(args[1])
		if !ok {
			cl.out = resp.AppendError(cl.out, "ERR value is not an integer or out of range")
			return
		}
		if n < 1 || n > api.MaxSnowflakeIDs {
			cl.out = resp.AppendError(cl.out, fmt.Sprintf("ERR ticketd.snowflake %s: count must be between 1 and %d, got %d", ns, api.MaxSnowflakeIDs, n))
			return
		}
		count = n
	}
	cl.name, cl.count, cl.op = ns, count, opSnowflake
}

// snowflakeAnswerBytes is about what one ID of a TICKETD.SNOWFLAKE answer
// takes (":" and 19 digits and CRLF), for bounding a batch's answers.
const snowflakeAnswerBytes = 22

// answerWeight is the bytes a command's answer may take beyond its
// arguments' own: a TICKETD.SNOWFLAKE of many IDs answers far more than it
// was sent, and a batch holds every answer until the last is made.
func answerWeight(args [][]byte) int {
	if len(args) != 3 || !bytes.EqualFold(args[0], []byte("TICKETD.SNOWFLAKE")) {
		return 0
	}
	n, ok := resp.ParseInt(args[2])
	if !ok || n < 1 || n > api.MaxSnowflakeIDs {
		return 0
	}
	return int(n) * snowflakeAnswerBytes
}
