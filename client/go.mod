module github.com/ticketd/ticketd/client

go 1.25

require (
	github.com/cenkalti/backoff/v5 v5.0.3
	github.com/ticketd/ticketd/api v0.0.0-00010101000000-000000000000
)

replace github.com/ticketd/ticketd/api => ../api
