// Command ticketd-bench measures ticketd's HTTP reservation path.
//
// Subcommands:
//
//	baseline   a bare Echo server that hands out ranges from an in-memory
//	           counter: the ceiling of the HTTP path on this machine
//	load       closed-loop load generator with latency percentiles and an
//	           overlap check of every range it received; drives ticketd and
//	           the baseline over HTTP, ticketd's Redis-protocol front
//	           (--kind resp: INCRBY <sequence> <count>), or a peer (--kind
//	           etcd, redis, postgres, mysql) the way people use it for IDs;
//	           --sequences N spreads the requests over N sequences picked
//	           at random
//	failover   a count=1 probe across several nodes that records the longest
//	           gap between successes; --kill-pid SIGKILLs the leader itself
//	           and reports the time to the next successful reservation
//	leader     waits until every node is ready and agrees on a leader, then
//	           prints "<id> <http_addr>" (ticketd) or "<name> <endpoint>"
//	           (etcd) (used by scripts/bench.sh)
//	sdk        takes IDs with the Go SDK's Sequence.Next at a steady rate
//	           and records the longest wait (run while killing the leader)
//	compare    prints ticketd-vs-baseline tables from two `load --json` files
//	report     turns a run directory of JSON files into the side-by-side
//	           table with ratios to ticketd, results.json, results.md and an
//	           SVG chart
//
// The peers' Go clients (etcd clientv3, go-redis, pgx, go-sql-driver/mysql)
// are the only dependencies beyond the server's own.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

func usage() {
	fmt.Fprintf(os.Stderr, `usage: ticketd-bench <command> [flags]

commands:
  baseline  --addr 127.0.0.1:18080
  load      --target URL[,URL...] --sequence bench --count 1000 --concurrency 1,16,64
            --duration 10s --warmup 2s [--json out.json] [--label name]
            [--sequences N: each request on one of bench-0..bench-(N-1) at random, http only]
            [--kind http|resp|etcd|redis|postgres|mysql] [--system S --group G --nodes N]
  failover  --targets URL,URL,URL --sequence fo --interval 1ms --duration 10s [--json gaps.json]
            [--kind http|etcd] [--kill-pid PID --kill-after 1s]
  leader    --targets URL,URL,URL [--kind http|etcd] [--timeout 30s]
  sdk       --targets URL,URL,URL --rate 1000000 --duration 10s [--kill-pid PID --kill-after 3s]
  compare   --ticketd t.json --baseline b.json
  report    --dir RUN_DIR [--strict]
  scale     --pids P1,P2,P3 --sequences 10000 --concurrency 64 --join-data-dir DIR [--json out.json]; scale table A.json...

run "ticketd-bench <command> -h" for the flags of one command
`)
}

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	// SIGINT/SIGTERM cancel ctx so every command stops its loops early and
	// still prints what it has, instead of dying mid-write.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, os.Interrupt, syscall.SIGTERM)
	var caught atomic.Value // os.Signal
	go func() {
		s := <-sigc
		caught.Store(s)
		cancel()
	}()

	var err error
	args := os.Args[2:]
	switch os.Args[1] {
	case "baseline":
		err = runBaseline(ctx, args)
	case "load":
		err = runLoad(ctx, args)
	case "failover":
		err = runFailover(ctx, args)
	case "leader":
		err = runLeader(ctx, args)
	case "sdk":
		err = runSDK(ctx, args)
	case "compare":
		err = runCompare(args)
	case "scale":
		err = runScale(ctx, args)
	case "report":
		err = runReport(args)
	case "-h", "--help", "help":
		usage()
		return
	default:
		fmt.Fprintf(os.Stderr, "ticketd-bench: unknown command %q\n", os.Args[1])
		usage()
		os.Exit(2)
	}
	if s, ok := caught.Load().(syscall.Signal); ok {
		// Die of the same signal rather than exit 1: a shell running us in
		// the foreground only runs its own INT trap (the bench script's
		// cleanup) if its child was killed by the signal; a child that
		// exits normally is taken to have handled it and the script would
		// carry on.
		signal.Reset(s)
		_ = syscall.Kill(os.Getpid(), s)
		time.Sleep(time.Second) // delivery is asynchronous
		os.Exit(128 + int(s))
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "ticketd-bench %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

// parseTargets splits a comma-separated URL list and normalises each entry
// to scheme://host with no trailing slash. Only http(s) URLs are accepted:
// the tool must never wander off to anything other than what it was given.
func parseTargets(s string) ([]string, error) {
	var out []string
	for _, raw := range strings.Split(s, ",") {
		raw = strings.TrimSpace(raw)
		if raw == "" {
			continue
		}
		if !strings.Contains(raw, "://") {
			raw = "http://" + raw
		}
		u, err := url.Parse(raw)
		if err != nil {
			return nil, fmt.Errorf("target %q: %w", raw, err)
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			return nil, fmt.Errorf("target %q: scheme must be http or https", raw)
		}
		if u.Host == "" {
			return nil, fmt.Errorf("target %q: missing host", raw)
		}
		out = append(out, strings.TrimRight(u.Scheme+"://"+u.Host+u.Path, "/"))
	}
	if len(out) == 0 {
		return nil, errors.New("no targets given")
	}
	return out, nil
}

// newTransport returns a keep-alive transport sized so that conns idle
// connections per host are kept: with fewer, closed-loop workers would keep
// re-dialing and we would measure TCP handshakes instead of the server.
func newTransport(conns int) *http.Transport {
	if conns < 2 {
		conns = 2
	}
	return &http.Transport{
		Proxy: nil, // loopback benchmarks must not go through an env proxy
		DialContext: (&net.Dialer{
			Timeout:   2 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		MaxIdleConns:          conns * 4,
		MaxIdleConnsPerHost:   conns,
		IdleConnTimeout:       90 * time.Second,
		DisableCompression:    true,
		ForceAttemptHTTP2:     false,
		ResponseHeaderTimeout: 0, // bounded by http.Client.Timeout instead
	}
}

// rangeResponse is the body of a successful POST .../ranges.
type rangeResponse struct {
	Sequence string `json:"sequence"`
	First    uint64 `json:"first"`
	Last     uint64 `json:"last"`
}

// rangesPath is the reservation path for sequence name.
func rangesPath(name string) string {
	return "/v1/sequences/" + url.PathEscape(name) + "/ranges"
}

// ensureSequence creates the sequence with a PUT, trying each target in
// turn until one answers 200/201 or the timeout passes. Retrying matters
// right after a cluster starts or loses its leader, when nodes answer 503.
func ensureSequence(ctx context.Context, client *http.Client, targets []string, name string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var lastErr error
	for attempt := 0; ; attempt++ {
		for _, t := range targets {
			if err := ctx.Err(); err != nil {
				return err
			}
			lastErr = putSequence(ctx, client, t, name)
			if lastErr == nil {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("creating sequence %q: %w", name, lastErr)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func putSequence(ctx context.Context, client *http.Client, target, name string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, target+"/v1/sequences/"+url.PathEscape(name), nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("PUT %s: %s: %s", target, resp.Status, bytes.TrimSpace(body))
	}
	return nil
}

// writeJSON writes v indented to path ("-" means stdout).
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if path == "-" {
		_, err = os.Stdout.Write(b)
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
