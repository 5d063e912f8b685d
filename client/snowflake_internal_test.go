package client

import (
	"math"
	"testing"
	"time"

	"github.com/ticketd/ticketd/api"
)

// TestLayout_AboveFloor_FirstTickStartingAfterTheFloor: an earlier holder
// may have used every tick that starts at or before the floor, so the
// lowest timestamp allowed is the start of the first tick that starts after
// it, also when the floor is a tick's start.
func TestLayout_AboveFloor_FirstTickStartingAfterTheFloor(t *testing.T) {
	lay, err := newLayout(api.Namespace{EpochMs: 1000, TimestampBits: 41, WorkerBits: 10, SequenceBits: 12, TickMs: 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ floorMs, wantMs int64 }{
		{0, 0},           // no floor
		{-5, 0},          // none either
		{999, 1000},      // before the epoch: every tick starts after it
		{1000, 1010},     // the epoch's tick starts at the floor: skipped
		{1001, 1010},     // inside the first tick
		{1009, 1010},     // its last millisecond
		{1010, 1020},     // the start of the second tick
		{123456, 123460}, // anywhere
	} {
		if got := lay.aboveFloor(c.floorMs); got != c.wantMs*1e6 {
			t.Errorf("aboveFloor(%d) = %d ns; want %d ms", c.floorMs, got, c.wantMs)
		}
	}
	if got := lay.aboveFloor(math.MaxInt64 / 1000); got != math.MaxInt64 {
		t.Errorf("aboveFloor(beyond the clock) = %d; want MaxInt64", got)
	}
}

// TestClientTimeMs_RoundsUp: client_time_ms + TTL must stay above the
// lease's wall deadline (send time + TTL - margin) for any margin, so the
// send time is rounded up to the millisecond, never down.
func TestClientTimeMs_RoundsUp(t *testing.T) {
	for _, c := range []struct {
		ns   int64
		want int64
	}{
		{1_700_000_000_000_000_000, 1_700_000_000_000},
		{1_700_000_000_000_000_001, 1_700_000_000_001},
		{1_700_000_000_000_999_999, 1_700_000_000_001},
		{1_700_000_000_001_000_000, 1_700_000_000_001},
	} {
		if got := clientTimeMs(time.Unix(0, c.ns)); got != c.want {
			t.Errorf("clientTimeMs(%d ns) = %d; want %d", c.ns, got, c.want)
		}
	}
}

// TestGrantTrack_OneLeaseNamedMixedNot: a call's IDs are named by their
// lease only if they all came from one (issue 47).
func TestGrantTrack_OneLeaseNamedMixedNot(t *testing.T) {
	var nilTrack *grantTrack
	nilTrack.note(&sfLease{grantSeq: 1}) // NextN follows nothing
	var one grantTrack
	one.note(&sfLease{grantSeq: 7})
	one.note(&sfLease{grantSeq: 7})
	var two grantTrack
	two.note(&sfLease{grantSeq: 7})
	two.note(&sfLease{grantSeq: 8})
	if one.mixed || one.seq != 7 || !two.mixed {
		t.Fatalf("one lease %+v, two %+v", one, two)
	}
}
