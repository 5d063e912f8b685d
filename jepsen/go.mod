module github.com/ticketd/ticketd/jepsen

go 1.26.8

// The root module holds internal/proc, the process harness shared with the
// e2e tests; it imports only the standard library, so the root module's
// dependencies stay out of this module's build.
replace (
	github.com/ticketd/ticketd => ../
	github.com/ticketd/ticketd/api => ../api
	github.com/ticketd/ticketd/client => ../client
)

require (
	github.com/anishathalye/porcupine v1.3.1
	github.com/ticketd/ticketd v0.0.0-00010101000000-000000000000
	github.com/ticketd/ticketd/api v0.0.0-00010101000000-000000000000
	github.com/ticketd/ticketd/client v0.0.0-00010101000000-000000000000
	golang.org/x/sys v0.49.0
)

require github.com/cenkalti/backoff/v5 v5.0.3 // indirect
