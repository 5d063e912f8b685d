//go:build ticketd_faults

package client

// This file is compiled only with -tags ticketd_faults: the ticketd binary
// the fault-injection suite uses to show that its checker catches each
// planted bug of the Snowflake service, whose nodes run this package's
// generator. snowflake_nofaults.go is its counterpart in every other build,
// where WithUnsafeFaults does not exist.

// UnsafeSnowflakeFaults are bugs to plant in a generator. TEST ONLY.
type UnsafeSnowflakeFaults struct {
	// ServeAfterLeaseEnd: issue past the lease's deadline (by either
	// clock), as if a renewal were sure to come.
	ServeAfterLeaseEnd bool
	// IgnoreTimestampFloor: take no notice of the timestamp floor a grant
	// carries, so a new tenure of a worker id may reuse an earlier one's
	// timestamps when this clock is behind that holder's.
	IgnoreTimestampFloor bool
}

type sfFaults = UnsafeSnowflakeFaults

// WithUnsafeFaults plants bugs in the generator. TEST ONLY: it exists only
// in builds with -tags ticketd_faults.
func WithUnsafeFaults(f UnsafeSnowflakeFaults) SnowflakeOption {
	return func(c *sfConfig) error {
		c.faults = f
		return nil
	}
}

func (f sfFaults) serveAfterLeaseEnd() bool   { return f.ServeAfterLeaseEnd }
func (f sfFaults) ignoreTimestampFloor() bool { return f.IgnoreTimestampFloor }
