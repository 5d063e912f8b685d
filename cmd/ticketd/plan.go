package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ticketd/ticketd/layoutplan"
)

const planUsage = `usage: ticketd plan --rate R --generators G --years Y [--tick MS] [--epoch DATE] [--json]

Proposes Snowflake layouts (timestamp/worker/sequence bits summing to 63) for
a workload, and evaluates the classic ones (Twitter 41/10/12, Instagram
41/13/10, Sonyflake 39/16/8 at 10 ms) against it. Needs no server.

  --rate R        peak IDs per second ONE generator (one process holding a
                  worker id) must make: per generator, not in total. The
                  total is R × G. Accepts 5000, 5_000, 5k, 1.5M, 2G.
  --generators G  generators holding a worker id at the same time, at most
  --years Y       how long from now the IDs must last (the server asks a
                  namespace for at least 10; fewer is planned as 10)
  --tick MS       length of one timestamp unit of the proposed layouts, in
                  ms (1 to 60000; default 1)
  --epoch DATE    the time timestamp 0 stands for: YYYY-MM-DD, RFC 3339 or
                  Unix ms; not in the future (default: today 00:00 UTC)
  --json          print the plan as JSON

Per layout: when its timestamps run out (epoch + 2^timestamp_bits ticks) and
how many years from now that is; IDs/s one generator can make (2^sequence_bits
per tick) and its headroom over R; worker ids (2^worker_bits) and their
headroom over G; IDs/s of the G generators together (of as many as there are
worker ids, if fewer). Layouts that fit come first; the
first is the recommendation. Exits 1, saying which field needs how many bits,
when no layout fits in 63 bits. Every flag can also be set as TICKETD_<FLAG>.
`

// planCmd is `ticketd plan`: layoutplan on the command line.
func planCmd(args []string, stdout, stderr io.Writer) error {
	return planCmdAt(args, time.Now(), stdout, stderr)
}

// planCmdAt is planCmd with the clock's reading given (tests fix it).
func planCmdAt(args []string, now time.Time, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("plan", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(fs.Output(), planUsage) }
	rate := fs.String("rate", "", "peak IDs/s per generator (not in total)")
	gens := fs.String("generators", "", "generators holding a worker id at once, at most")
	years := fs.Float64("years", 0, "years from now the IDs must last")
	tick := fs.Int64("tick", 1, "timestamp unit of the proposed layouts, in ms")
	epoch := fs.String("epoch", "", "time of timestamp 0: YYYY-MM-DD, RFC 3339 or Unix ms (default: today 00:00 UTC)")
	asJSON := fs.Bool("json", false, "print the plan as JSON")
	pos, err := flagsAnywhere(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError{fmt.Sprintf("plan takes no arguments, got %q\n%s", pos, planUsage)}
	}
	if *rate == "" || *gens == "" || *years == 0 {
		return usageError{"--rate, --generators and --years are required\n" + planUsage}
	}
	r, err := parseCount(*rate)
	if err != nil {
		return usageError{fmt.Sprintf("--rate: %v", err)}
	}
	g, err := parseCount(*gens)
	if err != nil {
		return usageError{fmt.Sprintf("--generators: %v", err)}
	}
	nowMs := now.UnixMilli()
	epochMs, epochNote, err := parseEpoch(*epoch, now)
	if err != nil {
		return usageError{fmt.Sprintf("--epoch: %v", err)}
	}
	req := layoutplan.Request{RatePerGenerator: r, Generators: g, Years: *years, TickMs: *tick,
		EpochMs: epochMs, NowMs: nowMs}
	if err := req.Validate(); err != nil {
		return usageError{err.Error()}
	}
	p, err := layoutplan.Propose(req)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, planJSON(p, epochNote))
	}
	return printPlan(stdout, p, epochNote)
}

// parseCount reads a count: digits with optional _ or , separators, an
// optional decimal part and an optional k, M or G suffix (×1000, ×10^6,
// ×10^9; case-insensitive), whose value must be a whole number that fits
// int64 (1.5k is 1500; 1.5 is refused).
func parseCount(s string) (int64, error) {
	orig := s
	mult := int64(1)
	if n := len(s); n > 0 {
		switch s[n-1] {
		case 'k', 'K':
			mult = 1_000
		case 'm', 'M':
			mult = 1_000_000
		case 'g', 'G':
			mult = 1_000_000_000
		}
		if mult > 1 {
			s = s[:n-1]
		}
	}
	s = strings.NewReplacer("_", "", ",", "").Replace(s)
	whole, frac, hasDot := strings.Cut(s, ".")
	if whole == "" || (hasDot && frac == "") || !allDigits(whole) || !allDigits(frac) {
		return 0, fmt.Errorf("%q is not a count (use digits, optionally 1.5k, 2M, 3G)", orig)
	}
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || w > math.MaxInt64/mult {
		return 0, fmt.Errorf("%q is too large", orig)
	}
	v := w * mult
	// The fraction: each digit is worth mult/10, mult/100, ...; a digit
	// worth less than 1 must be 0.
	place := mult
	for _, d := range frac {
		place /= 10
		dv := int64(d - '0')
		if place == 0 {
			if dv != 0 {
				return 0, fmt.Errorf("%q is not a whole number", orig)
			}
			continue
		}
		if v > math.MaxInt64-dv*place {
			return 0, fmt.Errorf("%q is too large", orig)
		}
		v += dv * place
	}
	return v, nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// parseEpoch reads --epoch; empty is today 00:00 UTC (now rounded down to
// the day). It returns the epoch in Unix ms and how it was chosen.
func parseEpoch(s string, now time.Time) (int64, string, error) {
	if s == "" {
		y, m, d := now.UTC().Date()
		return time.Date(y, m, d, 0, 0, 0, 0, time.UTC).UnixMilli(), "today 00:00 UTC, the default", nil
	}
	if allDigits(s) {
		ms, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, "", fmt.Errorf("%q is too large for Unix ms", s)
		}
		return ms, "given", nil
	}
	for _, layout := range []string{"2006-01-02", time.RFC3339Nano} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UnixMilli(), "given", nil
		}
	}
	return 0, "", fmt.Errorf("%q: want YYYY-MM-DD, RFC 3339 (2020-01-01T00:00:00Z) or Unix ms", s)
}

// formatDate writes Unix ms as a UTC date (years past 9999 in full).
func formatDate(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02")
}

func formatTime(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
}

func printPlan(w io.Writer, p layoutplan.Plan, epochNote string) error {
	r := p.Request
	var b strings.Builder
	fmt.Fprintf(&b, "Snowflake layouts for %s IDs/s per generator × %s generators = %s IDs/s in total, lasting %s years from %s\n",
		layoutplan.FormatCount(float64(r.RatePerGenerator)), layoutplan.FormatCount(float64(r.Generators)),
		layoutplan.FormatCount(r.TotalRate()), layoutplan.FormatYears(r.Years), formatDate(r.NowMs))
	if p.PlannedYears != r.Years {
		fmt.Fprintf(&b, "planned for %s years: the server refuses a namespace with fewer than %d years left\n",
			layoutplan.FormatYears(p.PlannedYears), layoutplan.MinYearsLeft)
	}
	fmt.Fprintf(&b, "epoch %s (%d ms; %s); proposed layouts tick every %d ms\n",
		formatTime(r.EpochMs), r.EpochMs, epochNote, r.TickMs)
	n := p.Needs
	fmt.Fprintf(&b, "needs: timestamp %d + worker %d + sequence %d = %d bits of 63; %d spare\n\n",
		n.TimestampBits, n.WorkerBits, n.SequenceBits, n.Total(), p.SpareBits)

	rows := [][]string{{"LAYOUT", "T/W/S BITS", "TICK", "RUNS OUT", "YEARS LEFT", "IDS/S PER GENERATOR",
		"WORKER IDS", "IDS/S OF " + layoutplan.FormatCount(float64(r.Generators)) + " GENERATORS", "VERDICT"}}
	for _, c := range p.Candidates {
		verdict := "fits"
		if !c.Fits {
			var why []string
			for _, s := range c.Shortfalls {
				why = append(why, s.Message)
			}
			verdict = "NO: " + strings.Join(why, "; ")
		}
		rows = append(rows, []string{
			c.Name,
			fmt.Sprintf("%d/%d/%d", c.TimestampBits, c.WorkerBits, c.SequenceBits),
			fmt.Sprintf("%d ms", c.TickMs),
			formatDate(c.ExhaustsAtMs),
			layoutplan.FormatYears(c.YearsLeft),
			layoutplan.FormatCount(c.IDsPerSecondPerGenerator) + " (" + layoutplan.FormatRatio(c.RateHeadroom) + ")",
			layoutplan.FormatCount(float64(c.MaxGenerators)) + " (" + layoutplan.FormatRatio(c.GeneratorHeadroom) + ")",
			layoutplan.FormatCount(c.IDsPerSecondTotal),
			verdict,
		})
	}
	writeTable(&b, rows, map[int]bool{2: true, 4: true, 5: true, 6: true, 7: true})
	fmt.Fprintf(&b, "\n(×N: headroom over the %s IDs/s per generator and the %s generators asked)\n",
		layoutplan.FormatCount(float64(r.RatePerGenerator)), layoutplan.FormatCount(float64(r.Generators)))
	if best := p.Candidates[0]; best.Fits {
		fmt.Fprintf(&b, "recommended: %s (%s). Create it with\n  PUT /v1/namespaces/NAME %s\n",
			best.Name, best.Note, createBody(best.Layout))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// createBody is the PUT /v1/namespaces body for a layout (max_workers,
// the lease TTL and the recycle delay keep the server's defaults).
func createBody(l layoutplan.Layout) string {
	return fmt.Sprintf(`{"epoch_ms":%d,"timestamp_bits":%d,"worker_bits":%d,"sequence_bits":%d,"tick_ms":%d}`,
		l.EpochMs, l.TimestampBits, l.WorkerBits, l.SequenceBits, l.TickMs)
}

// writeTable aligns rows in columns two spaces apart, the columns in
// right right-aligned; the last column is not padded.
func writeTable(b *strings.Builder, rows [][]string, right map[int]bool) {
	width := map[int]int{}
	for _, row := range rows {
		for i, cell := range row {
			width[i] = max(width[i], utf8.RuneCountInString(cell))
		}
	}
	for _, row := range rows {
		for i, cell := range row {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(cell))
			switch {
			case i == len(row)-1:
				b.WriteString(cell)
			case right[i]:
				b.WriteString(pad + cell + "  ")
			default:
				b.WriteString(cell + pad + "  ")
			}
		}
		b.WriteString("\n")
	}
}

// planOutput is the --json document: the plan, with dates written out.
type planOutput struct {
	layoutplan.Plan
	Epoch       string            `json:"epoch"`
	EpochNote   string            `json:"epoch_note"`
	TotalRate   float64           `json:"total_rate"`
	Candidates  []candidateOutput `json:"candidates"`
	Recommended string            `json:"recommended,omitempty"`
	CreateBody  string            `json:"create_body,omitempty"`
}

type candidateOutput struct {
	layoutplan.Candidate
	ExhaustsAt string `json:"exhausts_at"`
}

func planJSON(p layoutplan.Plan, epochNote string) planOutput {
	out := planOutput{Plan: p, Epoch: formatTime(p.Request.EpochMs), EpochNote: epochNote,
		TotalRate: p.Request.TotalRate(), Candidates: []candidateOutput{}}
	for _, c := range p.Candidates {
		out.Candidates = append(out.Candidates, candidateOutput{Candidate: c, ExhaustsAt: formatTime(c.ExhaustsAtMs)})
	}
	if best := p.Candidates[0]; best.Fits {
		out.Recommended = best.Name
		out.CreateBody = createBody(best.Layout)
	}
	return out
}
