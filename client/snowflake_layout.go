package client

import (
	"fmt"
	"math"
	"time"

	"github.com/ticketd/ticketd/api"
)

// The layout of a namespace's Snowflake IDs, timestamp | worker id |
// sequence from the top bit down: its form in the generator's units, and
// DecodeSnowflake, which takes an ID apart.

// sfLayout is a namespace's layout in the units the generator computes in.
type sfLayout struct {
	ns          api.Namespace
	epochNs     int64
	tickNs      int64
	seqBits     uint8
	workerShift uint8 // seqBits
	tsShift     uint8 // seqBits + workerBits
	maxTick     int64
	maxSeq      int64
	maxWorker   int64
}

func newLayout(n api.Namespace) (*sfLayout, error) {
	if n.TimestampBits < 1 || n.WorkerBits < 1 || n.SequenceBits < 1 ||
		int(n.TimestampBits)+int(n.WorkerBits)+int(n.SequenceBits) != 63 {
		return nil, fmt.Errorf("bits %d+%d+%d do not make 63", n.TimestampBits, n.WorkerBits, n.SequenceBits)
	}
	if n.TickMs < 1 || n.TickMs > 60_000 || n.EpochMs < 0 || n.EpochMs > (1<<62)/1_000_000 {
		return nil, fmt.Errorf("tick_ms %d or epoch_ms %d out of range", n.TickMs, n.EpochMs)
	}
	return &sfLayout{
		ns: n, epochNs: n.EpochMs * 1e6, tickNs: n.TickMs * 1e6,
		seqBits: n.SequenceBits, workerShift: n.SequenceBits, tsShift: n.SequenceBits + n.WorkerBits,
		maxTick: 1<<n.TimestampBits - 1, maxSeq: 1<<n.SequenceBits - 1, maxWorker: 1<<n.WorkerBits - 1,
	}, nil
}

// aboveFloor returns the start of the first tick that starts after floorMs
// (Unix ms): the lowest timestamp a holder whose timestamp floor is floorMs
// may use. An ID's timestamp t covers [epoch + t·tick, epoch + (t+1)·tick);
// an earlier holder may have used every tick that starts at or before its
// bound, the floor, so the next holder takes only ticks that start after it.
// It is math.MaxInt64 for a floor beyond what the clock can express.
func (l *sfLayout) aboveFloor(floorMs int64) int64 {
	if floorMs <= 0 {
		return 0
	}
	if floorMs > (math.MaxInt64-l.tickNs)/1e6 {
		return math.MaxInt64
	}
	f := floorMs * 1e6
	if f < l.epochNs {
		return l.epochNs // every tick starts after the floor
	}
	return l.epochNs + ((f-l.epochNs)/l.tickNs+1)*l.tickNs
}

func (l *sfLayout) same(n api.Namespace) bool {
	return l.ns.EpochMs == n.EpochMs && l.ns.TimestampBits == n.TimestampBits && l.ns.WorkerBits == n.WorkerBits &&
		l.ns.SequenceBits == n.SequenceBits && l.ns.TickMs == n.TickMs
}

// SnowflakeParts is a Snowflake ID taken apart.
type SnowflakeParts struct {
	// Time is the start of the ID's tick.
	Time     time.Time
	TimeMs   int64
	WorkerID int64
	Sequence int64
}

// DecodeSnowflake takes an ID of a namespace with the given layout apart:
// timestamp | worker | sequence, from the top bit down.
func DecodeSnowflake(layout api.Namespace, id int64) SnowflakeParts {
	ts := id >> (layout.SequenceBits + layout.WorkerBits)
	ms := layout.EpochMs + ts*layout.TickMs
	return SnowflakeParts{
		Time:     time.UnixMilli(ms),
		TimeMs:   ms,
		WorkerID: (id >> layout.SequenceBits) & (1<<layout.WorkerBits - 1),
		Sequence: id & (1<<layout.SequenceBits - 1),
	}
}
