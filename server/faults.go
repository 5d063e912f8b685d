//go:build ticketd_faults

package server

import "github.com/ticketd/ticketd/fsm"

// This file is compiled only with -tags ticketd_faults: the binary the
// fault-injection suite uses to show that it catches each planted bug.
// nofaults.go is its counterpart in every other build.

type faultConfig struct {
	// UnsafeFSM plants bugs in the state machine (see fsm.Faults).
	UnsafeFSM fsm.Faults
}

func (c faultConfig) plantFaults(f *fsm.FSM) { f.PlantFaults(c.UnsafeFSM) }
