package server_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/testcluster"
	"github.com/ticketd/ticketd/internal/testkit"
	"github.com/ticketd/ticketd/server"
)

// Item 9: a slow client cannot hold an in-flight slot: the API server's read
// timeout ends a request whose body never arrives.
func TestLimits_SlowBody_CannotHoldASlot(t *testing.T) {
	tc := testcluster.New(t, 1, func(id string, cfg *server.Config) {
		cfg.MaxInflight = 1
		cfg.HTTPReadTimeout = 500 * time.Millisecond
	})
	tc.CreateSequence("orders", nil)
	n := tc.Running()[0]
	url := tc.URL(n) + "/v1/sequences/orders/ranges"
	pr, pw := io.Pipe()
	defer pw.Close()
	req, _ := http.NewRequest("POST", url, pr)
	req.ContentLength = 100
	go func() {
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	_, _ = pw.Write([]byte(`{"count":`)) // and nothing more, ever
	time.Sleep(100 * time.Millisecond)
	testkit.Eventually(t, 10*time.Second, 20*time.Millisecond, "the slot to be free again", func() bool {
		r, st, err := testcluster.Reserve(n, "orders", 1)
		return err == nil && st == http.StatusOK && r.First > 0
	})
}

// A connection that was opened but never carried a request (Go's
// http.Transport parks such connections in its idle pool when another one
// freed up first) must not hold up a graceful shutdown: net/http's Shutdown
// waits up to 5 s for connections in StateNew (golang/go#21204, #22682),
// which made `ticketd` exit 1 on SIGTERM with a 5 s shutdown timeout.
func TestShutdown_ConnectionWithoutARequest_DoesNotDelayIt(t *testing.T) {
	tc := testcluster.New(t, 1, nil)
	n := tc.Running()[0]
	conn, err := net.Dial("tcp", n.HTTPAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	time.Sleep(100 * time.Millisecond) // accepted by the server
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	start := time.Now()
	if err := n.Srv.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown with an idle new connection open: %v after %v", err, time.Since(start))
	}
}
