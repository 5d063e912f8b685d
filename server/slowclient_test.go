package server_test

import (
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/testcluster"
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
	waitFor(t, 10*time.Second, "the slot to be free again", func() bool {
		r, st, err := testcluster.Reserve(n, "orders", 1)
		return err == nil && st == http.StatusOK && r.First > 0
	})
}
