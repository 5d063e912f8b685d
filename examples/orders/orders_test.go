package orders_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/client"
	"github.com/ticketd/ticketd/examples/orders"
	"github.com/ticketd/ticketd/ticketdtest"
)

// newApp is what the application does at start-up: a client of the cluster
// with the token its configuration holds. The test gives it the node's URL
// and, with authentication on, its reserve token, and closes it at the end.
func newApp(t *testing.T, srv *ticketdtest.Server) *client.Client {
	t.Helper()
	var opts []client.Option
	if srv.ReserveToken != "" {
		opts = append(opts, client.WithBearerToken(srv.ReserveToken))
	}
	c, err := client.New([]string{srv.URL}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestPlace_EveryOrderNumberedOnce runs two instances of the service (two
// clients, two books) placing orders concurrently against one real node:
// every order gets an ID of its own, from the sequence's start up.
func TestPlace_EveryOrderNumberedOnce(t *testing.T) {
	const start = 1_000_000
	srv := ticketdtest.New(t, ticketdtest.WithAuth(), ticketdtest.WithSequence("orders", start))
	books := []*orders.Book{orders.NewBook(newApp(t, srv), "orders"), orders.NewBook(newApp(t, srv), "orders")}

	ctx := context.Background()
	var mu sync.Mutex
	owner := map[int64]string{}
	var wg sync.WaitGroup
	for i, book := range books {
		for w := range 4 {
			wg.Go(func() {
				for n := range 100 {
					customer := fmt.Sprintf("book%d-worker%d-%d", i, w, n)
					o, err := book.Place(ctx, customer, "widget")
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					if prev, dup := owner[o.ID]; dup {
						t.Errorf("ID %d numbers %s and %s", o.ID, prev, customer)
					}
					owner[o.ID] = customer
					mu.Unlock()
					if o.ID < start {
						t.Errorf("ID %d below the sequence's start %d", o.ID, start)
					}
				}
			})
		}
	}
	wg.Wait()
	if len(owner) != 800 || books[0].Len()+books[1].Len() != 800 {
		t.Fatalf("%d distinct IDs, books hold %d and %d orders; want 800", len(owner), books[0].Len(), books[1].Len())
	}
}

// TestPlace_RidesOutServerOutage stops the node after the first order: the
// SDK's cache of IDs keeps numbering orders while it is down, and once it
// is back the IDs go on increasing, none handed out twice.
func TestPlace_RidesOutServerOutage(t *testing.T) {
	srv := ticketdtest.New(t, ticketdtest.WithSequence("orders", 1))
	book := orders.NewBook(newApp(t, srv), "orders")
	ctx := context.Background()
	first, err := book.Place(ctx, "alice", "book")
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	last := first.ID
	place := func(phase string) {
		t.Helper()
		for n := range 100 {
			ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			o, err := book.Place(ctx, "bob", "pen")
			cancel()
			if err != nil {
				t.Fatalf("order %d %s: %v", n, phase, err)
			}
			if o.ID <= last {
				t.Fatalf("ID %d after %d", o.ID, last)
			}
			last = o.ID
		}
	}
	place("with the server down")
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	place("after the restart")
	if book.Len() != 201 {
		t.Fatalf("book holds %d orders, want 201", book.Len())
	}
}

// TestPlace_UnknownSequence: a book on a sequence nobody created reports
// ticketd's ErrNotFound, and records nothing.
func TestPlace_UnknownSequence(t *testing.T) {
	srv := ticketdtest.New(t)
	book := orders.NewBook(newApp(t, srv), "invoices")
	_, err := book.Place(context.Background(), "alice", "book")
	if !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("err %v, want client.ErrNotFound", err)
	}
	if book.Len() != 0 {
		t.Fatalf("book holds %d orders", book.Len())
	}
}

// TestPlace_InvalidOrder: an empty order is refused before any ID is taken.
func TestPlace_InvalidOrder(t *testing.T) {
	srv := ticketdtest.New(t, ticketdtest.WithSequenceSettings("orders", client.SequenceSettings{Start: 1, Max: 1}))
	book := orders.NewBook(newApp(t, srv), "orders")
	ctx := context.Background()
	if _, err := book.Place(ctx, "", "book"); !errors.Is(err, orders.ErrInvalidOrder) {
		t.Fatalf("no customer: %v", err)
	}
	if _, err := book.Place(ctx, "alice"); !errors.Is(err, orders.ErrInvalidOrder) {
		t.Fatalf("no items: %v", err)
	}
	// The sequence holds one ID: it is still there for a valid order.
	o, err := book.Place(ctx, "alice", "book")
	if err != nil || o.ID != 1 {
		t.Fatalf("order %+v, err %v", o, err)
	}
}
