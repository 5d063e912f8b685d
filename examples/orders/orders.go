// Package orders is a tiny example application of ticketd: an order book
// that numbers every order it takes with an ID from a ticketd cluster,
// through the Go SDK. Its tests (orders_test.go) show how an application
// tests such code against a real node with package ticketdtest, from a module
// of its own, as a user's module would.
package orders

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/ticketd/ticketd/client"
)

// ErrInvalidOrder: an order without a customer or without items.
var ErrInvalidOrder = errors.New("orders: invalid order")

// Order is an order the book took.
type Order struct {
	ID       int64
	Customer string
	Items    []string
}

// Book takes orders and numbers them. Several books, in one process or in
// many, may number from the same sequence: ticketd hands each ID out once.
type Book struct {
	ids *client.Sequence

	mu     sync.Mutex
	orders map[int64]Order
}

// NewBook returns a book that numbers its orders from the named sequence of
// the cluster c speaks to. The sequence must exist (an operator creates it).
func NewBook(c *client.Client, sequence string) *Book {
	return &Book{ids: c.Sequence(sequence), orders: map[int64]Order{}}
}

// Place numbers the order and records it. An error from ticketd is wrapped:
// errors.Is(err, client.ErrNotFound) when the sequence does not exist,
// client.ErrUnavailable when the cluster could not be reached in time (the
// SDK's cache of IDs rides out a short outage first).
func (b *Book) Place(ctx context.Context, customer string, items ...string) (Order, error) {
	if customer == "" || len(items) == 0 {
		return Order{}, fmt.Errorf("%w: want a customer and at least one item", ErrInvalidOrder)
	}
	id, err := b.ids.Next(ctx)
	if err != nil {
		return Order{}, fmt.Errorf("orders: number the order: %w", err)
	}
	o := Order{ID: id, Customer: customer, Items: append([]string(nil), items...)}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, dup := b.orders[id]; dup {
		// ticketd never hands an ID out twice; this would be its bug.
		return Order{}, fmt.Errorf("orders: ID %d numbers two orders", id)
	}
	b.orders[id] = o
	return o, nil
}

// Get returns the order with the given ID.
func (b *Book) Get(id int64) (Order, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	o, ok := b.orders[id]
	return o, ok
}

// Len is how many orders the book holds.
func (b *Book) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.orders)
}
