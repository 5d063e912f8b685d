package respapi_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ticketd/ticketd/auth"
	"github.com/ticketd/ticketd/internal/testcluster"
	"github.com/ticketd/ticketd/server"
)

const (
	adminToken   = "admin-token-0123456789abcdef"
	reserveToken = "reserve-token-0123456789abcdef"
)

// go-redis logs every failed dial; the failover test makes many on purpose.
func init() { redis.SetLogger(quiet{}) }

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// newCluster starts three nodes with the Redis-protocol front on, with
// tokens (auth) or without (dev).
func newCluster(t *testing.T, withAuth bool) *testcluster.Cluster {
	t.Helper()
	return newClusterN(t, 3, withAuth)
}

func newClusterN(t *testing.T, n int, withAuth bool) *testcluster.Cluster {
	t.Helper()
	var tokens *auth.Tokens
	opts := testcluster.Options{}
	if withAuth {
		tokens = testcluster.Tokens(t, adminToken, reserveToken)
		opts.Token = adminToken
	}
	opts.Tweak = func(id string, cfg *server.Config) {
		cfg.Tokens = tokens
		cfg.RESPAddr = "127.0.0.1:0"
	}
	return testcluster.NewWithOptions(t, n, opts)
}

// client is a go-redis client of node n's front.
func client(t *testing.T, n *testcluster.Node, password string, protocol int) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{
		Addr: n.Srv.RESPAddr(), Password: password, Protocol: protocol,
		MaxRetries: -1, DialTimeout: 2 * time.Second, ReadTimeout: 10 * time.Second,
	})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func follower(tc *testcluster.Cluster, leader *testcluster.Node) *testcluster.Node {
	for _, n := range tc.Running() {
		if n != leader {
			return n
		}
	}
	return nil
}

func wantErr(t *testing.T, what string, err error, prefix string) {
	t.Helper()
	if err == nil || !strings.HasPrefix(err.Error(), prefix) {
		t.Fatalf("%s: got error %v, want one starting with %q", what, err, prefix)
	}
}

func TestGoRedis_AuthScopesAndErrors(t *testing.T) {
	tc := newCluster(t, true)
	ctx := context.Background()
	leader := tc.Leader(10 * time.Second)
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			seq := fmt.Sprintf("orders%d", proto)
			anon := client(t, leader, "", proto)
			if got, err := anon.Ping(ctx).Result(); err != nil || got != "PONG" {
				t.Fatalf("PING before AUTH = %q, %v; want PONG", got, err)
			}
			wantErr(t, "INCR before AUTH", anon.Incr(ctx, seq).Err(), "NOAUTH")
			wantErr(t, "AUTH with a wrong token", anon.Do(ctx, "AUTH", "not-a-token-of-this-cluster").Err(), "WRONGPASS")
			wrong := client(t, leader, "not-a-token-of-this-cluster", proto)
			wantErr(t, "a client with a wrong password", wrong.Incr(ctx, seq).Err(), "WRONGPASS")

			for _, n := range tc.Running() {
				res := client(t, n, reserveToken, proto)
				wantErr(t, "TICKETD.CREATE with the reserve scope on "+n.ID, res.Do(ctx, "TICKETD.CREATE", seq).Err(), "NOPERM")
				wantErr(t, "INCR of a missing sequence on "+n.ID, res.Incr(ctx, seq).Err(), "NOTFOUND")
				if _, err := res.Get(ctx, seq).Result(); !errors.Is(err, redis.Nil) {
					t.Fatalf("GET of a missing sequence on %s: %v, want nil", n.ID, err)
				}
			}
			adm := client(t, follower(tc, leader), adminToken, proto)
			if n, err := adm.Do(ctx, "TICKETD.CREATE", seq).Int64(); err != nil || n != 1 {
				t.Fatalf("TICKETD.CREATE through a follower = %d, %v; want 1 (created)", n, err)
			}
			if n, err := adm.Do(ctx, "TICKETD.CREATE", seq).Int64(); err != nil || n != 0 {
				t.Fatalf("TICKETD.CREATE again = %d, %v; want 0 (exists with the same settings)", n, err)
			}
			wantErr(t, "TICKETD.CREATE with other settings", adm.Do(ctx, "TICKETD.CREATE", seq, "MAX", 99).Err(), "CONFLICT")

			var last int64
			for i, n := range append(tc.Running(), tc.Running()...) {
				res := client(t, n, reserveToken, proto)
				got, err := res.Incr(ctx, seq).Result()
				if err != nil || got <= last {
					t.Fatalf("INCR #%d on %s = %d, %v; want more than %d", i, n.ID, got, err, last)
				}
				last = got
				if got, err = res.IncrBy(ctx, seq, 1000).Result(); err != nil || got < last+1000 {
					t.Fatalf("INCRBY 1000 on %s = %d, %v; want at least %d", n.ID, got, err, last+1000)
				}
				last = got
				r, err := res.Do(ctx, "TICKETD.RESERVE", seq, 10).Int64Slice()
				if err != nil || len(r) != 2 || r[0] <= last || r[1] != r[0]+9 {
					t.Fatalf("TICKETD.RESERVE 10 on %s = %v, %v; want [first, first+9] above %d", n.ID, r, err, last)
				}
				last = r[1]
				mark, err := res.Get(ctx, seq).Int64()
				if err != nil || mark < last {
					t.Fatalf("GET on %s = %d, %v; want the high-water mark, at least %d", n.ID, mark, err, last)
				}
				wantErr(t, "INCRBY 0", res.IncrBy(ctx, seq, 0).Err(), "ERR")
				wantErr(t, "INCRBY not a number", res.Do(ctx, "INCRBY", seq, "ten").Err(), "ERR value is not an integer")
				wantErr(t, "an unknown command", res.Do(ctx, "SET", seq, 1).Err(), "ERR unknown command 'SET'")
				wantErr(t, "a bad sequence name", res.Incr(ctx, "no spaces").Err(), "ERR sequence name")
			}

			for _, n := range tc.Running() {
				info, err := client(t, n, reserveToken, proto).Info(ctx).Result()
				role := "role:slave"
				if n == leader {
					role = "role:master"
				}
				// This subtest's first sequence, and RESP2's two before it
				// (a follower's count may lag its leader's).
				count := fmt.Sprintf("sequences:%d\r\n", 2*proto-3)
				if n != leader {
					count = "sequences:"
				}
				if err != nil || !strings.Contains(info, role+"\r\n") || !strings.Contains(info, "leader:"+leader.ID+"\r\n") ||
					!strings.Contains(info, count) {
					t.Fatalf("INFO on %s: %v\n%s", n.ID, err, info)
				}
			}

			small := seq + "-small"
			if err := adm.Do(ctx, "TICKETD.CREATE", small, "START", 1, "MAX", 10).Err(); err != nil {
				t.Fatal(err)
			}
			res := client(t, follower(tc, leader), reserveToken, proto)
			if got, err := res.IncrBy(ctx, small, 8).Result(); err != nil || got != 8 {
				t.Fatalf("INCRBY 8 of a 10-ID sequence = %d, %v; want 8", got, err)
			}
			wantErr(t, "INCRBY past the maximum", res.IncrBy(ctx, small, 5).Err(), "EXHAUSTED")
		})
	}
}

// TestGoRedis_Pipeline_AnswersGrowInOrder sends pipelines that mix two
// sequences, reads and connection commands through the leader and a
// follower: each sequence's answers grow in the order sent, and a GET is
// never below an INCR sent before it.
func TestGoRedis_Pipeline_AnswersGrowInOrder(t *testing.T) {
	tc := newCluster(t, false)
	ctx := context.Background()
	tc.CreateSequence("a", nil)
	tc.CreateSequence("b", nil)
	leader := tc.Leader(10 * time.Second)
	var mu sync.Mutex
	seen := map[string][][2]int64{}
	for _, n := range []*testcluster.Node{leader, follower(tc, leader)} {
		c := client(t, n, "", 3)
		for round := range 5 {
			pipe := c.Pipeline()
			var incrs []*redis.IntCmd
			var gets []*redis.StringCmd
			for i := range 100 {
				seq := "a"
				if i%3 == 0 {
					seq = "b"
				}
				incrs = append(incrs, pipe.IncrBy(ctx, seq, int64(1+i%7)))
				if i%25 == 24 {
					gets = append(gets, pipe.Get(ctx, "a"))
					pipe.Ping(ctx)
				}
			}
			if _, err := pipe.Exec(ctx); err != nil {
				t.Fatalf("%s round %d: %v", n.ID, round, err)
			}
			last := map[string]int64{}
			for i, cmd := range incrs {
				seq, count := "a", int64(1+i%7)
				if i%3 == 0 {
					seq = "b"
				}
				v := cmd.Val()
				if v <= last[seq] {
					t.Fatalf("%s round %d: answer %d for %s is %d, not above the previous %d", n.ID, round, i, seq, v, last[seq])
				}
				last[seq] = v
				mu.Lock()
				seen[seq] = append(seen[seq], [2]int64{v - count + 1, v})
				mu.Unlock()
				if i%25 == 24 {
					g, err := gets[i/25].Int64()
					if err != nil || g < last["a"] {
						t.Fatalf("%s round %d: GET a after INCR a = %d = %d, %v", n.ID, round, last["a"], g, err)
					}
				}
			}
		}
	}
	for seq, rs := range seen {
		checkDisjoint(t, seq, rs)
	}
}

func checkDisjoint(t *testing.T, seq string, rs [][2]int64) {
	t.Helper()
	sort.Slice(rs, func(i, j int) bool { return rs[i][0] < rs[j][0] })
	for i := 1; i < len(rs); i++ {
		if rs[i][0] <= rs[i-1][1] {
			t.Fatalf("%s: ranges %v and %v overlap: an ID was issued twice", seq, rs[i-1], rs[i])
		}
	}
	for _, r := range rs {
		if r[0] < 1 || r[1] < r[0] {
			t.Fatalf("%s: bad range %v", seq, r)
		}
	}
}

// TestGoRedis_LeaderKilled_MidStream_NoIDTwice runs clients pipelining and
// not, through every node, while the leader is killed: every answered range
// is disjoint from every other, and reservations go on after the failover.
func TestGoRedis_LeaderKilled_MidStream_NoIDTwice(t *testing.T) {
	tc := newCluster(t, true)
	tc.CreateSequence("orders", nil)
	leader := tc.Leader(10 * time.Second)
	nodes := tc.Running()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var (
		mu        sync.Mutex
		ranges    [][2]int64
		afterKill int
		killed    bool
		errs      = map[string]int{}
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 8 {
		clients := make([]*redis.Client, len(nodes))
		for i, n := range nodes {
			clients[i] = client(t, n, reserveToken, 2+w%2)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			count := int64(1 + 333*(w%3))
			for i := 0; i < 100_000; i++ {
				select {
				case <-stop:
					return
				default:
				}
				c := clients[(w+i)%len(clients)]
				var got []int64
				var err error
				if w%2 == 0 {
					var v int64
					v, err = c.IncrBy(ctx, "orders", count).Result()
					if err == nil {
						got = []int64{v}
					}
				} else {
					pipe := c.Pipeline()
					cmds := make([]*redis.IntCmd, 16)
					for k := range cmds {
						cmds[k] = pipe.IncrBy(ctx, "orders", count)
					}
					_, err = pipe.Exec(ctx)
					for _, cmd := range cmds {
						// A pipeline cut by a failure leaves the
						// commands it never read at 0, without an
						// error of their own.
						if cmd.Err() == nil && (err == nil || cmd.Val() != 0) {
							got = append(got, cmd.Val())
						}
					}
				}
				mu.Lock()
				for _, v := range got {
					ranges = append(ranges, [2]int64{v - count + 1, v})
					if killed {
						afterKill++
					}
				}
				if err != nil {
					msg := err.Error()
					if i := strings.IndexAny(msg, " :"); i > 0 {
						msg = msg[:i]
					}
					errs[msg]++
				}
				mu.Unlock()
				if err != nil {
					time.Sleep(10 * time.Millisecond)
				}
			}
		}()
	}
	time.Sleep(700 * time.Millisecond)
	mu.Lock()
	before := len(ranges)
	killed = true
	mu.Unlock()
	tc.Kill(leader.ID)
	tc.Leader(10 * time.Second)
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		mu.Lock()
		n := afterKill
		mu.Unlock()
		if n >= 500 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d ranges before the kill, %d after; errors by code: %v", before, afterKill, errs)
	if before < 100 || afterKill < 500 {
		t.Fatalf("too little load to judge: %d ranges before the kill, %d after", before, afterKill)
	}
	for code := range errs {
		switch code {
		case "TRYAGAIN", "EOF", "read", "write", "dial", "i/o", "context":
		default:
			t.Errorf("unexpected error code %q (%d times)", code, errs[code])
		}
	}
	checkDisjoint(t, "orders", ranges)
}

// TestGoRedis_NoQuorum_TryAgain: a node that cannot reach a quorum answers
// TRYAGAIN (go-redis's retryable error) in bounded time, never a range.
func TestGoRedis_NoQuorum_TryAgain(t *testing.T) {
	tc := newCluster(t, false)
	tc.CreateSequence("orders", nil)
	leader := tc.Leader(10 * time.Second)
	c := client(t, leader, "", 2)
	ctx := context.Background()
	if _, err := c.Incr(ctx, "orders").Result(); err != nil {
		t.Fatal(err)
	}
	for _, n := range tc.Running() {
		if n != leader {
			tc.Kill(n.ID)
		}
	}
	for i := range 3 {
		start := time.Now()
		v, err := c.Incr(ctx, "orders").Result()
		if err == nil || !strings.HasPrefix(err.Error(), "TRYAGAIN ") {
			t.Fatalf("INCR #%d without a quorum = %d, %v; want TRYAGAIN", i, v, err)
		}
		// The test nodes' RequestTimeout is 5 s; a shared deadline may
		// add up to a second.
		if d := time.Since(start); d > 7*time.Second {
			t.Fatalf("INCR #%d took %v to fail", i, d)
		}
	}
}
