// Package e2e drives the built ticketd binary as real processes: flags,
// environment variables, data dirs, SIGTERM and kill -9, the CLI's exit codes
// and output.
//
// TestMain builds ./cmd/ticketd once (a normal binary, without -race) into a
// temporary directory and removes it at the end; in -short mode nothing is
// built and every test skips. Each node runs as its own process on 127.0.0.1
// with fast Raft timings, logging to a file per run that the harness prints
// the tail of when a test fails. Starting, signalling and reaping processes
// is internal/proc's, the one process harness shared with jepsen; this
// package adds the nodes, clusters and HTTP probes. The in-process cluster tests in server/
// cover the logic; these cover what only the binary has.
package e2e
