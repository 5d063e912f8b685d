package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/ticketd/ticketd/client"
)

// snowflakeStandIn is an in-process stand-in for the cluster's lease
// endpoints (see snowflake_test.go) with a namespace "users" of the default
// layout. In your code, pass the URLs of your cluster's nodes instead.
func snowflakeStandIn() (endpoints []string, stop func()) {
	f := newLeaseStandIn(nil)
	f.addNamespace("users", 30*time.Second, time.Minute, nil)
	return []string{f.URL()}, f.Close
}

// Generate 64-bit, time-sortable IDs in this process. The generator leases
// a worker id from the cluster, renews it in the background and releases it
// on Close; Next does not touch the network.
func ExampleClient_Snowflake() {
	endpoints, stop := snowflakeStandIn()
	defer stop()
	c, err := client.New(endpoints)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	users, err := c.Snowflake("users") // one per namespace and process; share it
	if err != nil {
		log.Fatal(err) // a bad name or option, or a closed Client
	}
	defer users.Close() // releases the worker id

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Optional: fail fast at start-up if no lease can be had (a missing
	// namespace, no worker id free, a cluster that is down).
	if err := users.Wait(ctx); err != nil {
		log.Fatal(err)
	}
	a, _ := users.Next(ctx)
	b, _ := users.Next(ctx)
	lease, _ := users.Lease()
	p := client.DecodeSnowflake(lease.Layout, b)
	fmt.Println("increasing:", b > a)
	fmt.Println("worker:", p.WorkerID, "holder is hostname/pid/random:", lease.Holder != "")
	fmt.Println("layout bits:", lease.Layout.TimestampBits, lease.Layout.WorkerBits, lease.Layout.SequenceBits)
	// Output:
	// increasing: true
	// worker: 0 holder is hostname/pid/random: true
	// layout bits: 41 10 12
}

// The errors to handle around Next: all mean "no ID now", none ever means
// "an ID that may repeat".
func ExampleSnowflake_Next() {
	endpoints, stop := snowflakeStandIn()
	defer stop()
	c, _ := client.New(endpoints)
	defer c.Close()
	users, _ := c.Snowflake("users", client.WithLeaseWait(2*time.Second))
	defer users.Close()

	id, err := users.Next(context.Background())
	switch {
	case err == nil:
		fmt.Println("got an ID:", id > 0)
	case errors.Is(err, client.ErrLeaseExpired):
		// No valid worker-id lease: the cluster has been unreachable for
		// longer than the lease covers, or every worker id is taken
		// (errors.Is(err, client.ErrNoWorkerFree)). Retry later.
	case errors.Is(err, client.ErrClockMovedBackwards):
		// This host's clock is behind a timestamp the generator must stay
		// above (its own last one, or its lease's timestamp floor, set by
		// an earlier holder's clock); Next refuses until it has caught up.
	}
	// Output:
	// got an ID: true
}
