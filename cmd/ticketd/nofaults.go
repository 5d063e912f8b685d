//go:build !ticketd_faults

package main

import (
	"flag"

	"github.com/ticketd/ticketd/fsm"
	"github.com/ticketd/ticketd/server"
)

const faultsBuild = false

func registerFaultFlag(*flag.FlagSet) *string { s := ""; return &s }

func applyFaults(string, *server.Config) error { return nil }

func promoteFaults(string) (func(*fsm.FSM), error) { return nil, nil }
