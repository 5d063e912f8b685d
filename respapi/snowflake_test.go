package respapi_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/auth"
	"github.com/ticketd/ticketd/domain"
	"github.com/ticketd/ticketd/internal/testcluster"
	"github.com/ticketd/ticketd/respapi"
)

// snowflakeStore is a node that does not lead and whose leader cannot be
// reached: whatever the front forwards fails, so an answered
// TICKETD.SNOWFLAKE was made here. Namespaces named in errs fail with
// their error; onTake, if set, runs before each call's IDs are made, and an
// error of it is the call's.
type snowflakeStore struct {
	counterStore
	errs   map[string]error
	calls  atomic.Int64
	onTake func(call int64) error
}

func (s *snowflakeStore) Serving() bool { return false }
func (s *snowflakeStore) LeaderHTTPAddr() (string, string, bool) {
	return "n9", "127.0.0.1:1", true
}

func (s *snowflakeStore) SnowflakeIDs(ctx context.Context, ns string, count int) (domain.SnowflakeIDs, error) {
	n := s.calls.Add(1)
	if s.onTake != nil {
		if err := s.onTake(n); err != nil {
			return domain.SnowflakeIDs{}, err
		}
	}
	if err := s.errs[ns]; err != nil {
		return domain.SnowflakeIDs{}, err
	}
	return s.counterStore.SnowflakeIDs(ctx, ns, count)
}

// startFront serves the front over st on a local port.
func startFront(t *testing.T, st respapi.Store, tokens *auth.Tokens) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := respapi.New(respapi.Config{Store: st, Tokens: tokens, RequestTimeout: 5 * time.Second})
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Close)
	return ln.Addr().String()
}

// idsOf reads an array reply of integers ("[:1 :2]") and checks that it
// holds n IDs, each above the one before and above after.
func idsOf(t *testing.T, reply string, n int, after int64) []int64 {
	t.Helper()
	if !strings.HasPrefix(reply, "[") || !strings.HasSuffix(reply, "]") {
		t.Fatalf("answer %q, want an array of %d IDs", reply, n)
	}
	fields := strings.Fields(strings.Trim(reply, "[]"))
	if len(fields) != n {
		t.Fatalf("answer of %d elements, want %d: %.200s", len(fields), n, reply)
	}
	ids := make([]int64, n)
	for i, f := range fields {
		id, err := strconv.ParseInt(strings.TrimPrefix(f, ":"), 10, 64)
		if !strings.HasPrefix(f, ":") || err != nil {
			t.Fatalf("element %d is %q, want an integer reply", i, f)
		}
		if id <= after {
			t.Fatalf("element %d is %d, not above %d: the IDs must strictly increase", i, id, after)
		}
		ids[i], after = id, id
	}
	return ids
}

// TestSnowflake_ServedOnAFollower_NeverForwarded: on a node that does not
// lead and cannot reach its leader, TICKETD.SNOWFLAKE answers its IDs (any
// case of the name, count 1 unless given, up to api.MaxSnowflakeIDs) while
// an INCR, which goes to the leader, fails.
func TestSnowflake_ServedOnAFollower_NeverForwarded(t *testing.T) {
	st := &snowflakeStore{}
	c := dialRaw(t, startFront(t, st, nil))
	cmds := []string{
		"TICKETD.SNOWFLAKE orders",
		"ticketd.snowflake orders 3",
		"INCR orders",
		"Ticketd.Snowflake orders " + strconv.Itoa(api.MaxSnowflakeIDs),
	}
	got := c.pipeline(cmds...)
	last := idsOf(t, got[0], 1, 0)[0]
	ids := idsOf(t, got[1], 3, last)
	if !strings.HasPrefix(got[2], "-TRYAGAIN") && !strings.HasPrefix(got[2], "-ERR") {
		t.Fatalf("INCR with the leader unreachable = %q, want an error", got[2])
	}
	idsOf(t, got[3], api.MaxSnowflakeIDs, ids[2])
	if n := st.calls.Load(); n != 3 {
		t.Fatalf("the store made IDs %d times, want 3", n)
	}
}

// TestSnowflake_BadInputAndEachProblemKind_NameTheNamespace: arity, count
// and name are refused before the store is asked; each error of the
// Snowflake service is a Redis error whose code names its kind and whose
// message names the namespace, clock-behind with the milliseconds behind
// as its second word.
func TestSnowflake_BadInputAndEachProblemKind_NameTheNamespace(t *testing.T) {
	st := &snowflakeStore{errs: map[string]error{
		"missing": domain.Kindf(domain.ErrNotFound, `namespace "missing" not found`),
		"behind": domain.Wrap(domain.ErrClockBehind, &domain.ClockBehindError{Namespace: "behind", BehindMs: 1200,
			Message: `node n1: namespace "behind": clock moved backwards: 1.2s behind`}),
		"full":    domain.Kindf(domain.ErrWorkersExhausted, `node n1 could not take a worker id of namespace "full": every one is held or resting`),
		"nolease": domain.Kindf(domain.ErrNoWorkerLease, `node n1 holds no valid worker-id lease in namespace "nolease"`),
		"spent":   domain.Kindf(domain.ErrTimestampExhausted, `namespace "spent": timestamp bits exhausted`),
		"down":    domain.Kindf(domain.ErrUnavailable, `namespace "down": this node is shutting down`),
		"broken":  fmt.Errorf(`namespace "broken": disk on fire`),
	}}
	c := dialRaw(t, startFront(t, st, nil))
	for _, tc := range []struct{ cmd, want string }{
		{"TICKETD.SNOWFLAKE", "-ERR wrong number of arguments for 'ticketd.snowflake' command"},
		{"TICKETD.SNOWFLAKE orders 1 2", "-ERR wrong number of arguments for 'ticketd.snowflake' command"},
		{"TICKETD.SNOWFLAKE orders ten", "-ERR value is not an integer or out of range"},
		{"TICKETD.SNOWFLAKE orders 0", "-ERR ticketd.snowflake orders: count must be between 1 and 10000, got 0"},
		{"TICKETD.SNOWFLAKE orders 10001", "-ERR ticketd.snowflake orders: count must be between 1 and 10000, got 10001"},
		{"TICKETD.SNOWFLAKE orders -1", "-ERR ticketd.snowflake orders: count must be between 1 and 10000, got -1"},
		{"TICKETD.SNOWFLAKE bad/name", `-ERR ticketd.snowflake: namespace "bad/name": sequence name has '/' at byte 3*`},
		{"TICKETD.SNOWFLAKE missing", `-NOTFOUND namespace "missing" does not exist; create it first: ticketd namespaces missing --create*`},
		{"TICKETD.SNOWFLAKE behind 5", `-CLOCKBEHIND 1200 ms: node n1: namespace "behind": clock moved backwards*`},
		{"TICKETD.SNOWFLAKE full", `-WORKERSEXHAUSTED node n1 could not take a worker id of namespace "full"*`},
		{"TICKETD.SNOWFLAKE nolease", `-NOWORKERLEASE node n1 holds no valid worker-id lease in namespace "nolease"`},
		{"TICKETD.SNOWFLAKE spent", `-TIMESTAMPEXHAUSTED namespace "spent": timestamp bits exhausted`},
		{"TICKETD.SNOWFLAKE down", `-TRYAGAIN namespace "down": this node is shutting down`},
		{"TICKETD.SNOWFLAKE broken", `-ERR internal error: namespace "broken": disk on fire`},
	} {
		c.send(tc.cmd + "\r\n")
		c.expect(tc.want)
	}
	// Seven asked the store: the refused input never reached it.
	if n := st.calls.Load(); n != 7 {
		t.Fatalf("the store was asked %d times, want 7", n)
	}
}

// TestSnowflake_BeforeAuth_Refused: with tokens, the command needs an
// authenticated connection, and the reserve scope serves it.
func TestSnowflake_BeforeAuth_Refused(t *testing.T) {
	st := &snowflakeStore{}
	c := dialRaw(t, startFront(t, st, testcluster.Tokens(t, adminToken, reserveToken)))
	got := c.pipeline("TICKETD.SNOWFLAKE orders", "AUTH "+reserveToken, "TICKETD.SNOWFLAKE orders 2")
	if got[0] != "-NOAUTH Authentication required." || got[1] != "+OK" {
		t.Fatalf("answers %q", got)
	}
	idsOf(t, got[2], 2, 0)
	if n := st.calls.Load(); n != 1 {
		t.Fatalf("the store was asked %d times, want 1", n)
	}
}

// TestSnowflake_Pipeline_InOrderAmongOtherCommands: a pipeline mixing
// TICKETD.SNOWFLAKE with reservations and connection commands is answered
// in the order sent, each answer its own command's.
func TestSnowflake_Pipeline_InOrderAmongOtherCommands(t *testing.T) {
	st := &counterStore{}
	c := dialRaw(t, startFront(t, st, nil))
	cmds := []string{"INCRBY orders 5", "TICKETD.SNOWFLAKE photos 2", "PING", "INCR orders", "TICKETD.SNOWFLAKE photos", "ECHO x", "COMMAND INFO ticketd.snowflake"}
	got := c.pipeline(cmds...)
	// One counter makes both kinds here: the reservations before and after
	// the Snowflake commands run as one, after them.
	a := idsOf(t, got[1], 2, 0)
	b := idsOf(t, got[4], 1, a[1])
	if got[0] != ":"+strconv.FormatInt(b[0]+5, 10) || got[3] != ":"+strconv.FormatInt(b[0]+6, 10) {
		t.Fatalf("INCRBY 5, INCR = %q, %q; want :%d, :%d", got[0], got[3], b[0]+5, b[0]+6)
	}
	if got[2] != "+PONG" || got[5] != "$x" {
		t.Fatalf("PING, ECHO = %q, %q", got[2], got[5])
	}
	if got[6] != "[[$ticketd.snowflake :-2 [+write +fast] :1 :1 :1]]" {
		t.Fatalf("COMMAND INFO ticketd.snowflake = %q", got[6])
	}
}

// TestSnowflake_LargeAnswers_BoundTheBatch: a pipeline of many commands of
// api.MaxSnowflakeIDs IDs is not read as one batch, whose answers would all
// be held before the first is written: the second command is asked of the
// store only after the first one's answer has reached the client.
func TestSnowflake_LargeAnswers_BoundTheBatch(t *testing.T) {
	firstRead := make(chan struct{})
	st := &snowflakeStore{}
	st.onTake = func(call int64) error {
		if call == 2 {
			select {
			case <-firstRead:
			case <-time.After(3 * time.Second):
				return fmt.Errorf("the second command ran before the first one's answer was written")
			}
		}
		return nil
	}
	c := dialRaw(t, startFront(t, st, nil))
	cmd := "TICKETD.SNOWFLAKE orders " + strconv.Itoa(api.MaxSnowflakeIDs)
	c.send(cmd + "\r\n" + cmd + "\r\n" + cmd + "\r\n")
	first := idsOf(t, c.reply(), api.MaxSnowflakeIDs, 0)
	close(firstRead)
	second := idsOf(t, c.reply(), api.MaxSnowflakeIDs, first[len(first)-1])
	idsOf(t, c.reply(), api.MaxSnowflakeIDs, second[len(second)-1])
}

// BenchmarkSnowflake is TICKETD.SNOWFLAKE ns 1 over one connection, P
// commands sent before the answers are read, against a counter: the
// front's own cost of the command, beside BenchmarkPipeline's INCRBY.
func BenchmarkSnowflake(b *testing.B) {
	for _, p := range []int{1, 16} {
		b.Run(fmt.Sprintf("P=%d", p), func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			srv := respapi.New(respapi.Config{Store: &counterStore{}})
			go func() { _ = srv.Serve(ln) }()
			b.Cleanup(srv.Close)
			conn, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			batch := []byte(strings.Repeat("*2\r\n$17\r\nTICKETD.SNOWFLAKE\r\n$6\r\norders\r\n", p))
			r := bufio.NewReader(conn)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i += p {
				if _, err := conn.Write(batch); err != nil {
					b.Fatal(err)
				}
				for range p {
					// "*1" then the ID.
					for range 2 {
						if _, err := r.ReadSlice('\n'); err != nil {
							b.Fatal(err)
						}
					}
				}
			}
		})
	}
}
