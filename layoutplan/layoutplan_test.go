package layoutplan_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/fsm"
	"github.com/ticketd/ticketd/layoutplan"
)

// Reference times, in Unix ms:
//
//	2020-01-01T00:00:00Z = 1,577,836,800,000 (ticketd's default epoch)
//	2026-11-25T00:00:00Z = 1,795,564,800,000
//
// 2,520 days apart: 2,520 × 86,400,000 = 217,728,000,000 ms.
const (
	epoch2020 int64 = 1_577_836_800_000
	day2026   int64 = 1_795_564_800_000
)

// A year is 365.25 days = 365.25 × 86,400,000 = 31,557,600,000 ms.
//
//	30 years = 946,728,000,000 ms
//	10 years = 315,576,000,000 ms
//	2^39 =   549,755,813,888    2^40 = 1,099,511,627,776
//	2^41 = 2,199,023,255,552    2^44 = 17,592,186,044,416
const (
	years30 int64 = 946_728_000_000
	pow40   int64 = 1_099_511_627_776
	pow41   int64 = 2_199_023_255_552
)

func TestYearMs_SameAsTheServers(t *testing.T) {
	if layoutplan.YearMs != fsm.Year {
		t.Fatalf("YearMs %d, fsm.Year %d: years left would disagree with the server's", layoutplan.YearMs, fsm.Year)
	}
	if 365.25*86_400_000 != layoutplan.YearMs {
		t.Fatalf("YearMs %d is not 365.25 days", layoutplan.YearMs)
	}
}

func TestNeedsAt_HandComputed(t *testing.T) {
	base := layoutplan.Request{RatePerGenerator: 5000, Generators: 1000, Years: 30, TickMs: 1,
		EpochMs: day2026, NowMs: day2026}
	cases := []struct {
		name    string
		mod     func(r *layoutplan.Request)
		tick    int64
		t, w, s int
	}{
		// 30 y = 946,728,000,000 ms: 2^39 < that ≤ 2^40 → 40.
		// 1000 generators: 2^9 = 512 < 1000 ≤ 1024 = 2^10 → 10.
		// 5000 IDs/s at 1 ms = 5 per tick: 4 < 5 ≤ 8 = 2^3 → 3.
		{"the worked example", nil, 1, 40, 10, 3},
		// 10 ms ticks: 94,672,800,000 ticks; 2^36 = 68,719,476,736 <
		// that ≤ 2^37 = 137,438,953,472 → 37. 5000 IDs/s = 50 per
		// 10 ms tick: 32 < 50 ≤ 64 → 6. 37+10+6 = 53, as at 1 ms: the
		// tick moved 3 bits from timestamp to sequence.
		{"tick 10 ms", nil, 10, 37, 10, 6},
		// One generator still takes 1 worker bit (the server's minimum).
		{"generators = 1", func(r *layoutplan.Request) { r.Generators = 1 }, 1, 40, 1, 3},
		{"generators = 2", func(r *layoutplan.Request) { r.Generators = 2 }, 1, 40, 1, 3},
		{"generators = 3", func(r *layoutplan.Request) { r.Generators = 3 }, 1, 40, 2, 3},
		{"generators = 1024", func(r *layoutplan.Request) { r.Generators = 1024 }, 1, 40, 10, 3},
		{"generators = 1025", func(r *layoutplan.Request) { r.Generators = 1025 }, 1, 40, 11, 3},
		// 1 ID/s at 1 ms: 0.001 per tick → 1 bit (the minimum).
		{"rate = 1", func(r *layoutplan.Request) { r.RatePerGenerator = 1 }, 1, 40, 10, 1},
		// 4,096,000 IDs/s = 4,096 per ms = 2^12 exactly → 12;
		// one more ID/s → 4,096.001 per ms → 13.
		{"rate = 2^12 per ms", func(r *layoutplan.Request) { r.RatePerGenerator = 4_096_000 }, 1, 40, 10, 12},
		{"rate = 2^12 per ms + 1/s", func(r *layoutplan.Request) { r.RatePerGenerator = 4_096_001 }, 1, 40, 10, 13},
		// 1000 IDs/s at 7 ms ticks = 7 per tick → 3 bits (8).
		// 30 y / 7 ms = 135,246,857,142.9 ticks: 2^36 = 68,719,476,736
		// < that ≤ 2^37 = 137,438,953,472 → 37.
		{"tick 7 ms", func(r *layoutplan.Request) { r.RatePerGenerator = 1000 }, 7, 37, 10, 3},
		// 5 years asked: planned as 10 (the server's minimum).
		// 10 y = 315,576,000,000 ms: 2^38 = 274,877,906,944 < that ≤
		// 2^39 → 39.
		{"years below the server's 10", func(r *layoutplan.Request) { r.Years = 5 }, 1, 39, 10, 3},
		// Epoch 2020-01-01, now 2026-11-25: 217,728,000,000 ms have
		// passed; 30 more years: 1,164,456,000,000 ms > 2^40 → 41.
		{"epoch in the past", func(r *layoutplan.Request) { r.EpochMs = epoch2020 }, 1, 41, 10, 3},
		// An elapsed time that makes the need exactly 2^40 ms still fits
		// 40 bits; one ms more needs 41.
		{"need exactly 2^40 ms", func(r *layoutplan.Request) { r.EpochMs = r.NowMs - (pow40 - years30) }, 1, 40, 10, 3},
		{"need 2^40 + 1 ms", func(r *layoutplan.Request) { r.EpochMs = r.NowMs - (pow40 - years30) - 1 }, 1, 41, 10, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := base
			if c.mod != nil {
				c.mod(&r)
			}
			if err := r.Validate(); err != nil {
				t.Fatal(err)
			}
			n := r.NeedsAt(c.tick)
			if n.TimestampBits != c.t || n.WorkerBits != c.w || n.SequenceBits != c.s {
				t.Fatalf("needs %d/%d/%d, want %d/%d/%d", n.TimestampBits, n.WorkerBits, n.SequenceBits, c.t, c.w, c.s)
			}
		})
	}
}

func TestLayout_ClassicFigures_HandComputed(t *testing.T) {
	cases := []struct {
		l          layoutplan.Layout
		exhaustsMs int64
		years      float64 // from the epoch
		idsPerSec  float64
		workers    int64
	}{
		// Twitter: 2^41 ms = 2,199,023,255,552 ms / 31,557,600,000 =
		// 69.68 years (69.73 with 365-day years); 2^12 = 4,096 IDs per
		// ms = 4,096,000 IDs/s; 2^10 = 1,024 workers.
		{layoutplan.Layout{TimestampBits: 41, WorkerBits: 10, SequenceBits: 12, TickMs: 1}, pow41, 69.6828, 4_096_000, 1024},
		// Instagram: same 41 bits; 2^10 = 1,024 per ms = 1,024,000
		// IDs/s; 2^13 = 8,192 shards.
		{layoutplan.Layout{TimestampBits: 41, WorkerBits: 13, SequenceBits: 10, TickMs: 1}, pow41, 69.6828, 1_024_000, 8192},
		// Sonyflake: 2^39 × 10 ms = 5,497,558,138,880 ms = 174.21
		// years; 2^8 = 256 per 10 ms = 25,600 IDs/s; 2^16 = 65,536.
		{layoutplan.Layout{TimestampBits: 39, WorkerBits: 16, SequenceBits: 8, TickMs: 10}, 5_497_558_138_880, 174.2071, 25_600, 65_536},
	}
	for _, c := range cases {
		if got := c.l.ExhaustsAtMs(); got != c.exhaustsMs {
			t.Errorf("%+v: exhausts at %d, want %d", c.l, got, c.exhaustsMs)
		}
		if got := c.l.YearsLeft(0); math.Abs(got-c.years) > 0.0001 {
			t.Errorf("%+v: %.4f years, want %.4f", c.l, got, c.years)
		}
		if got := c.l.IDsPerSecond(); got != c.idsPerSec {
			t.Errorf("%+v: %v IDs/s, want %v", c.l, got, c.idsPerSec)
		}
		if got := c.l.Generators(); got != c.workers {
			t.Errorf("%+v: %d workers, want %d", c.l, got, c.workers)
		}
	}
	// 3 ms ticks, 1 sequence bit: 2 IDs per 3 ms = 666.67 IDs/s.
	l := layoutplan.Layout{TimestampBits: 40, WorkerBits: 22, SequenceBits: 1, TickMs: 3}
	if got := l.IDsPerSecond(); math.Abs(got-2000.0/3) > 1e-9 {
		t.Errorf("3 ms, 1 bit: %v IDs/s, want 666.67", got)
	}
}

// ExhaustsAtMs is the fsm's EndMs (the start of the last tick) plus one
// tick, for the layouts the server accepts.
func TestExhaustsAtMs_AgreesWithFSMEndMs(t *testing.T) {
	for _, l := range []layoutplan.Layout{
		{TimestampBits: 41, WorkerBits: 10, SequenceBits: 12, TickMs: 1, EpochMs: epoch2020},
		{TimestampBits: 39, WorkerBits: 16, SequenceBits: 8, TickMs: 10, EpochMs: epoch2020},
		{TimestampBits: 44, WorkerBits: 13, SequenceBits: 6, TickMs: 1, EpochMs: day2026},
		{TimestampBits: 30, WorkerBits: 1, SequenceBits: 32, TickMs: 60_000, EpochMs: 0},
	} {
		n := fsm.Namespace{EpochMs: l.EpochMs, TimestampBits: l.TimestampBits, WorkerBits: l.WorkerBits,
			SequenceBits: l.SequenceBits, TickMs: l.TickMs}
		if got, want := l.ExhaustsAtMs(), n.EndMs()+l.TickMs; got != want {
			t.Errorf("%+v: exhausts at %d, fsm EndMs + tick = %d", l, got, want)
		}
	}
}

func TestExhaustsWithin_DefaultNamespace(t *testing.T) {
	// ticketd's default namespace: 41 bits of 1 ms from 2020-01-01.
	// Runs out at 1,577,836,800,000 + 2,199,023,255,552 =
	// 3,776,860,055,552 ms (2089-09-06T15:47:35.552Z). From 2026-11-25:
	// 1,981,295,255,552 ms = 62.78 years left.
	l := layoutplan.Layout{TimestampBits: 41, WorkerBits: 10, SequenceBits: 12, TickMs: 1, EpochMs: epoch2020}
	const left int64 = 1_981_295_255_552
	if got := l.ExhaustsAtMs(); got != 3_776_860_055_552 {
		t.Fatalf("exhausts at %d", got)
	}
	within, years := layoutplan.ExhaustsWithin(l, day2026, 70*layoutplan.YearMs)
	if !within || math.Abs(years-62.7834) > 0.0001 {
		t.Fatalf("within 70 years: %v, %.4f years; want true, 62.7834", within, years)
	}
	if within, _ := layoutplan.ExhaustsWithin(l, day2026, 60*layoutplan.YearMs); within {
		t.Fatal("62.78 years left counted as within 60")
	}
	// The boundary: running out exactly at the horizon is not within it.
	if within, _ := layoutplan.ExhaustsWithin(l, day2026, left); within {
		t.Fatal("exhausting exactly at the horizon counted as within")
	}
	if within, _ := layoutplan.ExhaustsWithin(l, day2026, left+1); !within {
		t.Fatal("exhausting 1 ms before the horizon not counted as within")
	}
	// Already exhausted: negative years.
	within, years = layoutplan.ExhaustsWithin(l, 3_776_860_055_552+layoutplan.YearMs, 0)
	if !within || years != -1 {
		t.Fatalf("a year past the end: %v, %v; want true, -1", within, years)
	}
}

func TestExhausts_OverflowSaturates(t *testing.T) {
	cases := []layoutplan.Layout{
		// 2^62 × 60,000 ms passes int64 (2^62 × 2^15.9).
		{TimestampBits: 62, WorkerBits: 0, SequenceBits: 1, TickMs: 60_000},
		{TimestampBits: 63, TickMs: 1},
		{TimestampBits: 255, TickMs: 1},
		// 2^41 ms after an epoch near the end of int64.
		{TimestampBits: 41, TickMs: 1, EpochMs: math.MaxInt64 - 1000},
		// Negative epoch: 2^62 ticks of 2 ms pass int64 however far back.
		{TimestampBits: 62, TickMs: 2, EpochMs: -1},
	}
	for _, l := range cases {
		if got := l.ExhaustsAtMs(); got != math.MaxInt64 {
			t.Errorf("%+v: exhausts at %d, want saturation at MaxInt64", l, got)
		}
		if within, years := layoutplan.ExhaustsWithin(l, math.MinInt64, math.MaxInt64); within || years <= 0 {
			t.Errorf("%+v from MinInt64: within %v, %v years", l, within, years)
		}
	}
	// Just inside the range: 2^62 ticks of 1 ms after epoch 0.
	l := layoutplan.Layout{TimestampBits: 62, TickMs: 1}
	if got := l.ExhaustsAtMs(); got != 1<<62 {
		t.Errorf("2^62 ms: got %d", got)
	}
	// An invalid tick is exhausted at its epoch.
	if got := (layoutplan.Layout{TimestampBits: 41, TickMs: 0, EpochMs: 5}).ExhaustsAtMs(); got != 5 {
		t.Errorf("tick 0: exhausts at %d, want the epoch", got)
	}
	// Worker bits past int64 saturate; sequence bits stay finite floats.
	if got := (layoutplan.Layout{WorkerBits: 63}).Generators(); got != math.MaxInt64 {
		t.Errorf("63 worker bits: %d", got)
	}
}

func TestPropose_WorkedExample(t *testing.T) {
	// 5,000 IDs/s per generator, 1,000 generators, 30 years, 1 ms, epoch
	// = now. Needs 40/10/3 = 53 bits (TestNeedsAt_HandComputed): 10
	// spare. Balanced: 10 = 3×3 + 1 → +4 timestamp, +3 worker, +3
	// sequence = 44/13/6.
	now := day2026
	p, err := layoutplan.Propose(layoutplan.Request{RatePerGenerator: 5000, Generators: 1000, Years: 30, TickMs: 1,
		EpochMs: now, NowMs: now})
	if err != nil {
		t.Fatal(err)
	}
	if p.SpareBits != 10 || p.Needs.Total() != 53 {
		t.Fatalf("spare %d, total %d", p.SpareBits, p.Needs.Total())
	}
	want := []struct {
		name    string
		t, w, s uint8
		tick    int64
		fits    bool
	}{
		{"balanced", 44, 13, 6, 1, true},
		{"longest", 50, 10, 3, 1, true},
		{"most-generators", 40, 20, 3, 1, true},
		{"fastest", 40, 10, 13, 1, true},
		{"twitter", 41, 10, 12, 1, true},
		{"instagram-preset", 40, 13, 10, 1, true},
		// Sonyflake at 10 ms needs 37/10/6 (TestNeedsAt_HandComputed):
		// 39/16/8 fits.
		{"sonyflake", 39, 16, 8, 10, true},
		// ticketd's instagram preset 40/13/10: 2^40 ms = 34.84 y ≥ 30;
		// 2^10 per ms = 1,024,000 IDs/s; 8,192 shards ≥ 1,000: fits.
		// (Listed with the fitting classics, in classic order.)
		// Instagram uses 64 bits: listed last, refused.
		{"instagram", 41, 13, 10, 1, false},
	}
	if len(p.Candidates) != len(want) {
		t.Fatalf("%d candidates, want %d: %+v", len(p.Candidates), len(want), p.Candidates)
	}
	for i, w := range want {
		c := p.Candidates[i]
		if c.Name != w.name || c.TimestampBits != w.t || c.WorkerBits != w.w || c.SequenceBits != w.s || c.TickMs != w.tick || c.Fits != w.fits {
			t.Errorf("candidate %d: %s %d/%d/%d %d ms fits=%v; want %+v", i, c.Name, c.TimestampBits, c.WorkerBits, c.SequenceBits, c.TickMs, c.Fits, w)
		}
		if c.EpochMs != now {
			t.Errorf("%s: epoch %d, want the request's", c.Name, c.EpochMs)
		}
	}
	// Balanced: 2^44 ms = 17,592,186,044,416 ms = 557.46 years;
	// 2^6 = 64 per ms = 64,000 IDs/s, 12.8 × 5,000; × 1,000 generators
	// = 64,000,000 IDs/s; 2^13 = 8,192 workers, 8.192 × 1,000.
	b := p.Candidates[0]
	if b.ExhaustsAtMs != now+17_592_186_044_416 || math.Abs(b.YearsLeft-557.4627) > 0.0001 {
		t.Errorf("balanced: exhausts %d, %.4f years", b.ExhaustsAtMs, b.YearsLeft)
	}
	if b.IDsPerSecondPerGenerator != 64_000 || b.RateHeadroom != 12.8 || b.IDsPerSecondTotal != 64_000_000 {
		t.Errorf("balanced: %v IDs/s (%v×), %v in total", b.IDsPerSecondPerGenerator, b.RateHeadroom, b.IDsPerSecondTotal)
	}
	if b.MaxGenerators != 8192 || b.GeneratorHeadroom != 8.192 {
		t.Errorf("balanced: %d workers (%v×)", b.MaxGenerators, b.GeneratorHeadroom)
	}
	// Twitter's rate headroom: 4,096,000 / 5,000 = 819.2.
	if tw := p.Candidates[4]; tw.RateHeadroom != 819.2 {
		t.Errorf("twitter: rate headroom %v, want 819.2", tw.RateHeadroom)
	}
	ig := p.Candidates[7]
	if len(ig.Shortfalls) != 1 || ig.Shortfalls[0].Field != "bits" || ig.Shortfalls[0].Bits != 1 ||
		!strings.Contains(ig.Shortfalls[0].Message, "uses 64 bits, 1 over 63") {
		t.Errorf("instagram: %+v", ig.Shortfalls)
	}
}

func TestPropose_ClassicsShortByBits(t *testing.T) {
	// 100,000 IDs/s per generator, 5,000 generators, 100 years, 1 ms.
	// Needs: 100 y = 3,155,760,000,000 ms: 2^41 < that ≤ 2^42 → 42;
	// 5,000: 4,096 < 5,000 ≤ 8,192 → 13; 100 per ms: 64 < 100 ≤ 128 → 7.
	// 62 bits, 1 spare.
	now := day2026
	p, err := layoutplan.Propose(layoutplan.Request{RatePerGenerator: 100_000, Generators: 5000, Years: 100, TickMs: 1,
		EpochMs: now, NowMs: now})
	if err != nil {
		t.Fatal(err)
	}
	if n := p.Needs; n.TimestampBits != 42 || n.WorkerBits != 13 || n.SequenceBits != 7 || p.SpareBits != 1 {
		t.Fatalf("needs %+v, spare %d", n, p.SpareBits)
	}
	short := map[string]map[string]int{}
	for _, c := range p.Candidates {
		if !c.Classic {
			if !c.Fits {
				t.Errorf("proposal %s does not fit: %+v", c.Name, c.Shortfalls)
			}
			continue
		}
		short[c.Name] = map[string]int{}
		for _, s := range c.Shortfalls {
			short[c.Name][s.Field] = s.Bits
		}
	}
	// Spare 1: balanced = longest (43/13/7), so longest is left out.
	if names := candidateNames(p); strings.Join(names, ",") != "balanced,most-generators,fastest,twitter,instagram-preset,instagram,sonyflake" {
		t.Errorf("candidates %v", names)
	}
	// Twitter 41/10/12: timestamp 42−41 = 1 short (69.68 < 100 years),
	// worker 13−10 = 3 short (1,024 < 5,000).
	if got := short["twitter"]; len(got) != 2 || got["timestamp"] != 1 || got["worker"] != 3 {
		t.Errorf("twitter shortfalls %v", got)
	}
	// The preset 40/13/10: timestamp 42−40 = 2 short (34.84 < 100
	// years), shards enough (8,192 ≥ 5,000), sequence 10 bits, 7 needed.
	if got := short["instagram-preset"]; len(got) != 1 || got["timestamp"] != 2 {
		t.Errorf("instagram-preset shortfalls %v", got)
	}
	// Instagram 41/13/10: 64 bits, timestamp 1 short.
	if got := short["instagram"]; len(got) != 2 || got["bits"] != 1 || got["timestamp"] != 1 {
		t.Errorf("instagram shortfalls %v", got)
	}
	// Sonyflake at 10 ms: 100 y = 315,576,000,000 ticks: 2^38 <
	// that ≤ 2^39 → 39, fits; 100,000 IDs/s = 1,000 per tick → 10 bits,
	// 8 held: 2 short (25,600 IDs/s).
	if got := short["sonyflake"]; len(got) != 1 || got["sequence"] != 2 {
		t.Errorf("sonyflake shortfalls %v", got)
	}
	for _, c := range p.Candidates {
		// Twitter's 1,024 worker ids run 1,024 of the 5,000 generators:
		// 4,096,000 × 1,024 = 4,194,304,000 IDs/s in total.
		if c.Name == "twitter" && c.IDsPerSecondTotal != 4_194_304_000 {
			t.Errorf("twitter total %v", c.IDsPerSecondTotal)
		}
		if c.Name == "sonyflake" && c.Shortfalls[0].Message != "sequence 2 bits short: 25,600 IDs/s per generator, 100,000 asked" {
			t.Errorf("sonyflake message %q", c.Shortfalls[0].Message)
		}
		if c.Name == "twitter" && c.Shortfalls[0].Message != "timestamp 1 bit short: lasts 69.6 years, 100 needed" {
			t.Errorf("twitter message %q", c.Shortfalls[0].Message)
		}
	}
}

func candidateNames(p layoutplan.Plan) []string {
	var out []string
	for _, c := range p.Candidates {
		out = append(out, c.Name)
	}
	return out
}

func TestPropose_ExactFit_OneProposal(t *testing.T) {
	// 4,096,000 IDs/s (12 bits at 1 ms), 1,024 generators (10 bits), and
	// years that need exactly 41 bits: 63 bits, no spare. Every proposal
	// is 41/10/12, so only "balanced" is listed, and it is Twitter's.
	// 41 bits: more than 2^40 ms = 34.84 y, at most 2^41 = 69.68 y: 60.
	// Sonyflake at 10 ms would need 4,096,000 × 10 / 1000 = 40,960 per
	// tick: 16 sequence bits, it has 8; Instagram has 64 bits.
	p, err := layoutplan.Propose(layoutplan.Request{RatePerGenerator: 4_096_000, Generators: 1024, Years: 60, TickMs: 1,
		EpochMs: day2026, NowMs: day2026})
	if err != nil {
		t.Fatal(err)
	}
	if p.SpareBits != 0 {
		t.Fatalf("spare %d", p.SpareBits)
	}
	if names := candidateNames(p); strings.Join(names, ",") != "balanced,twitter,instagram-preset,instagram,sonyflake" {
		t.Fatalf("candidates %v", names)
	}
	if b := p.Candidates[0]; b.TimestampBits != 41 || b.WorkerBits != 10 || b.SequenceBits != 12 || b.RateHeadroom != 1 || b.GeneratorHeadroom != 1 {
		t.Fatalf("balanced %+v", b)
	}
}

func TestPropose_NoLayoutFits_SaysWhatAndByHowMuch(t *testing.T) {
	cases := []struct {
		name string
		r    layoutplan.Request
		want []string
	}{{
		// 50,000 IDs/s = 50 per ms → 6 bits; 1,000,000 generators:
		// 2^19 = 524,288 < 1e6 ≤ 2^20 → 20; 30 years → 40. 66 bits.
		name: "rate and generators too high",
		r:    layoutplan.Request{RatePerGenerator: 50_000, Generators: 1_000_000, Years: 30, TickMs: 1},
		want: []string{"needs 66 bits, 3 bits more than 63", "timestamp 40 bits (30 years at 1 ms ticks)",
			"worker 20 bits (1,000,000 generators)", "sequence 6 bits (50,000 IDs/s per generator at 1 ms ticks)"},
	}, {
		// 100,000,000 years = 3.15576 × 10^18 ms: 2^61 = 2.306 × 10^18
		// < that ≤ 2^62 → 62 timestamp bits, + 1 + 1 = 64.
		name: "years beyond 63 bits",
		r:    layoutplan.Request{RatePerGenerator: 1, Generators: 1, Years: 1e8, TickMs: 1},
		want: []string{"needs 64 bits, 1 bit more than 63", "timestamp 62 bits (100,000,000 years at 1 ms ticks)"},
	}, {
		// 10^12 years = 3.15576 × 10^22 ms: log2 = 74.74 → 75 bits.
		name: "the largest years",
		r:    layoutplan.Request{RatePerGenerator: 1, Generators: 1, Years: layoutplan.MaxYears, TickMs: 1},
		want: []string{"needs 77 bits, 14 bits more than 63", "timestamp 75 bits"},
	}, {
		// Every int64 at its largest: generators 2^63−1 → 63 bits; rate
		// 2^63−1 at 60 s ticks = 5.5 × 10^20 per tick → 69 bits; 10 years
		// at 60 s = 5,259,600 ticks: 2^22 < that ≤ 2^23 → 23. 155 bits.
		name: "int64 extremes",
		r:    layoutplan.Request{RatePerGenerator: math.MaxInt64, Generators: math.MaxInt64, Years: 1, TickMs: 60_000},
		want: []string{"needs 155 bits, 92 bits more than 63", "worker 63 bits", "sequence 69 bits"},
	}, {
		// An epoch far in the past eats years: from 1970 to 2026-11-25
		// (56.9 years) plus 30: 2^41 ms = 69.7 < 86.9 y → 42; 40,000
		// generators → 16 (65,536); 40,000 IDs/s = 40 per ms → 6. 64.
		name: "epoch at 1970",
		r:    layoutplan.Request{RatePerGenerator: 40_000, Generators: 40_000, Years: 30, TickMs: 1, EpochMs: 0},
		want: []string{"needs 64 bits, 1 bit more than 63", "timestamp 42 bits (30 years after the 56.8 years since the epoch"},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := c.r
			r.NowMs = day2026
			if c.name != "epoch at 1970" {
				r.EpochMs = day2026
			}
			_, err := layoutplan.Propose(r)
			if !errors.Is(err, layoutplan.ErrNoLayoutFits) {
				t.Fatalf("err %v, want ErrNoLayoutFits", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\n lacks %q", err, w)
				}
			}
		})
	}
}

func TestRequest_Validate(t *testing.T) {
	ok := layoutplan.Request{RatePerGenerator: 1, Generators: 1, Years: 1, TickMs: 1, EpochMs: day2026, NowMs: day2026}
	for name, mod := range map[string]func(*layoutplan.Request){
		"rate 0":          func(r *layoutplan.Request) { r.RatePerGenerator = 0 },
		"rate negative":   func(r *layoutplan.Request) { r.RatePerGenerator = -5 },
		"generators 0":    func(r *layoutplan.Request) { r.Generators = 0 },
		"years 0":         func(r *layoutplan.Request) { r.Years = 0 },
		"years negative":  func(r *layoutplan.Request) { r.Years = -1 },
		"years NaN":       func(r *layoutplan.Request) { r.Years = math.NaN() },
		"years +Inf":      func(r *layoutplan.Request) { r.Years = math.Inf(1) },
		"years too many":  func(r *layoutplan.Request) { r.Years = 2 * layoutplan.MaxYears },
		"tick 0":          func(r *layoutplan.Request) { r.TickMs = 0 },
		"tick 60001":      func(r *layoutplan.Request) { r.TickMs = 60_001 },
		"epoch negative":  func(r *layoutplan.Request) { r.EpochMs = -1 },
		"epoch after now": func(r *layoutplan.Request) { r.EpochMs = r.NowMs + 1 },
	} {
		r := ok
		mod(&r)
		if _, err := layoutplan.Propose(r); !errors.Is(err, layoutplan.ErrInvalidRequest) {
			t.Errorf("%s: err %v, want ErrInvalidRequest", name, err)
		}
	}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestFormat(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{layoutplan.FormatCount(0), "0"},
		{layoutplan.FormatCount(999), "999"},
		{layoutplan.FormatCount(1000), "1,000"},
		{layoutplan.FormatCount(4_096_000), "4,096,000"},
		{layoutplan.FormatCount(2000.0 / 3), "666.6"},
		{layoutplan.FormatCount(1e15), "1e+15"},
		{layoutplan.FormatRatio(0.999), "0.99×"},
		{layoutplan.FormatRatio(1.024), "1.02×"},
		{layoutplan.FormatRatio(12.8), "12.8×"},
		{layoutplan.FormatRatio(819.2), "819×"},
		{layoutplan.FormatRatio(1048.576), "1,048×"},
		{layoutplan.FormatYears(30), "30"},
		{layoutplan.FormatYears(69.6828), "69.6"},
		{layoutplan.FormatYears(35_677.615), "35,677.6"},
		{layoutplan.FormatYears(-1.5), "-1.5"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

func TestEvaluate_TickOutOfRange(t *testing.T) {
	r := layoutplan.Request{RatePerGenerator: 1, Generators: 1, Years: 1, TickMs: 1, EpochMs: day2026, NowMs: day2026}
	for _, tick := range []int64{0, -1, 60_001} {
		c := layoutplan.Evaluate(layoutplan.Layout{TimestampBits: 41, WorkerBits: 10, SequenceBits: 12, TickMs: tick}, r, "", false)
		if c.Fits || len(c.Shortfalls) != 1 || c.Shortfalls[0].Field != "tick" {
			t.Errorf("tick %d: %+v", tick, c)
		}
	}
}
