package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/ticketd/ticketd/client"
)

// idsStandInNodes starts in-process stand-ins for three nodes' Snowflake
// service (see snowflake_remote_test.go) serving a namespace "orders". In
// your code, pass the URLs of your cluster's nodes instead.
func idsStandInNodes() (endpoints []string, stop func()) {
	var nodes []*idsStandIn
	for i := int64(1); i <= 3; i++ {
		n := newIDsStandIn(fmt.Sprintf("n%d", i), i)
		nodes = append(nodes, n)
		endpoints = append(endpoints, n.URL())
	}
	return endpoints, func() {
		for _, n := range nodes {
			n.Close()
		}
	}
}

// Take Snowflake IDs made by the cluster's nodes, without holding a
// worker-id lease in this process: for short-lived jobs and large fleets.
// The IDs come in batches from any node and are handed out from a local
// buffer; a node that fails is moved past.
func ExampleClient_SnowflakeRemote() {
	endpoints, stop := idsStandInNodes()
	defer stop()
	c, err := client.New(endpoints) // list every node: any of them serves
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	orders, err := c.SnowflakeRemote("orders", client.WithRemoteBatch(100))
	if err != nil {
		log.Fatal(err) // a bad name or option, or a closed Client
	}
	defer orders.Close() // drops the IDs still buffered

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a, err := orders.Next(ctx) // the first call waits for a batch
	if err != nil {
		log.Fatal(err)
	}
	b, _ := orders.Next(ctx) // from the buffer: no network
	more, _ := orders.NextN(ctx, 10)
	fmt.Println("one batch, increasing:", b > a && more[0] > b)
	fmt.Println("distinct:", len(map[int64]bool{a: true, b: true, more[0]: true, more[9]: true}))
	// Output:
	// one batch, increasing: true
	// distinct: 4
}

// The errors to handle around Next. Failures of single nodes (a node
// without its lease, its clock behind, all worker ids taken) are moved past
// to the other nodes; Next returns them only when no node could serve
// before its deadline, wrapped in ErrUnavailable.
func ExampleSnowflakeRemote_Next() {
	endpoints, stop := idsStandInNodes()
	defer stop()
	c, _ := client.New(endpoints, client.WithCallTimeout(5*time.Second))
	defer c.Close()
	orders, _ := c.SnowflakeRemote("orders")
	defer orders.Close()

	id, err := orders.Next(context.Background())
	var cb *client.ClockBehindError
	switch {
	case err == nil:
		fmt.Println("got an ID:", id > 0)
	case errors.As(err, &cb):
		// Every node asked had its clock behind (ErrUnavailable holds
		// too); cb.Behind says for how long the last one.
	case errors.Is(err, client.ErrUnavailable):
		// No node could serve in time; the last failure is wrapped:
		// ErrNoWorkerLease, ErrNoWorkerFree, a transport error...
		// The buffer keeps being refilled in the background.
	case errors.Is(err, client.ErrNamespaceNotFound), errors.Is(err, client.ErrExhausted):
		// Final: no such namespace, or its timestamp bits ran out.
	}
	// Output:
	// got an ID: true
}
