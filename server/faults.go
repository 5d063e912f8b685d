//go:build ticketd_faults

package server

import (
	"github.com/ticketd/ticketd/client"
	"github.com/ticketd/ticketd/fsm"
)

// This file is compiled only with -tags ticketd_faults: the binary the
// fault-injection suite uses to show that it catches each planted bug.
// nofaults.go is its counterpart in every other build.

type faultConfig struct {
	// UnsafeFSM plants bugs in the state machine (see fsm.Faults).
	UnsafeFSM fsm.Faults
	// UnsafeRaiseCutByCaller brings back the code before issue 30: the
	// leader's issuer is cut by the raise handler after its Apply returned,
	// not where the entry applies, so a raise whose caller hung up moves
	// the mark while the leader goes on serving what it holds below it.
	UnsafeRaiseCutByCaller bool
	// UnsafeSnowflake plants bugs in this node's Snowflake generators.
	UnsafeSnowflake client.UnsafeSnowflakeFaults
}

func (c faultConfig) snowflakeOptions() []client.SnowflakeOption {
	if c.UnsafeSnowflake == (client.UnsafeSnowflakeFaults{}) {
		return nil
	}
	return []client.SnowflakeOption{client.WithUnsafeFaults(c.UnsafeSnowflake)}
}

func (c faultConfig) raiseCutByCaller() bool { return c.UnsafeRaiseCutByCaller }

func (c faultConfig) plantFaults(f *fsm.FSM) { f.PlantFaults(c.UnsafeFSM) }
