package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/client"
)

// tokenStandIn answers reservations of "orders" to requests that carry one
// of the tokens it accepts, and records the Authorization headers it saw.
type tokenStandIn struct {
	mu     sync.Mutex
	accept map[string]bool
	seen   []string
	next   int64
}

func (s *tokenStandIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	auth := r.Header.Get("Authorization")
	s.seen = append(s.seen, auth)
	if !s.accept[auth] {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"type":"urn:ticketd:problem:unauthorized","title":"unauthorized","status":401}`)
		return
	}
	s.next++
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"sequence":"orders","first":%d,"last":%d}`, s.next, s.next)
}

// A token that rotates: the function is asked on every request, so the
// client follows a rotation without being made again (issue 46, part 5).
func TestBearerTokenFunc_AskedOnEveryRequest_FollowsARotation(t *testing.T) {
	st := &tokenStandIn{accept: map[string]bool{"Bearer old-token": true, "Bearer new-token": true}}
	srv := httptest.NewServer(st)
	defer srv.Close()
	var mu sync.Mutex
	current := "old-token"
	c, err := client.New([]string{srv.URL}, client.WithBearerTokenFunc(func(context.Context) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		return current, nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if _, err := c.Reserve(ctx, "orders", 1); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	current = "new-token"
	st.mu.Lock()
	delete(st.accept, "Bearer old-token") // the old one is revoked
	st.mu.Unlock()
	mu.Unlock()
	if _, err := c.Reserve(ctx, "orders", 1); err != nil {
		t.Fatalf("after the rotation: %v", err)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.seen) != 2 || st.seen[0] != "Bearer old-token" || st.seen[1] != "Bearer new-token" {
		t.Fatalf("Authorization headers sent: %q", st.seen)
	}
}

// A token function that fails, or gives what cannot be a token, is
// retried like a failed attempt (a secret being rewritten, a vault briefly
// down) and ends the call as unavailable, naming the cause; nothing is
// sent without a token.
func TestBearerTokenFunc_Failures_RetriedThenUnavailableNamingTheCause(t *testing.T) {
	st := &tokenStandIn{accept: map[string]bool{}}
	srv := httptest.NewServer(st)
	defer srv.Close()
	vaultDown := errors.New("vault: connection refused")
	for _, tc := range []struct {
		name  string
		token func(context.Context) (string, error)
		want  string
	}{
		{"error", func(context.Context) (string, error) { return "", vaultDown }, "vault: connection refused"},
		{"empty", func(context.Context) (string, error) { return "", nil }, "empty"},
		{"not visible ASCII", func(context.Context) (string, error) { return "tok en", nil }, "visible ASCII"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := client.New([]string{srv.URL}, client.WithBearerTokenFunc(tc.token),
				client.WithCallTimeout(300*time.Millisecond), client.WithBackoff(10*time.Millisecond, 50*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_, err = c.Reserve(context.Background(), "orders", 1)
			if !errors.Is(err, client.ErrUnavailable) {
				t.Fatalf("want ErrUnavailable, got %v", err)
			}
			if errors.Is(err, client.ErrInvalidArgument) {
				t.Fatalf("a token function's bad answer is not the caller's invalid argument: %v", err)
			}
			if tc.name == "error" && !errors.Is(err, vaultDown) {
				t.Fatalf("the token function's error is not wrapped: %v", err)
			}
			if msg := err.Error(); !strings.Contains(msg, tc.want) || !strings.Contains(msg, "token") {
				t.Fatalf("the error does not name the token's problem (%q): %v", tc.want, err)
			}
		})
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.seen) != 0 {
		t.Fatalf("requests sent without a token: %q", st.seen)
	}
}

func TestBearerTokenFunc_Validated(t *testing.T) {
	if _, err := client.New([]string{"http://127.0.0.1:1"}, client.WithBearerTokenFunc(nil)); !errors.Is(err, client.ErrInvalidArgument) {
		t.Fatalf("a nil token function: %v", err)
	}
	_, err := client.New([]string{"http://127.0.0.1:1"}, client.WithBearerToken("a"),
		client.WithBearerTokenFunc(func(context.Context) (string, error) { return "b", nil }))
	if !errors.Is(err, client.ErrInvalidArgument) {
		t.Fatalf("a token and a token function: %v", err)
	}
}
