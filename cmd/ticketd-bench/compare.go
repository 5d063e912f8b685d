package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
)

// runCompare prints, per concurrency level, ticketd against the baseline
// from `load --json` files. It lives in the binary rather than the script
// so the script needs no jq or python.
func runCompare(args []string) error {
	fs := flag.NewFlagSet("compare", flag.ExitOnError)
	tFiles := fs.String("ticketd", "", "comma-separated load --json files of ticketd runs")
	bFile := fs.String("baseline", "", "load --json file of the baseline run")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *tFiles == "" || *bFile == "" {
		return errors.New("--ticketd and --baseline are required")
	}
	base, err := readLoadReport(*bFile)
	if err != nil {
		return err
	}
	for i, f := range strings.Split(*tFiles, ",") {
		rep, err := readLoadReport(f)
		if err != nil {
			return err
		}
		if i > 0 {
			fmt.Println()
		}
		printCompare(os.Stdout, rep, base)
	}
	return nil
}

func readLoadReport(path string) (*loadReport, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rep loadReport
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &rep, nil
}

func printCompare(w io.Writer, t, b *loadReport) {
	fmt.Fprintf(w, "== %s vs %s  (count=%d, %gs measured per level)\n", t.Label, b.Label, t.Count, t.DurationS)
	byConc := map[int]levelResult{}
	for _, l := range b.Levels {
		byConc[l.Concurrency] = l
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "conc\tticketd res/s\tbaseline res/s\tratio\tticketd p50 ms\tticketd p99 ms\tbaseline p50 ms\tbaseline p99 ms\tticketd errors\toverlaps\t")
	for _, l := range t.Levels {
		bl, ok := byConc[l.Concurrency]
		if !ok {
			fmt.Fprintf(tw, "%d\t%.0f\t-\t-\t%.3f\t%.3f\t-\t-\t%s\t%d\t\n",
				l.Concurrency, l.ReservationsPerSec, l.P50Ms, l.P99Ms, fmtErrors(l.Errors), l.Check.Overlaps)
			continue
		}
		ratio := "-"
		if bl.ReservationsPerSec > 0 {
			ratio = fmt.Sprintf("%.1f%%", 100*l.ReservationsPerSec/bl.ReservationsPerSec)
		}
		fmt.Fprintf(tw, "%d\t%.0f\t%.0f\t%s\t%.3f\t%.3f\t%.3f\t%.3f\t%s\t%d\t\n",
			l.Concurrency, l.ReservationsPerSec, bl.ReservationsPerSec, ratio,
			l.P50Ms, l.P99Ms, bl.P50Ms, bl.P99Ms, fmtErrors(l.Errors), l.Check.Overlaps)
	}
	tw.Flush()
}
