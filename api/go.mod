module github.com/ticketd/ticketd/api

go 1.25
