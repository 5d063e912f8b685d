package sdktest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/ticketd/ticketd/client"
)

// newClient makes an SDK client with fast retries, closed when the test
// ends.
func newClient(t *testing.T, endpoints []string, opts ...client.Option) *client.Client {
	t.Helper()
	c, err := client.New(endpoints, append([]client.Option{client.WithBackoff(5*time.Millisecond, 50*time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatalf("client.New(%q): %v", endpoints, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// ctxFor is a context that ends after d or with the test.
func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// newSnowflake starts a Snowflake generator, closed when the test ends.
func newSnowflake(t *testing.T, c *client.Client, ns string, opts ...client.SnowflakeOption) *client.Snowflake {
	t.Helper()
	g, err := c.Snowflake(ns, opts...)
	if err != nil {
		t.Fatalf("Snowflake(%q): %v", ns, err)
	}
	t.Cleanup(func() { _ = g.Close() })
	return g
}

// waitLease waits up to d for g's lease.
func waitLease(t *testing.T, g *client.Snowflake, d time.Duration) client.SnowflakeLease {
	t.Helper()
	if err := g.Wait(ctxFor(t, d)); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	l, ok := g.Lease()
	if !ok {
		t.Fatal("no lease after Wait")
	}
	return l
}

// checkUnique fails the test if an ID appears twice in ids (which it sorts).
func checkUnique(t *testing.T, ids []int64) {
	t.Helper()
	slices.Sort(ids)
	for i := 1; i < len(ids); i++ {
		if ids[i] == ids[i-1] {
			t.Fatalf("ID %d was handed out twice", ids[i])
		}
	}
}
