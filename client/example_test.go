package client_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/ticketd/ticketd/client"
)

// The examples with an "Output:" line run as tests against a stand-in: an
// in-process HTTP server that speaks ticketd's HTTP contract from memory
// (see fake_test.go), so that their output can be checked. It is not
// ticketd: in your code, pass the URLs of your cluster's nodes instead.
func standIn() (endpoints []string, stop func()) {
	f := newFake()
	return []string{f.URL()}, f.Close
}

// Connect to a real cluster over TLS with a bearer token. Every option is
// optional; any node of the cluster will do as an endpoint, and listing all
// of them lets the client fail over.
func ExampleNew() {
	pool := x509.NewCertPool()
	pem, err := os.ReadFile("/etc/ticketd/ca.pem")
	if err != nil {
		log.Fatal(err)
	}
	pool.AppendCertsFromPEM(pem)
	c, err := client.New(
		[]string{"https://ticketd-1:8443", "https://ticketd-2:8443", "https://ticketd-3:8443"},
		client.WithTLSConfig(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}),
		client.WithBearerToken(os.Getenv("TICKETD_TOKEN")),
		client.WithTimeout(2*time.Second),      // one HTTP attempt
		client.WithCallTimeout(10*time.Second), // a whole call, retries included
		client.WithLogger(slog.Default()),
	)
	if err != nil {
		log.Fatal(err) // a bad endpoint or option: errors.Is(err, client.ErrInvalidArgument)
	}
	defer c.Close()
}

// Reserve one range of IDs from the cluster.
func ExampleClient_Reserve() {
	endpoints, stop := standIn() // stand-in: use your nodes' URLs
	defer stop()
	c, err := client.New(endpoints)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	if _, _, err := c.CreateSequence(ctx, "orders", client.SequenceSettings{}); err != nil {
		log.Fatal(err)
	}
	r, err := c.Reserve(ctx, "orders", 100)
	if err != nil {
		// The outcome of a failed reservation is unknown (the range may be
		// lost); calling Reserve again is safe.
		log.Fatal(err)
	}
	fmt.Printf("IDs %d..%d (%d of them)\n", r.First, r.Last, r.Len())
	// Output: IDs 1..100 (100 of them)
}

// Hand out single IDs from a local cache: Next is an atomic add while the
// cache holds IDs, and the cache refills itself in the background.
func ExampleClient_Sequence() {
	endpoints, stop := standIn() // stand-in: use your nodes' URLs
	defer stop()
	c, err := client.New(endpoints)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close() // stops the background refills
	ctx := context.Background()
	if _, _, err := c.CreateSequence(ctx, "orders", client.SequenceSettings{Start: 1000}); err != nil {
		log.Fatal(err)
	}

	orders := c.Sequence("orders") // one per process and sequence; share it
	for i := 0; i < 3; i++ {
		id, err := orders.Next(ctx)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(id)
	}
	// Output:
	// 1000
	// 1001
	// 1002
}

// Take IDs from many goroutines on many cores: in unordered mode each core
// cuts from a sub-range of its own, so the cores pass no cache line between
// them. The IDs are unique, but not in the order they were taken.
func ExampleUnordered() {
	endpoints, stop := standIn() // stand-in: use your nodes' URLs
	defer stop()
	c, err := client.New(endpoints)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if _, _, err := c.CreateSequence(ctx, "events", client.SequenceSettings{}); err != nil {
		log.Fatal(err)
	}

	events := c.Sequence("events", client.Unordered())
	var wg sync.WaitGroup
	var mu sync.Mutex
	seen := map[int64]bool{}
	for range 8 { // request handlers, workers...
		wg.Go(func() {
			for range 1000 {
				id, err := events.Next(ctx)
				if err != nil {
					log.Fatal(err)
				}
				mu.Lock()
				seen[id] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	fmt.Println(len(seen), "distinct IDs")
	// Output:
	// 8000 distinct IDs
}

// Take a batch of IDs from the cache at once.
func ExampleSequence_NextN() {
	endpoints, stop := standIn() // stand-in: use your nodes' URLs
	defer stop()
	c, err := client.New(endpoints)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if _, _, err := c.CreateSequence(ctx, "rows", client.SequenceSettings{}); err != nil {
		log.Fatal(err)
	}

	rows := c.Sequence("rows", client.WithCoverage(30*time.Second))
	ranges, err := rows.NextN(ctx, 5)
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range ranges { // usually one range; two when the batch straddles cached ranges
		for id := range r.All() {
			fmt.Print(id, " ")
		}
	}
	fmt.Println()
	// Output: 1 2 3 4 5
}

// Errors match the package's sentinels with errors.Is; a server's answer is
// also an *APIError with its problem details.
func ExampleAPIError() {
	endpoints, stop := standIn() // stand-in: use your nodes' URLs
	defer stop()
	c, err := client.New(endpoints)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	_, err = c.Reserve(ctx, "no-such-sequence", 1)
	var apiErr *client.APIError
	switch {
	case errors.Is(err, client.ErrNotFound) && errors.As(err, &apiErr):
		fmt.Println("not found:", apiErr.StatusCode, apiErr.Problem.Type)
	case errors.Is(err, client.ErrUnavailable):
		fmt.Println("no node could serve in time; retrying is safe")
	case err != nil:
		fmt.Println("error:", err)
	}
	_, err = c.Reserve(ctx, "orders", 0)
	fmt.Println(errors.Is(err, client.ErrInvalidArgument))
	// Output:
	// not found: 404 urn:ticketd:problem:sequence-not-found
	// true
}

// After Close, every call returns ErrClosed; Close may be called again.
func ExampleClient_Close() {
	endpoints, stop := standIn() // stand-in: use your nodes' URLs
	defer stop()
	c, err := client.New(endpoints)
	if err != nil {
		log.Fatal(err)
	}
	seq := c.Sequence("orders")
	c.Close()
	c.Close()
	_, err = seq.Next(context.Background())
	fmt.Println(err)
	// Output: ticketd: client closed
}
