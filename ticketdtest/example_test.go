package ticketdtest_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/ticketd/ticketd/client"
	"github.com/ticketd/ticketd/ticketdtest"
)

// Start and Close, for TestMain or a program; in a test, New(t) does both.
func Example() {
	srv, err := ticketdtest.Start(ticketdtest.WithSequence("orders", 1000))
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	ctx := context.Background()
	r, err := srv.Client.Reserve(ctx, "orders", 3)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("reserved", r.First, "to", r.Last)

	orders := srv.Client.Sequence("orders")
	id, err := orders.Next(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("next ID above the range:", id > r.Last)
	// Output:
	// reserved 1000 to 1002
	// next ID above the range: true
}

// With authentication on, Server.Client is the admin's; the code under test
// gets a client with the reserve token, as in production.
func ExampleWithAuth() {
	srv, err := ticketdtest.Start(ticketdtest.WithAuth(), ticketdtest.WithSequence("orders", 1))
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	app, err := client.New([]string{srv.URL}, client.WithBearerToken(srv.ReserveToken))
	if err != nil {
		log.Fatal(err)
	}
	defer app.Close()
	ctx := context.Background()
	r, err := app.Reserve(ctx, "orders", 1)
	fmt.Println(r.First, err)
	_, _, err = app.CreateSequence(ctx, "invoices", client.SequenceSettings{})
	fmt.Println(errors.Is(err, client.ErrUnauthorized))
	// Output:
	// 1 <nil>
	// true
}
