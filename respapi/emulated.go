package respapi

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ticketd/ticketd/resp"
)

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
	// Not readonly though it writes no key: each call answers new IDs, so a
	// client must not send it to a replica or retry it as a read.
	{"ticketd.snowflake", -2, []string{"write", "fast"}, 1, 1},
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
// clients read it) and ticketd (leader, term, sequences, this node's
// Snowflake leases).
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
		// This node's own worker-id lease per namespace, in the form of
		// Redis's keyspace lines (db0:keys=1,expires=0).
		for _, sf := range status.Snowflake {
			lines = append(lines, fmt.Sprintf("snowflake_%s:serving=%s,worker_id=%d,lease_remaining_ms=%d,issued=%d",
				sf.Namespace, boolDigit(sf.Serving), sf.WorkerID, sf.LeaseRemaining.Milliseconds(), sf.Issued))
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
