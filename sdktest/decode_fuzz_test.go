package sdktest

import (
	"math"
	"testing"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/client"
	"github.com/ticketd/ticketd/fsm"
)

// FuzzDecodeSnowflake_SDKAndServerAgree takes arbitrary IDs apart with
// arbitrary layouts, in the SDK (client.DecodeSnowflake) and in the server
// (fsm.Namespace.Decode, behind GET /v1/inspect/snowflake): the two must
// never disagree about an ID. The SDK's own properties of the decoding are
// client.FuzzDecodeSnowflake.
func FuzzDecodeSnowflake_SDKAndServerAgree(f *testing.F) {
	f.Add(api.DefaultEpochMs, uint8(41), uint8(10), uint8(12), int64(1), int64(1234567890123456789))
	f.Add(api.DefaultEpochMs, uint8(41), uint8(10), uint8(12), int64(1), int64(-1))
	f.Add(int64(0), uint8(1), uint8(1), uint8(61), int64(60_000), int64(math.MaxInt64))
	f.Add(int64(0), uint8(61), uint8(1), uint8(1), int64(60_000), int64(math.MaxInt64))
	f.Add(int64(1<<62)/1_000_000, uint8(49), uint8(2), uint8(12), int64(10), int64(1<<62))
	f.Add(int64(0), uint8(0), uint8(0), uint8(0), int64(0), int64(7))
	f.Add(int64(-1), uint8(255), uint8(255), uint8(255), int64(-1), int64(math.MinInt64))
	f.Add(int64(math.MaxInt64), uint8(41), uint8(64), uint8(12), int64(math.MaxInt64), int64(12345))
	f.Fuzz(func(t *testing.T, epochMs int64, tsBits, workerBits, seqBits uint8, tickMs int64, id int64) {
		lay := api.Namespace{Name: "ns", EpochMs: epochMs, TimestampBits: tsBits, WorkerBits: workerBits, SequenceBits: seqBits, TickMs: tickMs}
		sdk := client.DecodeSnowflake(lay, id)
		srv := fsm.Namespace{Name: "ns", EpochMs: epochMs, TimestampBits: tsBits, WorkerBits: workerBits, SequenceBits: seqBits, TickMs: tickMs}.Decode(id)
		if sdk.TimeMs != srv.TimeMs || sdk.WorkerID != srv.WorkerID || sdk.Sequence != srv.Sequence {
			t.Fatalf("layout %+v, id %d: the SDK decodes %+v, the server %+v", lay, id, sdk, srv)
		}
	})
}
