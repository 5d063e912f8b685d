package respapi

import (
	"fmt"
	"strings"

	"github.com/ticketd/ticketd/auth"
	"github.com/ticketd/ticketd/resp"
)

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
// connection's; it returns the error to answer otherwise. A refused token
// ends the connection's authentication, where Redis keeps the user of the
// AUTH before: a client that switches to a lesser token and mistypes it
// must not go on with the greater one.
func (c *conn) authenticate(token string) string {
	t := c.s.cfg.Tokens
	if t == nil {
		return "ERR AUTH called without any password configured: this node runs without tokens (--dev)"
	}
	found, reserve := t.Check(token, auth.ScopeReserve)
	if !found {
		c.authed, c.token, c.mayReserve, c.mayAdmin = false, "", false, false
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
