package idgen

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ticketd/ticketd/client"
	"github.com/ticketd/ticketd/domain"
)

type fixedClock struct{}

func (fixedClock) Now() (time.Time, time.Duration) { return time.Now(), 0 }

func newService(t *testing.T) *Service {
	t.Helper()
	c, err := client.New([]string{"http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	s, err := New(Config{Node: "n1", Client: c, Clock: fixedClock{}, Exists: func(string) bool { return false }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestKindOf_EachGeneratorErrorHasItsKind: the generator's errors become
// the domain kinds the HTTP and Redis fronts answer by, the clock's with
// how far behind (rounded up to the next ms), and the namespace named.
func TestKindOf_EachGeneratorErrorHasItsKind(t *testing.T) {
	s := newService(t)
	for _, tc := range []struct {
		err  error
		kind error
	}{
		{&client.ClockBehindError{Behind: 1500 * time.Millisecond}, domain.ErrClockBehind},
		{fmt.Errorf("%w: ran out", client.ErrExhausted), domain.ErrTimestampExhausted},
		{fmt.Errorf("%w: last failure: %w", client.ErrLeaseExpired, client.ErrNamespaceNotFound), domain.ErrNotFound},
		{fmt.Errorf("%w: last failure: %w", client.ErrLeaseExpired, client.ErrNoWorkerFree), domain.ErrWorkersExhausted},
		{fmt.Errorf("%w: the lease passed its deadline", client.ErrLeaseExpired), domain.ErrNoWorkerLease},
		{client.ErrClosed, domain.ErrUnavailable},
		{context.DeadlineExceeded, domain.ErrUnavailable},
		{fmt.Errorf("%w: bad", client.ErrInvalidArgument), domain.ErrInvalid},
	} {
		got := s.kindOf("orders", tc.err)
		if !errors.Is(got, tc.kind) {
			t.Errorf("kindOf(%v) = %v; want kind %v", tc.err, got, tc.kind)
		}
	}
	var cb *domain.ClockBehindError
	if err := s.kindOf("orders", &client.ClockBehindError{Behind: 1500 * time.Millisecond}); !errors.As(err, &cb) || cb.BehindMs != 1501 || cb.Namespace != "orders" {
		t.Fatalf("clock behind: %v %+v", err, cb)
	}
}

// TestTake_BadCountAndNameRefusedWithoutAGenerator: nothing is started for
// a request that cannot be served, and a namespace this replica does not
// know, which the leader cannot confirm, starts none either.
func TestTake_BadCountAndNameRefusedWithoutAGenerator(t *testing.T) {
	s := newService(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	for _, n := range []int{0, -1, 10_001} {
		if _, err := s.Take(ctx, "orders", n); !errors.Is(err, domain.ErrInvalid) {
			t.Errorf("Take(%d) = %v; want ErrInvalid", n, err)
		}
	}
	if _, err := s.Take(ctx, "bad name!", 1); !errors.Is(err, domain.ErrInvalid) {
		t.Errorf("bad name: %v; want ErrInvalid", err)
	}
	if _, err := s.Take(ctx, "orders", 1); err == nil {
		t.Fatal("a namespace no one could confirm was served")
	}
	if st := s.States(); len(st) != 0 {
		t.Fatalf("generators started: %+v", st)
	}
}

// TestClose_RefusesLaterRequests.
func TestClose_RefusesLaterRequests(t *testing.T) {
	s := newService(t)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Take(t.Context(), "orders", 1); !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("after Close: %v; want ErrUnavailable", err)
	}
}
