package client_test

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ticketd/ticketd/api"
)

// forwarder stands in for a follower: it relays every request to target and
// names leader in api.LeaderHeader, as ticketd's followers do.
func forwarder(t *testing.T, target *fakeServer, leader string) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	u, err := url.Parse(target.URL())
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.Header().Set(api.LeaderHeader, leader)
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// A call that a follower forwarded names the leader; when the leader is one
// of the client's endpoints, the next calls go to it directly.
func TestReserve_ForwardedAnswer_NextCallsGoToTheNamedLeader(t *testing.T) {
	noLeak(t)
	leader := newFake()
	defer leader.Close()
	leader.addSequence("s", 1, api.DefaultMax)
	follower, relayed := forwarder(t, leader, strings.TrimPrefix(leader.URL(), "http://"))
	c := newClient(t, []string{follower.URL, leader.URL()})
	ctx := ctxFor(t, 10*time.Second)
	for i := range 5 {
		r, err := c.Reserve(ctx, "s", 10)
		if err != nil || r.First != int64(i*10+1) {
			t.Fatalf("Reserve %d = %+v, %v", i, r, err)
		}
	}
	if n := relayed.Load(); n != 1 {
		t.Fatalf("the follower relayed %d calls, want only the first", n)
	}
}

// A leader named by an answer that is none of the endpoints is ignored: the
// client never sends to an address it was not given.
func TestReserve_ForwardedAnswer_UnknownLeaderIgnored(t *testing.T) {
	noLeak(t)
	leader := newFake()
	defer leader.Close()
	leader.addSequence("s", 1, api.DefaultMax)
	follower, relayed := forwarder(t, leader, "127.0.0.1:1")
	c := newClient(t, []string{follower.URL, leader.URL()})
	ctx := ctxFor(t, 10*time.Second)
	for range 5 {
		if _, err := c.Reserve(ctx, "s", 1); err != nil {
			t.Fatal(err)
		}
	}
	if n := relayed.Load(); n != 5 {
		t.Fatalf("the follower relayed %d of 5 calls; an unknown leader should change nothing", n)
	}
}
