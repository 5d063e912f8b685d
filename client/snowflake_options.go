package client

import "time"

// The options of a Snowflake generator (snowflake_generator.go): its clock,
// holder name, worker id, safety margin and waits.

// Clock is the time source of a Snowflake generator. Inject one with
// WithClock to test clock steps; the default reads time.Now once per call.
type Clock interface {
	// Now returns the wall-clock time and a monotonic reading: a duration
	// from any fixed origin that never decreases and is not affected by
	// steps of the wall clock.
	Now() (wall time.Time, mono time.Duration)
}

type systemClock struct{ base time.Time }

func (c systemClock) Now() (time.Time, time.Duration) {
	t := time.Now()
	return t, t.Sub(c.base) // both readings carry the monotonic clock: Sub uses it
}

// SnowflakeOption configures a Snowflake; pass them to Client.Snowflake.
type SnowflakeOption func(*sfConfig) error

type sfConfig struct {
	holder      string
	clock       Clock
	maxBackward time.Duration
	margin      time.Duration // 0: a tenth of the TTL
	leaseWait   time.Duration
	// chosen: lease workerID and no other (WithWorkerID).
	chosen   bool
	workerID int64
	// unordered: issue from per-core shards (UnorderedSnowflake).
	unordered bool
	// faults are planted bugs (snowflake_faults.go; none in other builds).
	faults sfFaults
}

// WithWorkerID makes the generator lease this worker id and no other: in a
// namespace of worker role shard (PUT /v1/namespaces/{name} with preset
// "instagram"), the shard its IDs are to carry, which the cluster requires
// a lease to choose. The cluster grants it only when it is free: never
// leased, or its last lease ended and its recycle delay passed. Until then
// the generator keeps asking in the background, and Next and Wait fail with
// ErrLeaseExpired wrapping a *WorkerUnavailableError (ErrWorkerUnavailable)
// that names the holder. A lease lost later is asked for again, the same
// id; and a timestamp floor past the lease's deadline (see Snowflake) is
// waited out under the lease instead of giving it back, since any other
// lease would be the same id after a recycle delay.
func WithWorkerID(id int64) SnowflakeOption {
	return func(c *sfConfig) error {
		if id < 0 {
			return invalidf("WithWorkerID: negative worker id %d", id)
		}
		c.chosen, c.workerID = true, id
		return nil
	}
}

// WithHolder names the lease holder, as the cluster records it in its
// audit and shows it in inspections (1 to 256 bytes). Default:
// "hostname/pid/random".
func WithHolder(name string) SnowflakeOption {
	return func(c *sfConfig) error {
		if name == "" || len(name) > 256 {
			return invalidf("WithHolder: the holder must be 1 to 256 bytes, got %d", len(name))
		}
		c.holder = name
		return nil
	}
}

// WithClock sets the generator's time source (for tests that step the
// clock). It decides timestamps and lease deadlines; the background renewals
// are scheduled with real timers whatever the clock.
func WithClock(clk Clock) SnowflakeOption {
	return func(c *sfConfig) error {
		if clk == nil {
			return invalidf("WithClock: nil Clock")
		}
		c.clock = clk
		return nil
	}
}

// WithMaxClockBackward sets the largest backward step of the wall clock that
// Next waits out (default DefaultMaxClockBackward); 0 waits out none.
func WithMaxClockBackward(d time.Duration) SnowflakeOption {
	return func(c *sfConfig) error {
		if d < 0 || d > time.Second {
			return invalidf("WithMaxClockBackward: want 0 to 1s, got %v", d)
		}
		c.maxBackward = d
		return nil
	}
}

// WithSafetyMargin sets how long before the lease could end the generator
// stops issuing: it issues only until (the time the last successful grant or
// renewal was sent) + TTL - margin. Default: a tenth of the TTL. It must be
// less than half the TTL when the lease arrives, or Next returns
// ErrInvalidArgument.
func WithSafetyMargin(d time.Duration) SnowflakeOption {
	return func(c *sfConfig) error {
		if d <= 0 {
			return invalidf("WithSafetyMargin: want a positive duration, got %v", d)
		}
		c.margin = d
		return nil
	}
}

// WithMaxClockSkew is accepted and ignored (a duration that is not positive
// is still refused with ErrInvalidArgument, as it always was).
//
// Deprecated: no longer used: since issue #18 the cluster hands out a
// timestamp floor with every grant, and the generator does not compare its
// clock with the cluster's (see Snowflake).
func WithMaxClockSkew(d time.Duration) SnowflakeOption {
	return func(c *sfConfig) error {
		if d <= 0 {
			return invalidf("WithMaxClockSkew: want a positive duration, got %v", d)
		}
		return nil
	}
}

// WithLeaseWait sets how long Next and NextN wait for a lease when the
// generator holds no valid one (default DefaultLeaseWait; ctx may end the
// wait sooner). 0 makes them fail at once with ErrLeaseExpired. Wait blocks
// for as long as its context allows.
func WithLeaseWait(d time.Duration) SnowflakeOption {
	return func(c *sfConfig) error {
		if d < 0 {
			return invalidf("WithLeaseWait: negative duration %v", d)
		}
		c.leaseWait = d
		return nil
	}
}
