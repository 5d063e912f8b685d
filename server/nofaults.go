//go:build !ticketd_faults

package server

import (
	"github.com/ticketd/ticketd/client"
	"github.com/ticketd/ticketd/fsm"
)

// Every build but the fault-injection one (faults.go): nothing is planted.

type faultConfig struct{}

func (faultConfig) plantFaults(*fsm.FSM) {}

func (faultConfig) raiseCutByCaller() bool { return false }

func (faultConfig) snowflakeOptions() []client.SnowflakeOption { return nil }
