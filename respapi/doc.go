// Package respapi is ticketd's Redis-protocol front: a Redis client (any
// language's) reserves IDs with INCR / INCRBY, served by the same issuer, with
// the same tokens and the same forwarding as the HTTP API.
//
// A connection's commands are read in batches: every command the client has
// already sent (a pipeline) is read before any is answered, the
// reservations among them run at once, so that they share the leader's
// leadership rounds, and the answers are written in order with one flush.
// A client that sends one command at a time gets it served on the
// connection's own goroutine, with no hand-off.
//
// TICKETD.SNOWFLAKE ns [count] answers Snowflake IDs made by the node the
// connection is on, from its own worker-id lease: it is never forwarded,
// and runs where dispatch meets it, without cutting the reservations around
// it into two runs.
//
// Nothing but AUTH, HELLO, PING and QUIT is served before a connection has
// authenticated, when the node has tokens. A node that is not the serving
// leader forwards reservations and reads to the leader's HTTP API with the
// caller's token, as the HTTP API does.
//
// Which file holds what:
//
//   - server.go: the Server (listeners, connection bound, shutdown) and a
//     connection's loop: read a batch, run it, write its answers.
//   - dispatch.go: parsing a command (its name, arity, sequence name and
//     count) and dispatching it: answered at once, or marked for the leader.
//   - auth.go: AUTH and HELLO, the commands that authenticate a connection.
//   - pipeline.go: running a batch in order: which reservations run
//     together as one, and when a read or create runs.
//   - execute.go: running a reservation, read or create here or at the
//     leader, a TICKETD.SNOWFLAKE here, and the Redis errors for the
//     store's errors.
//   - emulated.go: CLIENT, COMMAND and INFO, what client libraries send on
//     connect.
//   - forward.go: a follower's client of the leader's HTTP API.
//   - deadline.go: the shared deadline contexts commands run under.
package respapi
