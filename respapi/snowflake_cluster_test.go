package respapi_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/internal/testcluster"
)

func createNamespace(t *testing.T, tc *testcluster.Cluster, name string, req api.NamespaceRequest) {
	t.Helper()
	st, err := tc.Do(http.MethodPut, tc.URL(tc.Running()[0])+"/v1/namespaces/"+name, req, nil)
	if err != nil || st/100 != 2 {
		t.Fatalf("create namespace %s: %d %v", name, st, err)
	}
}

// TestGoRedis_Snowflake_EveryNodeServesItsOwnIDs takes Snowflake IDs with
// go-redis from each of three nodes, one at a time and pipelined, over
// RESP2 and RESP3: each node's answers strictly increase in the order they
// were taken, and no ID is answered twice across the nodes. Then the error
// replies, on a follower too: unknown namespace, count out of range, every
// worker id held.
func TestGoRedis_Snowflake_EveryNodeServesItsOwnIDs(t *testing.T) {
	tc := newCluster(t, false)
	createNamespace(t, tc, "orders", api.NamespaceRequest{})
	ctx := context.Background()
	seen := map[int64]string{}
	for _, n := range tc.Running() {
		var last int64
		take := func(what string, ids []int64) {
			t.Helper()
			for _, id := range ids {
				if id <= last {
					t.Fatalf("%s on %s: %d after %d; a node's IDs must strictly increase", what, n.ID, id, last)
				}
				if by, dup := seen[id]; dup {
					t.Fatalf("%s on %s: ID %d was answered by %s too", what, n.ID, id, by)
				}
				seen[id], last = n.ID, id
			}
		}
		for _, proto := range []int{2, 3} {
			c := client(t, n, "", proto)
			for _, count := range []int{0, 1, 7, api.MaxSnowflakeIDs} {
				args := []any{"TICKETD.SNOWFLAKE", "orders"}
				if count > 0 {
					args = append(args, count)
				}
				ids, err := c.Do(ctx, args...).Int64Slice()
				if err != nil || len(ids) != max(count, 1) {
					t.Fatalf("%v on %s (RESP%d) = %d IDs, %v; want %d", args, n.ID, proto, len(ids), err, max(count, 1))
				}
				take(fmt.Sprint(args), ids)
			}
			pipe := c.Pipeline()
			var cmds []*redis.Cmd
			for i := range 50 {
				cmds = append(cmds, pipe.Do(ctx, "TICKETD.SNOWFLAKE", "orders", 1+i%5))
				pipe.Ping(ctx)
			}
			if _, err := pipe.Exec(ctx); err != nil {
				t.Fatalf("pipeline on %s: %v", n.ID, err)
			}
			for i, cmd := range cmds {
				ids, err := cmd.Int64Slice()
				if err != nil || len(ids) != 1+i%5 {
					t.Fatalf("pipelined command %d on %s = %v, %v", i, n.ID, ids, err)
				}
				take("a pipeline", ids)
			}
		}
	}
	if want := 3 * 2 * (1 + 1 + 7 + api.MaxSnowflakeIDs + 150); len(seen) != want {
		t.Fatalf("%d distinct IDs, want %d", len(seen), want)
	}

	leader := tc.Leader(10 * time.Second)
	c := client(t, follower(tc, leader), "", 2)
	wantErr(t, "an unknown namespace", c.Do(ctx, "TICKETD.SNOWFLAKE", "nope").Err(), `NOTFOUND namespace "nope" does not exist`)
	wantErr(t, "count 0", c.Do(ctx, "TICKETD.SNOWFLAKE", "orders", 0).Err(), "ERR ticketd.snowflake orders: count must be between 1 and 10000")
	wantErr(t, "count past the maximum", c.Do(ctx, "TICKETD.SNOWFLAKE", "orders", api.MaxSnowflakeIDs+1).Err(), "ERR ticketd.snowflake orders: count must be between 1 and 10000")
	wantErr(t, "no namespace", c.Do(ctx, "TICKETD.SNOWFLAKE").Err(), "ERR wrong number of arguments")

	// A namespace of two worker ids, both held by others.
	i64 := func(v int64) *int64 { return &v }
	createNamespace(t, tc, "tiny", api.NamespaceRequest{MaxWorkers: i64(2), LeaseTTLMs: i64(60_000)})
	for _, h := range []string{"a", "b"} {
		st, err := tc.Do(http.MethodPost, tc.URL(leader)+"/v1/namespaces/tiny/leases", api.LeaseRequest{Holder: h}, nil)
		if err != nil || st != http.StatusCreated {
			t.Fatalf("acquire %s: %d %v", h, st, err)
		}
	}
	err := c.Do(ctx, "TICKETD.SNOWFLAKE", "tiny").Err()
	wantErr(t, "every worker id held", err, "WORKERSEXHAUSTED ")
	if !strings.Contains(err.Error(), `"tiny"`) {
		t.Fatalf("every worker id held: %v, want it to name the namespace", err)
	}

	info, err := c.Info(ctx, "ticketd").Result()
	if err != nil || !strings.Contains(info, "snowflake_orders:serving=1,worker_id=") {
		t.Fatalf("INFO ticketd on a follower: %v\n%s", err, info)
	}
}
