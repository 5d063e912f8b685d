package respapi_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/testcluster"
)

const wrongToken = "wrong-token-0123456789abcdef"

// reply reads one whole answer: a line, or an array as "[a b]" of its
// elements' replies.
func (c *rawConn) reply() string {
	c.t.Helper()
	line, err := c.r.ReadString('\n')
	if err != nil {
		c.t.Fatalf("reading an answer: %v", err)
	}
	line = strings.TrimRight(line, "\r\n")
	switch {
	case strings.HasPrefix(line, "*"):
		n, err := strconv.Atoi(line[1:])
		if err != nil {
			c.t.Fatalf("array header %q", line)
		}
		parts := make([]string, n)
		for i := range parts {
			parts[i] = c.reply()
		}
		return "[" + strings.Join(parts, " ") + "]"
	case strings.HasPrefix(line, "$") && line != "$-1":
		body, err := c.r.ReadString('\n')
		if err != nil {
			c.t.Fatalf("reading a bulk string: %v", err)
		}
		return "$" + strings.TrimRight(body, "\r\n")
	}
	return line
}

// pipeline sends every command at once (one write, so that the front reads
// them as one batch) and reads one answer per command.
func (c *rawConn) pipeline(cmds ...string) []string {
	c.t.Helper()
	c.send(strings.Join(cmds, "\r\n") + "\r\n")
	out := make([]string, len(cmds))
	for i := range cmds {
		out[i] = c.reply()
	}
	return out
}

// checkAnswers compares answers with patterns: "id" is an integer reply
// above the last ID answered before, "id/n" the last of n IDs all above it
// (INCRBY n), "range/n" an array [first last] of n IDs above it, "prefix*"
// an answer starting with prefix, anything else the exact answer.
func checkAnswers(t *testing.T, cmds, got, want []string) {
	t.Helper()
	last := int64(0)
	for i, w := range want {
		g := got[i]
		fail := func(why string) {
			t.Helper()
			t.Fatalf("answer %d to %q = %q, want %s\nall answers: %q", i, cmds[i], g, why, got)
		}
		switch {
		case w == "id" || strings.HasPrefix(w, "id/"):
			count := int64(1)
			if w != "id" {
				count, _ = strconv.ParseInt(strings.TrimPrefix(w, "id/"), 10, 64)
			}
			n, err := strconv.ParseInt(strings.TrimPrefix(g, ":"), 10, 64)
			if !strings.HasPrefix(g, ":") || err != nil || n-count+1 <= last {
				fail("the last of " + strconv.FormatInt(count, 10) + " IDs above " + strconv.FormatInt(last, 10) + " (answers grow in the order sent)")
			}
			last = n
		case strings.HasPrefix(w, "range/"):
			count, _ := strconv.ParseInt(strings.TrimPrefix(w, "range/"), 10, 64)
			var first, end int64
			parts := strings.Fields(strings.Trim(g, "[]"))
			if len(parts) == 2 {
				first, _ = strconv.ParseInt(strings.TrimPrefix(parts[0], ":"), 10, 64)
				end, _ = strconv.ParseInt(strings.TrimPrefix(parts[1], ":"), 10, 64)
			}
			if len(parts) != 2 || first <= last || end-first+1 != count {
				fail("a range of " + w[len("range/"):] + " IDs above " + strconv.FormatInt(last, 10))
			}
			last = end
		case strings.HasSuffix(w, "*"):
			if !strings.HasPrefix(g, strings.TrimSuffix(w, "*")) {
				fail(strconv.Quote(w))
			}
		case g != w:
			fail(strconv.Quote(w))
		}
	}
}

// TestPipeline_AuthBetweenReservations_InOrderUnderEachPositionsAuth: in a
// pipeline whose AUTHs switch tokens, or fail, between reservations of one
// sequence, every answer is the one its command gets at its position: the
// IDs grow in the order sent (the reservations on either side of an AUTH
// are not run at once), and a command after a failed AUTH is refused, never
// run with the token authenticated before it. On the leader and through a
// follower, which forwards with the token.
func TestPipeline_AuthBetweenReservations_InOrderUnderEachPositionsAuth(t *testing.T) {
	tc := newCluster(t, true)
	tc.CreateSequence("orders", nil)
	leader := tc.Leader(10 * time.Second)
	for _, n := range []*testcluster.Node{leader, follower(tc, leader)} {
		t.Run(n.ID, func(t *testing.T) {
			for _, p := range []struct {
				name       string
				cmds, want []string
			}{
				{
					"the issue's example",
					[]string{"AUTH " + reserveToken, "INCRBY orders 1", "AUTH " + wrongToken, "INCRBY orders 1"},
					[]string{"+OK", "id", "-WRONGPASS*", "-NOAUTH*"},
				},
				{
					"tokens switching between reservations of one sequence",
					[]string{
						"AUTH default " + adminToken, "INCR orders",
						"AUTH default " + reserveToken, "INCR orders",
						"AUTH default " + adminToken, "INCRBY orders 5",
						"AUTH default " + reserveToken, "TICKETD.RESERVE orders 3", "INCR orders",
						"HELLO 2 AUTH default " + adminToken, "INCR orders",
						"AUTH default " + wrongToken, "INCR orders", "GET orders", "TICKETD.CREATE other",
						"AUTH default " + reserveToken, "INCR orders", "TICKETD.RESERVE orders 2",
					},
					[]string{
						"+OK", "id",
						"+OK", "id",
						"+OK", "id/5",
						"+OK", "range/3", "id",
						"[$server $ticketd*", "id", // HELLO 2's map, an array in RESP2
						"-WRONGPASS*", "-NOAUTH*", "-NOAUTH*", "-NOAUTH*",
						"+OK", "id", "range/2",
					},
				},
			} {
				t.Run(p.name, func(t *testing.T) {
					c := dialRaw(t, n.Srv.RESPAddr())
					got := c.pipeline(p.cmds...)
					checkAnswers(t, p.cmds, got, p.want)
				})
			}
		})
	}
}

// TestPipeline_AuthToLesserOrWrongToken_NoEarlierScope: a command after an
// AUTH that switches to a token of lesser scope, or that fails, is never run
// with the scope of the token before it, whatever runs at once with what: a
// create is refused and the sequence is not created. On the leader and
// through a follower.
func TestPipeline_AuthToLesserOrWrongToken_NoEarlierScope(t *testing.T) {
	tc := newCluster(t, true)
	tc.CreateSequence("orders", nil)
	leader := tc.Leader(10 * time.Second)
	for _, n := range []*testcluster.Node{leader, follower(tc, leader)} {
		t.Run(n.ID, func(t *testing.T) {
			a, b, c := "made-a-"+n.ID, "made-b-"+n.ID, "made-c-"+n.ID
			cmds := []string{
				"AUTH " + adminToken, "TICKETD.CREATE " + a,
				"AUTH " + reserveToken, "TICKETD.CREATE " + b, "INCR orders",
				"AUTH " + adminToken, "AUTH " + wrongToken, "TICKETD.CREATE " + c, "INCR orders",
				"AUTH " + reserveToken, "GET " + a, "GET " + b, "GET " + c,
			}
			want := []string{
				"+OK", ":1",
				"+OK", "-NOPERM*", "id",
				"+OK", "-WRONGPASS*", "-NOAUTH*", "-NOAUTH*",
				"+OK", "$0", "$-1", "$-1", // a exists, nothing reserved yet; b and c were never created
			}
			checkAnswers(t, cmds, dialRaw(t, n.Srv.RESPAddr()).pipeline(cmds...), want)
		})
	}
}
