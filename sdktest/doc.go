// Package sdktest runs the SDK (module github.com/ticketd/ticketd/client)
// against real ticketd clusters started in this process: three nodes with
// Raft over TCP on 127.0.0.1, bolt stores in temporary folders and real
// HTTP, killed, restarted and partitioned while the SDK's callers run.
//
// These tests live in the server's module, not beside the SDK, because they
// need the server: the SDK's own module requires only its wire types and its
// retry library, so that a program using the SDK gets nothing else in its
// module graph. The SDK's unit tests, against an in-process stand-in of the
// API, stay in client/.
package sdktest
