package layoutplan_test

import (
	"errors"
	"math"
	"math/big"
	"testing"

	"github.com/ticketd/ticketd/layoutplan"
)

// smallestBits is the smallest b ≥ 1 with 2^b·unit ≥ need, in big
// integers: the oracle the planner's int64 and float64 arithmetic must
// agree with.
func smallestBits(need, unit *big.Int) int {
	for b := 1; ; b++ {
		if new(big.Int).Lsh(unit, uint(b)).Cmp(need) >= 0 {
			return b
		}
	}
}

// oracleNeeds is what a request needs at a tick, in exact arithmetic.
// Years must be whole (so that years × YearMs is exact).
func oracleNeeds(r layoutplan.Request, tick int64) (t, w, s int) {
	years := int64(math.Max(r.Years, layoutplan.MinYearsLeft))
	needMs := new(big.Int).Mul(big.NewInt(years), big.NewInt(layoutplan.YearMs))
	needMs.Add(needMs, big.NewInt(r.NowMs-r.EpochMs))
	t = smallestBits(needMs, big.NewInt(tick))
	w = smallestBits(big.NewInt(r.Generators), big.NewInt(1))
	rateTick := new(big.Int).Mul(big.NewInt(r.RatePerGenerator), big.NewInt(tick))
	s = smallestBits(rateTick, big.NewInt(1000))
	return t, w, s
}

func FuzzPropose(f *testing.F) {
	f.Add(int64(5000), int64(1000), uint32(30), uint16(1), int64(0))
	f.Add(int64(5000), int64(1000), uint32(30), uint16(10), int64(0))
	f.Add(int64(4_096_000), int64(1024), uint32(60), uint16(1), int64(0))
	f.Add(int64(50_000), int64(1_000_000), uint32(30), uint16(1), int64(0))
	f.Add(int64(1), int64(1), uint32(1), uint16(1), int64(0))
	f.Add(int64(math.MaxInt64), int64(math.MaxInt64), uint32(math.MaxUint32), uint16(60_000), int64(math.MaxInt64))
	f.Add(int64(1000), int64(40_000), uint32(30), uint16(7), int64(217_728_000_000))
	f.Add(int64(5000), int64(1000), uint32(30), uint16(1), int64(152_783_627_776))
	f.Fuzz(func(t *testing.T, rate, gens int64, years uint32, tick uint16, elapsed int64) {
		now := day2026
		if elapsed < 0 || elapsed > now {
			elapsed = 0
		}
		r := layoutplan.Request{RatePerGenerator: rate, Generators: gens, Years: float64(years),
			TickMs: int64(tick), EpochMs: now - elapsed, NowMs: now}
		p, err := layoutplan.Propose(r)
		if r.Validate() != nil {
			if !errors.Is(err, layoutplan.ErrInvalidRequest) {
				t.Fatalf("invalid request %+v: err %v", r, err)
			}
			return
		}
		exact := years <= 200_000 // years × YearMs below 2^53: exact in float64
		if exact {
			ot, ow, os := oracleNeeds(r, r.TickMs)
			if n := p.Needs; n.TimestampBits != ot || n.WorkerBits != ow || n.SequenceBits != os {
				t.Fatalf("%+v: needs %+v, oracle %d/%d/%d", r, n, ot, ow, os)
			}
		}
		if p.Needs.Total() > layoutplan.TotalBits {
			if !errors.Is(err, layoutplan.ErrNoLayoutFits) {
				t.Fatalf("%+v needs %d bits; err %v", r, p.Needs.Total(), err)
			}
			return
		}
		if err != nil {
			t.Fatalf("%+v: %v", r, err)
		}
		if len(p.Candidates) == 0 || !p.Candidates[0].Fits || p.Candidates[0].Name != "balanced" {
			t.Fatalf("%+v: first candidate %+v", r, p.Candidates)
		}
		seenMisfit := false
		for _, c := range p.Candidates {
			if c.Fits && seenMisfit {
				t.Fatalf("%s fits but comes after a misfit", c.Name)
			}
			seenMisfit = seenMisfit || !c.Fits
			if !c.Classic && (!c.Fits || c.Bits() != layoutplan.TotalBits) {
				t.Fatalf("proposal %+v", c)
			}
			if exact {
				ot, ow, os := oracleNeeds(r, c.TickMs)
				want := c.Bits() == layoutplan.TotalBits && int(c.TimestampBits) >= ot &&
					int(c.WorkerBits) >= ow && int(c.SequenceBits) >= os
				if c.Fits != want {
					t.Fatalf("%+v: %s fits=%v, oracle %v", r, c.Name, c.Fits, want)
				}
			}
			if !c.Fits {
				if len(c.Shortfalls) == 0 {
					t.Fatalf("%s does not fit and says nothing", c.Name)
				}
				continue
			}
			// What fits delivers: the years (to float rounding), the rate,
			// the generators.
			if c.YearsLeft < p.PlannedYears*(1-1e-12) {
				t.Fatalf("%+v: %s fits with %v years left, %v planned", r, c.Name, c.YearsLeft, p.PlannedYears)
			}
			if c.IDsPerSecondPerGenerator < float64(rate) || c.MaxGenerators < gens {
				t.Fatalf("%+v: %s fits with %v IDs/s and %d workers", r, c.Name, c.IDsPerSecondPerGenerator, c.MaxGenerators)
			}
			if c.ExhaustsAtMs <= now {
				t.Fatalf("%s fits but is exhausted", c.Name)
			}
		}
	})
}
