// Package layoutplan plans Snowflake bit layouts: given how many IDs per
// second one generator must make, how many generators run at once and how
// many years the IDs must last, it finds how many timestamp, worker and
// sequence bits each need, proposes 63-bit layouts that fit, and evaluates
// the classic layouts (Twitter, Instagram, Sonyflake) against the same
// request.
//
// The package is pure: it reads no clock (now is a parameter) and does no
// I/O, so the command line (`ticketd plan`) and the server (a warning when a
// namespace runs out soon, see ExhaustsWithin) share one arithmetic.
//
// # The arithmetic
//
// A layout of t timestamp, w worker and s sequence bits with ticks of T ms
// and an epoch E (Unix ms) gives:
//
//   - time: 2^t ticks, so its timestamps run out at E + 2^t·T ms
//     (ExhaustsAtMs; fsm.Namespace.EndMs is one tick earlier, the start of
//     the last tick);
//   - rate: 2^s IDs per tick per generator, 2^s·1000/T IDs/s;
//   - generators: 2^w worker ids leased at once.
//
// A request for R IDs/s per generator, G generators and Y years from now
// therefore needs the smallest t with E + 2^t·T − now ≥ Y years, the
// smallest s with 2^s·1000 ≥ R·T and the smallest w with 2^w ≥ G (each at
// least 1, as the server requires). When t+w+s > 63 no layout fits and
// Propose says which field needs how many bits; otherwise the spare bits
// are handed out in a few ways (Propose's doc).
//
// The tick only moves bits between timestamp and sequence: halving it
// adds a timestamp bit and saves a sequence bit. What decides whether a
// request fits is, up to rounding each field to a power of two, whether the
// IDs a generator makes over its lifetime (R × seconds) times G stays below
// 2^63 ≈ 9.2 × 10^18.
//
// A year is 365.25 days, as fsm.Year, so "years left" here and in the
// server's namespace view agree.
//
// All arithmetic on bits and milliseconds is in int64 with explicit
// overflow checks (a time past the int64 range saturates at
// math.MaxInt64); rates and headroom ratios are float64, for display.
package layoutplan

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strings"
)

const (
	// TotalBits is how many bits a layout shares out: IDs are positive
	// int64s.
	TotalBits = 63
	// YearMs is a year of 365.25 days in milliseconds (as fsm.Year).
	YearMs int64 = 31_557_600_000
	// MinYearsLeft is the server's rule: a namespace must have at least
	// this many years left when it is created. Propose plans for at least
	// this long.
	MinYearsLeft = 10
	// MaxTickMs is the longest tick the server accepts.
	MaxTickMs int64 = 60_000
	// MaxYears bounds a request's years (far beyond what 63 bits hold at
	// any tick; it only keeps the arithmetic finite).
	MaxYears = 1e12
)

var (
	// ErrInvalidRequest: a request's numbers are out of range.
	ErrInvalidRequest = errors.New("invalid plan request")
	// ErrNoLayoutFits: the request needs more than 63 bits.
	ErrNoLayoutFits = errors.New("no layout fits in 63 bits")
)

// Layout is a Snowflake bit layout: the part of a namespace that decides
// its capacity.
type Layout struct {
	Name          string `json:"name"`
	TimestampBits uint8  `json:"timestamp_bits"`
	WorkerBits    uint8  `json:"worker_bits"`
	SequenceBits  uint8  `json:"sequence_bits"`
	TickMs        int64  `json:"tick_ms"`
	// EpochMs is the Unix time in ms that timestamp 0 stands for.
	EpochMs int64 `json:"epoch_ms"`
}

// Bits is t+w+s.
func (l Layout) Bits() int {
	return int(l.TimestampBits) + int(l.WorkerBits) + int(l.SequenceBits)
}

// ExhaustsAtMs is the first Unix millisecond no timestamp of the layout can
// stand for: EpochMs + 2^TimestampBits·TickMs, saturating at
// math.MaxInt64. A layout with TickMs < 1 is not valid; it is taken to be
// exhausted at its epoch.
func (l Layout) ExhaustsAtMs() int64 {
	if l.TickMs < 1 {
		return l.EpochMs
	}
	if l.TimestampBits >= 63 {
		return math.MaxInt64
	}
	ticks := int64(1) << l.TimestampBits
	if l.EpochMs > 0 && ticks > (math.MaxInt64-l.EpochMs)/l.TickMs {
		return math.MaxInt64
	}
	if l.EpochMs <= 0 && ticks > math.MaxInt64/l.TickMs {
		return math.MaxInt64
	}
	return l.EpochMs + ticks*l.TickMs
}

// YearsLeft is how many years after nowMs the layout's timestamps run out
// (negative if they already have).
func (l Layout) YearsLeft(nowMs int64) float64 {
	return float64(satSub(l.ExhaustsAtMs(), nowMs)) / float64(YearMs)
}

// IDsPerSecond is how many IDs one generator can make per second:
// 2^SequenceBits per tick.
func (l Layout) IDsPerSecond() float64 {
	if l.TickMs < 1 {
		return 0
	}
	return math.Ldexp(1000, int(l.SequenceBits)) / float64(l.TickMs)
}

// Generators is how many worker ids the layout has: 2^WorkerBits,
// saturating at math.MaxInt64.
func (l Layout) Generators() int64 {
	if l.WorkerBits >= 63 {
		return math.MaxInt64
	}
	return int64(1) << l.WorkerBits
}

// ExhaustsWithin reports whether the layout's timestamps run out less than
// horizonMs after nowMs, and how many years after nowMs they run out
// (negative if they already have). The server can use it to warn when a
// namespace is created, e.g. ExhaustsWithin(l, now, 20*YearMs).
func ExhaustsWithin(l Layout, nowMs, horizonMs int64) (bool, float64) {
	left := satSub(l.ExhaustsAtMs(), nowMs)
	return left < horizonMs, float64(left) / float64(YearMs)
}

// satSub is a−b, saturating at the int64 range.
func satSub(a, b int64) int64 {
	d := a - b
	if (b < 0 && d < a) || (b > 0 && d > a) {
		if b < 0 {
			return math.MaxInt64
		}
		return math.MinInt64
	}
	return d
}

// Request is what a plan is for.
type Request struct {
	// RatePerGenerator is the peak number of IDs per second one generator
	// (one worker id) must make. The total is RatePerGenerator ×
	// Generators.
	RatePerGenerator int64 `json:"rate_per_generator"`
	// Generators is how many generators hold a worker id at once, at most.
	Generators int64 `json:"generators"`
	// Years is how long after NowMs the layout must last.
	Years float64 `json:"years"`
	// TickMs is the tick of the proposed layouts (the classic layouts keep
	// their own).
	TickMs int64 `json:"tick_ms"`
	// EpochMs is the epoch of every layout evaluated; at most NowMs, as
	// the server requires.
	EpochMs int64 `json:"epoch_ms"`
	// NowMs is the time the plan is made at.
	NowMs int64 `json:"now_ms"`
}

// Validate checks the request's ranges.
func (r Request) Validate() error {
	switch {
	case r.RatePerGenerator < 1:
		return fmt.Errorf("%w: rate must be at least 1 ID/s per generator, got %d", ErrInvalidRequest, r.RatePerGenerator)
	case r.Generators < 1:
		return fmt.Errorf("%w: generators must be at least 1, got %d", ErrInvalidRequest, r.Generators)
	case math.IsNaN(r.Years) || r.Years <= 0 || r.Years > MaxYears:
		return fmt.Errorf("%w: years must be above 0 and at most %g, got %v", ErrInvalidRequest, float64(MaxYears), r.Years)
	case r.TickMs < 1 || r.TickMs > MaxTickMs:
		return fmt.Errorf("%w: tick must be 1 to %d ms, got %d", ErrInvalidRequest, MaxTickMs, r.TickMs)
	case r.EpochMs < 0:
		return fmt.Errorf("%w: epoch %d ms is before 1970", ErrInvalidRequest, r.EpochMs)
	case r.EpochMs > r.NowMs:
		return fmt.Errorf("%w: epoch %d ms is after now (%d ms); the server accepts only an epoch in the past", ErrInvalidRequest, r.EpochMs, r.NowMs)
	}
	return nil
}

// PlannedYears is the years the plan holds layouts to: the request's, or
// the server's minimum if that is more.
func (r Request) PlannedYears() float64 {
	return math.Max(r.Years, MinYearsLeft)
}

// TotalRate is RatePerGenerator × Generators (float64: it may pass the
// int64 range).
func (r Request) TotalRate() float64 {
	return float64(r.RatePerGenerator) * float64(r.Generators)
}

// Needs is the fewest bits of each field that meet a request at one tick.
// A field may need more than 63 bits (the request then cannot fit).
type Needs struct {
	TickMs        int64 `json:"tick_ms"`
	TimestampBits int   `json:"timestamp_bits"`
	WorkerBits    int   `json:"worker_bits"`
	SequenceBits  int   `json:"sequence_bits"`
}

// Total is the bits the three fields need together.
func (n Needs) Total() int { return n.TimestampBits + n.WorkerBits + n.SequenceBits }

// Spare is how many of the 63 bits are left over (negative: how many are
// missing).
func (n Needs) Spare() int { return TotalBits - n.Total() }

// NeedsAt is what a valid request needs at ticks of tickMs. It panics if
// tickMs is not 1 to MaxTickMs.
func (r Request) NeedsAt(tickMs int64) Needs {
	if tickMs < 1 || tickMs > MaxTickMs {
		panic(fmt.Sprintf("layoutplan: tick %d ms out of range", tickMs))
	}
	return Needs{
		TickMs:        tickMs,
		TimestampBits: timestampBits(r.PlannedYears(), r.NowMs-r.EpochMs, tickMs),
		WorkerBits:    bitsFor(uint64(r.Generators)),
		SequenceBits:  sequenceBits(r.RatePerGenerator, tickMs),
	}
}

// bitsFor is the smallest b ≥ 1 with 2^b ≥ n.
func bitsFor(n uint64) int {
	if n <= 2 {
		return 1
	}
	return bits.Len64(n - 1)
}

// timestampBits is the smallest t ≥ 1 with 2^t·tick ≥ years + elapsed
// (the time from the epoch to now, ≥ 0, plus the years asked). The
// comparison is exact in float64 (2^t·tick is a power of two times an
// integer below 2^16); the need itself is exact below 2^53 ms (285,000
// years), and above that a rounding of a few ms cannot matter.
func timestampBits(years float64, elapsedMs, tickMs int64) int {
	needMs := math.Ceil(years*float64(YearMs)) + float64(elapsedMs)
	t := 1
	for math.Ldexp(float64(tickMs), t) < needMs {
		t++
	}
	return t
}

// sequenceBits is the smallest s ≥ 1 with 2^s·1000 ≥ rate·tick, so that
// 2^s IDs per tick make at least rate IDs/s.
func sequenceBits(rate, tickMs int64) int {
	// ceil(rate·tick/1000) = (rate/1000)·tick + ceil((rate%1000)·tick/1000),
	// without forming rate·tick, which can pass int64.
	q, rem := rate/1000, rate%1000
	if q > math.MaxInt64/tickMs-1 {
		// rate·tick/1000 ≥ 2^62: 63 bits or more, and no layout fits.
		return int(math.Ceil(math.Log2(float64(rate) * float64(tickMs) / 1000)))
	}
	n := q*tickMs + (rem*tickMs+999)/1000
	return bitsFor(uint64(n))
}

// Shortfall is one way a layout fails a request.
type Shortfall struct {
	// Field is timestamp, worker, sequence, bits (the layout does not
	// use 63 bits) or tick (out of the server's range).
	Field string `json:"field"`
	// Bits is how many bits the field lacks (for bits: how many the
	// layout is over or under 63).
	Bits    int    `json:"bits"`
	Message string `json:"message"`
}

// Candidate is a layout evaluated against a request.
type Candidate struct {
	Layout
	// Classic: a well-known layout, evaluated as it is; otherwise one
	// proposed for the request.
	Classic bool `json:"classic"`
	// Why the layout is proposed or listed.
	Note         string  `json:"note"`
	ExhaustsAtMs int64   `json:"exhausts_at_ms"`
	YearsLeft    float64 `json:"years_left"`
	// IDsPerSecondPerGenerator is 2^s·1000/tick; RateHeadroom that over
	// the request's rate per generator.
	IDsPerSecondPerGenerator float64 `json:"ids_per_second_per_generator"`
	RateHeadroom             float64 `json:"rate_headroom"`
	// IDsPerSecondTotal is what the request's generators make together at
	// the layout's per-generator cap: IDsPerSecondPerGenerator ×
	// min(Generators, MaxGenerators), as no more generators than worker
	// ids can run.
	IDsPerSecondTotal float64 `json:"ids_per_second_total"`
	// MaxGenerators is 2^w; GeneratorHeadroom that over the request's
	// generators.
	MaxGenerators     int64   `json:"max_generators"`
	GeneratorHeadroom float64 `json:"generator_headroom"`
	// Fits: uses 63 bits and meets the request (years, rate, generators).
	Fits       bool        `json:"fits"`
	Shortfalls []Shortfall `json:"shortfalls"`
}

// Evaluate sets a layout against a valid request (epoch and tick: the
// layout's). A layout whose tick the server would refuse does not fit.
func Evaluate(l Layout, r Request, note string, classic bool) Candidate {
	c := Candidate{
		Layout:                   l,
		Classic:                  classic,
		Note:                     note,
		ExhaustsAtMs:             l.ExhaustsAtMs(),
		YearsLeft:                l.YearsLeft(r.NowMs),
		IDsPerSecondPerGenerator: l.IDsPerSecond(),
		MaxGenerators:            l.Generators(),
		Shortfalls:               []Shortfall{},
	}
	c.RateHeadroom = c.IDsPerSecondPerGenerator / float64(r.RatePerGenerator)
	c.IDsPerSecondTotal = c.IDsPerSecondPerGenerator * float64(min(r.Generators, c.MaxGenerators))
	c.GeneratorHeadroom = float64(c.MaxGenerators) / float64(r.Generators)
	if l.TickMs < 1 || l.TickMs > MaxTickMs {
		c.Shortfalls = append(c.Shortfalls, Shortfall{Field: "tick",
			Message: fmt.Sprintf("tick %d ms: the server accepts 1 to %d", l.TickMs, MaxTickMs)})
		return c
	}
	need := r.NeedsAt(l.TickMs)
	if b := l.Bits(); b != TotalBits {
		over := "over"
		if b < TotalBits {
			over = "under"
		}
		c.Shortfalls = append(c.Shortfalls, Shortfall{Field: "bits", Bits: abs(b - TotalBits),
			Message: fmt.Sprintf("uses %d bits, %d %s 63: ticketd cannot create it", b, abs(b-TotalBits), over)})
	}
	if d := need.TimestampBits - int(l.TimestampBits); d > 0 {
		c.Shortfalls = append(c.Shortfalls, Shortfall{Field: "timestamp", Bits: d,
			Message: fmt.Sprintf("timestamp %s short: lasts %s years, %s needed", bitsWord(d), FormatYears(c.YearsLeft), FormatYears(r.PlannedYears()))})
	}
	if d := need.WorkerBits - int(l.WorkerBits); d > 0 {
		c.Shortfalls = append(c.Shortfalls, Shortfall{Field: "worker", Bits: d,
			Message: fmt.Sprintf("worker %s short: %s generators, %s asked", bitsWord(d), FormatCount(float64(c.MaxGenerators)), FormatCount(float64(r.Generators)))})
	}
	if d := need.SequenceBits - int(l.SequenceBits); d > 0 {
		c.Shortfalls = append(c.Shortfalls, Shortfall{Field: "sequence", Bits: d,
			Message: fmt.Sprintf("sequence %s short: %s IDs/s per generator, %s asked", bitsWord(d), FormatCount(c.IDsPerSecondPerGenerator), FormatCount(float64(r.RatePerGenerator)))})
	}
	c.Fits = len(c.Shortfalls) == 0
	return c
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func bitsWord(n int) string {
	if n == 1 {
		return "1 bit"
	}
	return fmt.Sprintf("%d bits", n)
}

// Classic layouts, evaluated as they are against every request. The
// epoch is the request's.
var classic = []Candidate{
	{Layout: Layout{Name: "twitter", TimestampBits: 41, WorkerBits: 10, SequenceBits: 12, TickMs: 1},
		Note: "Twitter Snowflake; ticketd's default"},
	{Layout: Layout{Name: "instagram-preset", TimestampBits: 40, WorkerBits: 13, SequenceBits: 10, TickMs: 1},
		Note: "ticketd's preset instagram: Instagram's shard and sequence bits, the timestamp one bit shorter so that IDs stay positive int64s"},
	{Layout: Layout{Name: "instagram", TimestampBits: 41, WorkerBits: 13, SequenceBits: 10, TickMs: 1},
		Note: "Instagram: 64 bits, so a signed int64 turns negative after 2^40 ms"},
	{Layout: Layout{Name: "sonyflake", TimestampBits: 39, WorkerBits: 16, SequenceBits: 8, TickMs: 10},
		Note: "Sonyflake: 10 ms ticks, 16-bit machine id"},
}

// Plan is the answer to a request.
type Plan struct {
	Request      Request `json:"request"`
	PlannedYears float64 `json:"planned_years"`
	Needs        Needs   `json:"needs"`
	TotalBits    int     `json:"total_bits"`
	SpareBits    int     `json:"spare_bits"`
	// Candidates: those that fit first; among them the proposed ones
	// (balanced first, the recommendation), then the classic ones.
	Candidates []Candidate `json:"candidates"`
}

// Propose plans layouts for a request. It fails with ErrInvalidRequest if
// the request is out of range, and with ErrNoLayoutFits, saying what needs
// how many bits, if the request needs more than 63 (the Plan returned
// with it holds the Needs).
//
// Otherwise the spare bits (63 minus what the request needs) go, in turn:
//
//   - balanced: a third to each field, the remainder to the timestamp
//     first (running out means migrating every ID), then the worker
//     (more generators also absorb more total rate);
//   - longest: all to the timestamp;
//   - most-generators: all to the worker;
//   - fastest: all to the sequence;
//
// a proposal identical to an earlier one is left out. The classic layouts
// follow, evaluated against the request; candidates that fit come first
// (the order is otherwise kept), those that do not say why and by how many
// bits.
func Propose(r Request) (Plan, error) {
	if err := r.Validate(); err != nil {
		return Plan{}, err
	}
	need := r.NeedsAt(r.TickMs)
	p := Plan{Request: r, PlannedYears: r.PlannedYears(), Needs: need, TotalBits: TotalBits,
		SpareBits: need.Spare()}
	if need.Spare() < 0 {
		return p, noFit(r, need)
	}
	spare := need.Spare()
	third, rem := spare/3, spare%3
	remT, remW := min(rem, 1), max(rem-1, 0)
	base := Layout{TimestampBits: uint8(need.TimestampBits), WorkerBits: uint8(need.WorkerBits),
		SequenceBits: uint8(need.SequenceBits), TickMs: r.TickMs, EpochMs: r.EpochMs}
	proposals := []struct {
		name, note string
		t, w, s    int
	}{
		{"balanced", "spare bits shared out evenly", third + remT, third + remW, third},
		{"longest", "every spare bit to the timestamp", spare, 0, 0},
		{"most-generators", "every spare bit to the worker id", 0, spare, 0},
		{"fastest", "every spare bit to the sequence", 0, 0, spare},
	}
	var all []Candidate
	seen := map[[3]uint8]bool{}
	for _, pr := range proposals {
		l := base
		l.Name = pr.name
		l.TimestampBits += uint8(pr.t)
		l.WorkerBits += uint8(pr.w)
		l.SequenceBits += uint8(pr.s)
		key := [3]uint8{l.TimestampBits, l.WorkerBits, l.SequenceBits}
		if seen[key] {
			continue
		}
		seen[key] = true
		all = append(all, Evaluate(l, r, pr.note, false))
	}
	for _, c := range classic {
		l := c.Layout
		l.EpochMs = r.EpochMs
		all = append(all, Evaluate(l, r, c.Note, true))
	}
	for _, c := range all {
		if c.Fits {
			p.Candidates = append(p.Candidates, c)
		}
	}
	for _, c := range all {
		if !c.Fits {
			p.Candidates = append(p.Candidates, c)
		}
	}
	return p, nil
}

func noFit(r Request, n Needs) error {
	since := ""
	if elapsed := r.NowMs - r.EpochMs; elapsed >= YearMs/10 {
		since = fmt.Sprintf(" after the %s years since the epoch", FormatYears(float64(elapsed)/float64(YearMs)))
	}
	return fmt.Errorf("%w: the request needs %d bits, %s more than 63: timestamp %d bits (%s years%s at %d ms ticks), "+
		"worker %d bits (%s generators), sequence %d bits (%s IDs/s per generator at %d ms ticks); "+
		"ask for fewer years, generators or IDs/s per generator (a longer or shorter tick only moves bits between timestamp and sequence)",
		ErrNoLayoutFits, n.Total(), bitsWord(-n.Spare()),
		n.TimestampBits, FormatYears(r.PlannedYears()), since, n.TickMs,
		n.WorkerBits, FormatCount(float64(r.Generators)),
		n.SequenceBits, FormatCount(float64(r.RatePerGenerator)), n.TickMs)
}

// FormatCount writes a non-negative number with thousands separators
// (1,024; 4,096,000), one decimal below 1,000 if it has a fraction
// (666.6, truncated, never rounded up), and in e-notation from 10^15.
func FormatCount(v float64) string {
	switch {
	case math.IsInf(v, 0) || math.IsNaN(v) || v >= 1e15:
		return fmt.Sprintf("%.3g", v)
	case v < 1000 && v != math.Floor(v):
		return fmt.Sprintf("%.1f", math.Floor(v*10)/10)
	}
	s := fmt.Sprintf("%d", int64(v))
	var b strings.Builder
	for i, ch := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(ch)
	}
	return b.String()
}

// FormatRatio writes a headroom ratio, truncated (never rounded up, so
// that 0.999 does not read as 1.00): 1.02×, 12.8×, 819×.
func FormatRatio(v float64) string {
	switch {
	case v >= 1e15:
		return fmt.Sprintf("%.3g×", v)
	case v >= 100:
		return FormatCount(math.Floor(v)) + "×"
	case v >= 10:
		return fmt.Sprintf("%.1f×", math.Floor(v*10)/10)
	}
	return fmt.Sprintf("%.2f×", math.Floor(v*100)/100)
}

// FormatYears writes years with at most one decimal, truncated toward
// zero (69.68 → 69.6): a layout's life is never overstated.
func FormatYears(y float64) string {
	if math.IsNaN(y) || math.Abs(y) >= 1e15 {
		return fmt.Sprintf("%.3g", y)
	}
	sign := ""
	if y < 0 {
		sign, y = "-", -y
	}
	tenths := int64(math.Floor(y * 10))
	if tenths%10 == 0 {
		return sign + FormatCount(float64(tenths/10))
	}
	return fmt.Sprintf("%s%s.%d", sign, FormatCount(float64(tenths/10)), tenths%10)
}
