package respapi_test

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/testcluster"
	"github.com/ticketd/ticketd/server"
)

// rawConn is a connection to a front that writes bytes and reads answers
// as they come, for what a client library would never send.
type rawConn struct {
	t  *testing.T
	nc net.Conn
	r  *bufio.Reader
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	return &rawConn{t: t, nc: nc, r: bufio.NewReader(nc)}
}

func (c *rawConn) send(s string) {
	c.t.Helper()
	if _, err := io.WriteString(c.nc, s); err != nil {
		c.t.Fatal(err)
	}
}

// expect reads n lines and compares them, CRLF stripped.
func (c *rawConn) expect(want ...string) {
	c.t.Helper()
	for _, w := range want {
		line, err := c.r.ReadString('\n')
		if err != nil {
			c.t.Fatalf("reading %q: %v", w, err)
		}
		if got := strings.TrimRight(line, "\r\n"); got != w && !(strings.HasSuffix(w, "*") && strings.HasPrefix(got, strings.TrimSuffix(w, "*"))) {
			c.t.Fatalf("got %q, want %q", got, w)
		}
	}
}

// expectClosed checks that the server closed the connection.
func (c *rawConn) expectClosed() {
	c.t.Helper()
	if line, err := c.r.ReadString('\n'); err == nil {
		c.t.Fatalf("the connection is still open: read %q", line)
	}
}

func oneNode(t *testing.T, tweak func(cfg *server.Config)) *testcluster.Node {
	t.Helper()
	tc := testcluster.New(t, 1, func(id string, cfg *server.Config) {
		cfg.RESPAddr = "127.0.0.1:0"
		if tweak != nil {
			tweak(cfg)
		}
	})
	tc.CreateSequence("orders", nil)
	return tc.Leader(10 * time.Second)
}

// TestProtocol_PipelineInlineAndQuit: inline commands and arrays mix in
// one pipeline, are answered in order, and nothing after QUIT is.
func TestProtocol_PipelineInlineAndQuit(t *testing.T) {
	n := oneNode(t, nil)
	c := dialRaw(t, n.Srv.RESPAddr())
	c.send("PING\r\n*2\r\n$4\r\nECHO\r\n$5\r\nhe\r\nl\r\nincrby orders 5\r\n*3\r\n$15\r\nticketd.reserve\r\n$6\r\norders\r\n$1\r\n3\r\nSELECT 0\r\nSELECT 1\r\nQUIT\r\nINCR orders\r\n")
	c.expect("+PONG", "$5", "he", "l", ":5", "*2", ":6", ":8", "+OK", "-ERR DB index is out of range*", "+OK")
	c.expectClosed()
}

// TestProtocol_MalformedOrOversized_ErrorAndClose: a frame that breaks the
// protocol or the limits is answered with a protocol error and the
// connection closed, before anything huge is read or allocated.
func TestProtocol_MalformedOrOversized_ErrorAndClose(t *testing.T) {
	n := oneNode(t, nil)
	for _, tc := range []struct{ name, in, want string }{
		{"huge bulk", "*2\r\n$4\r\nECHO\r\n$2147483647\r\n", "-ERR Protocol error: argument of 2147483647 bytes*"},
		{"too many args", "*100000\r\n", "-ERR Protocol error: command has 100000 arguments*"},
		{"bad multibulk length", "*x\r\n", "-ERR Protocol error: invalid multibulk length*"},
		{"nested array", "*1\r\n*1\r\n$1\r\na\r\n", "-ERR Protocol error: expected '$'*"},
		{"negative bulk", "*1\r\n$-5\r\n", "-ERR Protocol error: invalid bulk length*"},
		{"long inline line", strings.Repeat("x", 70<<10), "-ERR Protocol error: line longer than*"},
		{"no CRLF after bulk", "*1\r\n$4\r\nPINGxx", "-ERR Protocol error: bulk string of 4 bytes not followed by CRLF"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dialRaw(t, n.Srv.RESPAddr())
			c.send("PING\r\n")
			c.expect("+PONG")
			c.send(tc.in)
			c.expect(tc.want)
			c.expectClosed()
		})
	}
}

// TestProtocol_BeforeAuth_OnlyAuthHelloPingQuit: with tokens, a connection
// that has not authenticated is refused everything else.
func TestProtocol_BeforeAuth_OnlyAuthHelloPingQuit(t *testing.T) {
	n := authNode(t)
	c := dialRaw(t, n.Srv.RESPAddr())
	c.send("PING\r\nINCR orders\r\nGET orders\r\nINFO\r\nCLIENT ID\r\nECHO x\r\nHELLO 3\r\nAUTH nobody " + adminToken + "x\r\n")
	c.expect("+PONG", "-NOAUTH Authentication required.", "-NOAUTH Authentication required.", "-NOAUTH Authentication required.",
		"-NOAUTH Authentication required.", "-NOAUTH Authentication required.", "-NOAUTH HELLO must be called*", "-WRONGPASS*")
	c.send("AUTH default " + reserveToken + "\r\nINCR orders\r\nTICKETD.CREATE other\r\nHELLO 3 AUTH x " + adminToken + "\r\n")
	c.expect("+OK", ":1", "-NOPERM this token may not run 'ticketd.create': it needs the admin scope")
	c.expect("%7", "$6", "server", "$7", "ticketd", "*") // the rest of HELLO 3's map
}

func authNode(t *testing.T) *testcluster.Node {
	t.Helper()
	tc := newClusterN(t, 1, true)
	tc.CreateSequence("orders", nil)
	return tc.Leader(10 * time.Second)
}

// TestProtocol_MaxConns: a connection past the bound is told and closed,
// as Redis does; those within it are served.
func TestProtocol_MaxConns(t *testing.T) {
	n := oneNode(t, func(cfg *server.Config) { cfg.RESPMaxConns = 2 })
	a, b := dialRaw(t, n.Srv.RESPAddr()), dialRaw(t, n.Srv.RESPAddr())
	a.send("PING\r\n")
	b.send("PING\r\n")
	a.expect("+PONG")
	b.expect("+PONG")
	c := dialRaw(t, n.Srv.RESPAddr())
	c.expect("-ERR max number of clients reached")
	c.expectClosed()
}
