package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ticketd/ticketd/layoutplan"
)

// planNow is the tests' clock: 2026-11-25T12:00:00Z. The default epoch is
// that day's 00:00 UTC = 1,795,564,800,000 ms.
var planNow = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

func runPlan(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := planCmdAt(args, planNow, &out, &errOut)
	return out.String(), errOut.String(), err
}

// fields collapses a line's runs of spaces, for comparing table rows.
func fields(line string) string { return strings.Join(strings.Fields(line), " ") }

func TestPlanCmd_WorkedExample_Table(t *testing.T) {
	out, _, err := runPlan(t, "--rate", "5000", "--generators", "1000", "--years", "30")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out, "\n")
	// Needs (layoutplan's TestNeedsAt_HandComputed): 30 y = 946,728,000,000
	// ms ≤ 2^40 → 40; 1,000 ≤ 2^10 → 10; 5 per ms ≤ 2^3 → 3.
	for _, want := range []string{
		"Snowflake layouts for 5,000 IDs/s per generator × 1,000 generators = 5,000,000 IDs/s in total, lasting 30 years from 2026-11-25",
		"epoch 2026-11-25T00:00:00.000Z (1795564800000 ms; today 00:00 UTC, the default); proposed layouts tick every 1 ms",
		"needs: timestamp 40 + worker 10 + sequence 3 = 53 bits of 63; 10 spare",
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// Each row, figured by hand (now is 12 h = 0.0014 years after the
	// epoch; years are truncated to one decimal):
	//   balanced 44/13/6: 2^44 ms = 17,592,186,044,416 ms = 557.46 y,
	//     epoch + that = 2584-05-16T06:20:44.416Z; 2^6 = 64/ms = 64,000
	//     IDs/s = 12.8 × 5,000; × 1,000 = 64,000,000; 2^13 = 8,192 =
	//     8.192 × 1,000.
	//   longest 50/10/3: 2^50 ms = 35,677.6 y; 2^3 = 8/ms = 8,000 IDs/s
	//     (1.6×); 1,024 workers (1.024×).
	//   most-generators 40/20/3: 2^40 ms = 34.84 y; 2^20 = 1,048,576
	//     (1,048.576×).
	//   fastest 40/10/13: 2^13 = 8,192/ms = 8,192,000 IDs/s (1,638.4×).
	//   twitter 41/10/12: 2^41 ms = 69.68 y; 4,096,000 IDs/s (819.2×).
	//   sonyflake 39/16/8 at 10 ms: 2^39 × 10 ms = 174.21 y; 256 per
	//     10 ms = 25,600 IDs/s (5.12×); 65,536 (65.536×).
	//   instagram-preset 40/13/10 (ticketd's preset): 2^40 ms = 34.84 y
	//     from the epoch, 2061-09-27; 1,024,000 IDs/s (204.8×); 8,192
	//     shards (8.192×).
	//   instagram 41/13/10: 1,024,000 IDs/s (204.8×); 64 bits.
	rows := []string{
		"LAYOUT T/W/S BITS TICK RUNS OUT YEARS LEFT IDS/S PER GENERATOR WORKER IDS IDS/S OF 1,000 GENERATORS VERDICT",
		"balanced 44/13/6 1 ms 2584-05-16 557.4 64,000 (12.8×) 8,192 (8.19×) 64,000,000 fits",
		"longest 50/10/3 1 ms 37705-03-31 35,677.6 8,000 (1.60×) 1,024 (1.02×) 8,000,000 fits",
		"most-generators 40/20/3 1 ms 2061-09-27 34.8 8,000 (1.60×) 1,048,576 (1,048×) 8,000,000 fits",
		"fastest 40/10/13 1 ms 2061-09-27 34.8 8,192,000 (1,638×) 1,024 (1.02×) 8,192,000,000 fits",
		"twitter 41/10/12 1 ms 2096-07-31 69.6 4,096,000 (819×) 1,024 (1.02×) 4,096,000,000 fits",
		"instagram-preset 40/13/10 1 ms 2061-09-27 34.8 1,024,000 (204×) 8,192 (8.19×) 1,024,000,000 fits",
		"sonyflake 39/16/8 10 ms 2201-02-10 174.2 25,600 (5.12×) 65,536 (65.5×) 25,600,000 fits",
		"instagram 41/13/10 1 ms 2096-07-31 69.6 1,024,000 (204×) 8,192 (8.19×) 1,024,000,000 NO: uses 64 bits, 1 over 63: ticketd cannot create it",
	}
	start := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "LAYOUT") {
			start = i
		}
	}
	if start < 0 || len(lines) < start+len(rows) {
		t.Fatalf("no table:\n%s", out)
	}
	table := lines[start : start+len(rows)]
	for i, want := range rows {
		if got := fields(table[i]); got != want {
			t.Errorf("row %d:\n got %q\nwant %q", i, got, want)
		}
	}
	// Aligned: the VERDICT column starts at the same rune offset on every
	// row, and so does each right-aligned figure's end.
	verdictAt := strings.Index(table[0], "VERDICT")
	verdictAt = utf8.RuneCountInString(table[0][:verdictAt])
	for _, l := range table[1:] {
		r := []rune(l)
		if len(r) <= verdictAt || r[verdictAt-1] != ' ' || r[verdictAt] == ' ' {
			t.Errorf("row not aligned at column %d: %q", verdictAt, l)
		}
	}
	if !strings.Contains(out, "recommended: balanced (spare bits shared out evenly). Create it with\n"+
		`  PUT /v1/namespaces/NAME {"epoch_ms":1795564800000,"timestamp_bits":44,"worker_bits":13,"sequence_bits":6,"tick_ms":1}`) {
		t.Errorf("no recommendation:\n%s", out)
	}
}

func TestPlanCmd_JSON(t *testing.T) {
	out, _, err := runPlan(t, "--rate", "5k", "--generators", "1000", "--years", "30", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Request struct {
			RatePerGenerator int64   `json:"rate_per_generator"`
			Generators       int64   `json:"generators"`
			Years            float64 `json:"years"`
			EpochMs          int64   `json:"epoch_ms"`
			NowMs            int64   `json:"now_ms"`
		} `json:"request"`
		Needs struct {
			T int `json:"timestamp_bits"`
			W int `json:"worker_bits"`
			S int `json:"sequence_bits"`
		} `json:"needs"`
		SpareBits   int     `json:"spare_bits"`
		TotalRate   float64 `json:"total_rate"`
		Epoch       string  `json:"epoch"`
		Recommended string  `json:"recommended"`
		CreateBody  string  `json:"create_body"`
		Candidates  []struct {
			Name          string  `json:"name"`
			TimestampBits int     `json:"timestamp_bits"`
			ExhaustsAtMs  int64   `json:"exhausts_at_ms"`
			ExhaustsAt    string  `json:"exhausts_at"`
			YearsLeft     float64 `json:"years_left"`
			IDsPerSecond  float64 `json:"ids_per_second_per_generator"`
			RateHeadroom  float64 `json:"rate_headroom"`
			Total         float64 `json:"ids_per_second_total"`
			MaxGenerators int64   `json:"max_generators"`
			Fits          bool    `json:"fits"`
			Shortfalls    []struct {
				Field string `json:"field"`
				Bits  int    `json:"bits"`
			} `json:"shortfalls"`
		} `json:"candidates"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if got.Request.RatePerGenerator != 5000 || got.Request.Generators != 1000 || got.Request.Years != 30 ||
		got.Request.EpochMs != 1_795_564_800_000 || got.Request.NowMs != planNow.UnixMilli() {
		t.Errorf("request %+v", got.Request)
	}
	if got.Needs.T != 40 || got.Needs.W != 10 || got.Needs.S != 3 || got.SpareBits != 10 || got.TotalRate != 5_000_000 {
		t.Errorf("needs %+v, spare %d, total rate %v", got.Needs, got.SpareBits, got.TotalRate)
	}
	if got.Epoch != "2026-11-25T00:00:00.000Z" || got.Recommended != "balanced" ||
		got.CreateBody != `{"epoch_ms":1795564800000,"timestamp_bits":44,"worker_bits":13,"sequence_bits":6,"tick_ms":1}` {
		t.Errorf("epoch %q, recommended %q, body %q", got.Epoch, got.Recommended, got.CreateBody)
	}
	if len(got.Candidates) != 8 {
		t.Fatalf("%d candidates", len(got.Candidates))
	}
	// Balanced: epoch + 2^44 ms = 1,795,564,800,000 + 17,592,186,044,416
	// = 19,387,750,844,416 ms = 2584-05-16T06:20:44.416Z.
	b := got.Candidates[0]
	if b.Name != "balanced" || b.ExhaustsAtMs != 19_387_750_844_416 || b.ExhaustsAt != "2584-05-16T06:20:44.416Z" ||
		b.IDsPerSecond != 64_000 || b.RateHeadroom != 12.8 || b.Total != 64_000_000 || b.MaxGenerators != 8192 ||
		!b.Fits || b.Shortfalls == nil || len(b.Shortfalls) != 0 {
		t.Errorf("balanced %+v", b)
	}
	// 557.4627 years from the epoch, less the 12 h (0.00137 y) since.
	if math.Abs(b.YearsLeft-557.4613) > 0.0001 {
		t.Errorf("balanced years left %.4f", b.YearsLeft)
	}
	ig := got.Candidates[7]
	if ig.Name != "instagram" || ig.Fits || len(ig.Shortfalls) != 1 || ig.Shortfalls[0].Field != "bits" || ig.Shortfalls[0].Bits != 1 {
		t.Errorf("instagram %+v", ig)
	}
}

func TestPlanCmd_Tick10_OneGenerator(t *testing.T) {
	// 100 IDs/s per generator, 1 generator, 20 years at 10 ms:
	// 20 y = 631,152,000,000 ms = 63,115,200,000 ticks: 2^35 =
	// 34,359,738,368 < that ≤ 2^36 = 68,719,476,736 → 36; 1 generator
	// → 1 worker bit; 100 IDs/s = 1 per 10 ms → 1 sequence bit. 38 bits,
	// 25 spare = 3 × 8 + 1: balanced 36+9 / 1+8 / 1+8 = 45/9/9.
	// 2^45 × 10 ms = 351,843,720,888,320 ms = 11,149.25 y; 2^9 = 512
	// per 10 ms = 51,200 IDs/s (512×); 512 workers (512×).
	out, _, err := runPlan(t, "--rate", "100", "--generators", "1", "--years", "20", "--tick", "10")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"needs: timestamp 36 + worker 1 + sequence 1 = 38 bits of 63; 25 spare",
		"proposed layouts tick every 10 ms",
		"balanced 45/9/9 10 ms 13176-05-20 11,149.2 51,200 (512×) 512 (512×) 51,200 fits",
	} {
		found := false
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(fields(l), want) {
				found = true
			}
		}
		if !found {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestPlanCmd_YearsBelowServerMinimum(t *testing.T) {
	// 5 years asked, planned as 10: 315,576,000,000 ms ≤ 2^39 → 39.
	out, _, err := runPlan(t, "--rate", "5000", "--generators", "1000", "--years", "5")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"lasting 5 years from 2026-11-25",
		"planned for 10 years: the server refuses a namespace with fewer than 10 years left",
		"needs: timestamp 39 + worker 10 + sequence 3 = 52 bits of 63; 11 spare",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestPlanCmd_NoLayoutFits_Refused(t *testing.T) {
	// 50,000 IDs/s = 50 per ms → 6 bits; 1,000,000 generators → 20 bits;
	// 30 years → 40 bits: 66, 3 more than 63.
	out, _, err := runPlan(t, "--rate", "50000", "--generators", "1000000", "--years", "30")
	if !errors.Is(err, layoutplan.ErrNoLayoutFits) {
		t.Fatalf("err %v, want ErrNoLayoutFits", err)
	}
	if out != "" {
		t.Errorf("printed a plan for a refused request:\n%s", out)
	}
	// Through the command's entry point: exit 1 and the reason on stderr.
	var stdout, stderr bytes.Buffer
	code := run([]string{"plan", "--rate", "50000", "--generators", "1000000", "--years", "30"}, &stdout, &stderr)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	for _, want := range []string{"ticketd: no layout fits in 63 bits: the request needs 66 bits, 3 bits more than 63",
		"timestamp 40 bits (30 years at 1 ms ticks)", "worker 20 bits (1,000,000 generators)",
		"sequence 6 bits (50,000 IDs/s per generator at 1 ms ticks)"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q: %s", want, stderr.String())
		}
	}
	// Years beyond what 63 bits hold: 10^8 years need 62 timestamp bits
	// (3.16 × 10^18 ms ≤ 2^62) + 1 + 1 = 64.
	_, _, err = runPlan(t, "--rate", "1", "--generators", "1", "--years", "1e8")
	if !errors.Is(err, layoutplan.ErrNoLayoutFits) || !strings.Contains(err.Error(), "needs 64 bits, 1 bit more than 63") {
		t.Errorf("10^8 years: %v", err)
	}
	// The same in --json: refused, nothing on stdout.
	out, _, err = runPlan(t, "--rate", "50000", "--generators", "1000000", "--years", "30", "--json")
	if !errors.Is(err, layoutplan.ErrNoLayoutFits) || out != "" {
		t.Errorf("--json: err %v, out %q", err, out)
	}
}

func TestPlanCmd_UsageErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{nil, "--rate, --generators and --years are required"},
		{[]string{"--rate", "5000", "--generators", "10"}, "--rate, --generators and --years are required"},
		{[]string{"--rate", "abc", "--generators", "10", "--years", "30"}, `--rate: "abc" is not a count`},
		{[]string{"--rate", "1.5", "--generators", "10", "--years", "30"}, `--rate: "1.5" is not a whole number`},
		{[]string{"--rate", "99999999999999999999", "--generators", "10", "--years", "30"}, "is too large"},
		{[]string{"--rate", "-5", "--generators", "10", "--years", "30"}, `--rate: "-5" is not a count`},
		{[]string{"--rate", "5000", "--generators", "0", "--years", "30"}, "generators must be at least 1"},
		{[]string{"--rate", "0", "--generators", "1", "--years", "30"}, "rate must be at least 1"},
		{[]string{"--rate", "5000", "--generators", "10", "--years", "-1"}, "years must be above 0"},
		{[]string{"--rate", "5000", "--generators", "10", "--years", "NaN"}, "years must be above 0"},
		{[]string{"--rate", "5000", "--generators", "10", "--years", "30", "--tick", "0"}, "tick must be 1 to 60000 ms"},
		{[]string{"--rate", "5000", "--generators", "10", "--years", "30", "--tick", "60001"}, "tick must be 1 to 60000 ms"},
		{[]string{"--rate", "5000", "--generators", "10", "--years", "30", "--epoch", "2999-01-01"}, "the server accepts only an epoch in the past"},
		{[]string{"--rate", "5000", "--generators", "10", "--years", "30", "--epoch", "yesterday"}, "--epoch: \"yesterday\": want YYYY-MM-DD"},
		{[]string{"--rate", "5000", "--generators", "10", "--years", "30", "extra"}, "plan takes no arguments"},
		{[]string{"--rate", "5000", "--generators", "10", "--years", "30", "--bogus"}, "flag provided but not defined: -bogus"},
	}
	for _, c := range cases {
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"plan"}, c.args...), &stdout, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, stderr.String(), c.want)
		}
		if stdout.Len() != 0 {
			t.Errorf("%v: stdout %q", c.args, stdout.String())
		}
	}
}

func TestPlanCmd_Help(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"plan", "-h"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"usage: ticketd plan --rate R --generators G --years Y",
		"per generator, not in total. The\n                  total is R × G", "TICKETD_<FLAG>"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("help lacks %q:\n%s", want, stderr.String())
		}
	}
}

func TestPlanCmd_Environment(t *testing.T) {
	t.Setenv("TICKETD_RATE", "5k")
	t.Setenv("TICKETD_GENERATORS", "1,000")
	t.Setenv("TICKETD_YEARS", "30")
	t.Setenv("TICKETD_TICK", "10")
	// The flag wins over TICKETD_TICK.
	out, _, err := runPlan(t, "--tick", "1")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "needs: timestamp 40 + worker 10 + sequence 3 = 53 bits of 63; 10 spare") {
		t.Errorf("environment not read, or the flag did not win:\n%s", out)
	}
	t.Setenv("TICKETD_RATE", "fast")
	if _, _, err := runPlan(t); err == nil || !strings.Contains(err.Error(), `"fast" is not a count`) {
		t.Errorf("bad TICKETD_RATE: %v", err)
	}
}

func TestPlanCmd_EpochForms(t *testing.T) {
	// 2020-01-01T00:00:00Z = 1,577,836,800,000 ms, in every form. From
	// 2026-11-25T12:00 that is 2,520.5 days (217,771,200,000 ms) ago, so
	// 30 more years need 1,164,499,200,000 ms > 2^40: 41 bits.
	for _, e := range []string{"2020-01-01", "1577836800000", "2020-01-01T00:00:00Z", "2020-01-01T01:00:00+01:00"} {
		out, _, err := runPlan(t, "--rate", "5000", "--generators", "1000", "--years", "30", "--epoch", e, "--json")
		if err != nil {
			t.Fatalf("%s: %v", e, err)
		}
		var got struct {
			Request struct {
				EpochMs int64 `json:"epoch_ms"`
			} `json:"request"`
			EpochNote string `json:"epoch_note"`
			Needs     struct {
				T int `json:"timestamp_bits"`
			} `json:"needs"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatal(err)
		}
		if got.Request.EpochMs != 1_577_836_800_000 || got.EpochNote != "given" || got.Needs.T != 41 {
			t.Errorf("%s: %+v", e, got)
		}
	}
}

func TestParseCount(t *testing.T) {
	for in, want := range map[string]int64{
		"1": 1, "5000": 5000, "5_000": 5000, "5,000": 5000, "5k": 5000, "5K": 5000, "1.5k": 1500,
		"1.5M": 1_500_000, "2G": 2_000_000_000, "0.001k": 1, "1.0": 1, "1.50k": 1500, "0": 0,
		"9223372036854775807": math.MaxInt64, "9223372036.854775807G": math.MaxInt64,
	} {
		got, err := parseCount(in)
		if err != nil || got != want {
			t.Errorf("%q: %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "k", "-1", "+1", "1.5", "1.50", "0.0001k", "1e3", "1.", ".5k", "1 000", "9223372036854775808",
		"9223372036.854775808G", "10000000000G", "1kk", "0x10", "１"} {
		if v, err := parseCount(in); err == nil {
			t.Errorf("%q accepted as %d", in, v)
		}
	}
}

func FuzzParseCount(f *testing.F) {
	for _, s := range []string{"5000", "5k", "1.5M", "2G", "9223372036854775807", "9223372036.854775807G", "1.5", "", "-1", "1_0,0.0k"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parseCount(s)
		if err != nil {
			return
		}
		if v < 0 {
			t.Fatalf("%q → %d", s, v)
		}
		// What it accepts, written plainly, reads back the same.
		if back, err := parseCount(strconv.FormatInt(v, 10)); err != nil || back != v {
			t.Fatalf("%q → %d → %d, %v", s, v, back, err)
		}
		// Plain digits mean what strconv says.
		if n, err := strconv.ParseInt(s, 10, 64); err == nil && n != v {
			t.Fatalf("%q → %d, strconv %d", s, v, n)
		}
		// A k suffix is × 1000, when the product fits.
		last := s[len(s)-1]
		if strings.IndexByte("kKmMgG", last) < 0 && v <= math.MaxInt64/1000 {
			if k, err := parseCount(s + "k"); err != nil || k != v*1000 {
				t.Fatalf("%q → %d, %qk → %d, %v", s, v, s, k, err)
			}
		}
	})
}
