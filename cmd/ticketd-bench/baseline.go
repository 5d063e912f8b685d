package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
)

// baselineCounter is the whole "state machine" of the baseline server: one
// next-ID per sequence under a single mutex. It deliberately does no I/O
// and no replication, so its throughput is what the HTTP stack alone can do.
type baselineCounter struct {
	mu   sync.Mutex
	next map[string]uint64
}

func (b *baselineCounter) reserve(name string, n uint64) (first, last uint64) {
	b.mu.Lock()
	first = b.next[name]
	if first == 0 {
		first = 1 // start at 1 so a zero value never looks like a real ID
	}
	last = first + n - 1
	b.next[name] = last + 1
	b.mu.Unlock()
	return first, last
}

// newBaselineHandler builds the Echo instance. It mirrors the shape of
// ticketd's routes and JSON so the load generator drives both the same way,
// and uses no middleware because any middleware would lower the ceiling.
func newBaselineHandler() *echo.Echo {
	ctr := &baselineCounter{next: make(map[string]uint64)}
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true

	e.PUT("/v1/sequences/:name", func(c echo.Context) error {
		return c.JSON(http.StatusOK, map[string]string{"sequence": c.Param("name")})
	})
	e.POST("/v1/sequences/:name/ranges", func(c echo.Context) error {
		var req struct {
			Count uint64 `json:"count"`
		}
		if err := json.NewDecoder(c.Request().Body).Decode(&req); err != nil || req.Count == 0 {
			c.Response().Header().Set(echo.HeaderContentType, "application/problem+json")
			return c.String(http.StatusBadRequest, `{"title":"bad request","status":400}`)
		}
		name := c.Param("name")
		first, last := ctr.reserve(name, req.Count)
		return c.JSON(http.StatusOK, rangeResponse{Sequence: name, First: first, Last: last})
	})
	addSnowflakeBaselineRoutes(e)
	return e
}

// startBaseline listens on addr (":0" allowed) and serves until Shutdown.
// It returns the server and the address actually bound so tests and the
// script can use an ephemeral port.
func startBaseline(addr string) (*http.Server, net.Addr, <-chan error, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, nil, err
	}
	srv := &http.Server{
		Handler:           newBaselineHandler(),
		ReadHeaderTimeout: 5 * time.Second,
		IdleTimeout:       120 * time.Second,
	}
	done := make(chan error, 1)
	go func() {
		err := srv.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		done <- err
	}()
	return srv, ln.Addr(), done, nil
}

func runBaseline(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("baseline", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:18080", "listen address (port 0 picks a free port)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	srv, bound, done, err := startBaseline(*addr)
	if err != nil {
		return err
	}
	// One parseable line so callers that passed :0 can find the port.
	fmt.Printf("baseline listening on %s\n", bound)

	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	shCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shCtx); err != nil {
		return err
	}
	return <-done
}
