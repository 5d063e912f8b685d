package httpapi_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/httpapi"
	"github.com/ticketd/ticketd/internal/testcluster"
)

// blockingStore's reservations wait for release, so a test can hold one in
// flight.
type blockingStore struct {
	stubStore
	entered, release chan struct{}
}

func (s *blockingStore) Reserve(ctx context.Context, name string, count int64) (int64, int64, error) {
	s.entered <- struct{}{}
	<-s.release
	return s.stubStore.Reserve(ctx, name, count)
}

// The routes' middleware runs in the order New gives it, now that it is
// composed when the route is registered: shed load (429) before
// authenticating (401, 403), then serve.
func TestRouteMiddleware_ShedThenAuthenticateThenServe(t *testing.T) {
	const reserveTok, adminTok = "reserve-token-0123456789abcdef", "admin-token-0123456789abcdef"
	tokens := testcluster.Tokens(t, adminTok, reserveTok)
	st := &blockingStore{entered: make(chan struct{}), release: make(chan struct{})}
	h := httpapi.New(httpapi.Config{Store: st, Tokens: tokens, MaxInflight: 1,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}).Handler()
	do := func(method, path, token string) int {
		req := httptest.NewRequest(method, path, strings.NewReader(`{"count":2}`))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w.Code
	}
	const ranges = "/v1/sequences/s/ranges"

	held := make(chan int)
	go func() { held <- do(http.MethodPost, ranges, reserveTok) }()
	select {
	case <-st.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the first reservation never reached the store")
	}
	if got := do(http.MethodPost, ranges, ""); got != http.StatusTooManyRequests {
		t.Errorf("with one request in flight (MaxInflight 1), no token: %d, want 429 before authentication", got)
	}
	close(st.release)
	if got := <-held; got != http.StatusOK {
		t.Errorf("held reservation: %d, want 200", got)
	}
	go func() {
		for range st.entered {
		}
	}()
	defer close(st.entered)

	for _, c := range []struct {
		method, path, token string
		want                int
	}{
		{http.MethodPost, ranges, "", http.StatusUnauthorized},
		{http.MethodPost, ranges, "not-a-token-0123456789abcdef", http.StatusUnauthorized},
		{http.MethodPut, "/v1/sequences/s", reserveTok, http.StatusForbidden},
		{http.MethodPost, ranges, reserveTok, http.StatusOK},
		{http.MethodPost, ranges, adminTok, http.StatusOK},
	} {
		if got := do(c.method, c.path, c.token); got != c.want {
			t.Errorf("%s %s with token %q: %d, want %d", c.method, c.path, c.token, got, c.want)
		}
	}
}
