package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"

	"github.com/ticketd/ticketd/migrate"
)

const migrateUsage = `usage: ticketd migrate --sequence SEQ SOURCE [--margin M] [--max X] [--dry-run] [--json] [--addr URL ...]

Reads the highest ID a legacy generator has handed out and creates the
ticketd sequence SEQ above it (start = highest + margin + 1), or raises an
existing SEQ to highest + margin. A raise never lowers a sequence, so running
migrate again changes nothing unless the source has moved past the last target.

SOURCE is one of:
  --from postgres://USER[:PASS]@HOST:PORT/DB --pg-sequence SEQ     a sequence's last value (is_called counted)
  --from postgres://... --table T --column C                       max(C) of table T
  --from mysql://USER[:PASS]@tcp(HOST:PORT)/DB --table T           T's AUTO_INCREMENT - 1 (MariaDB, MySQL)
  --from mysql://USER[:PASS]@HOST:PORT/DB --table T --column C     max(C) of table T
  --from-number N                                                  a highest ID you know

mysql:// takes a go-sql-driver DSN after the scheme, or a URL; mariadb://
is the same. Keep passwords off the command line with TICKETD_FROM=... (every
flag can be set as TICKETD_<FLAG>), PGPASSWORD or ~/.pgpass.

THE MARGIN must cover every ID the legacy generator hands out from the moment
migrate reads it until the generator stops for good: ticketd's IDs start
above highest + margin, and a legacy ID past that may collide with one of
them. Size it as (legacy IDs per second) x (seconds until the legacy writers
are switched off), with room to spare; or run migrate again, repeatedly (from
cron, say), during the transition: each run lifts the sequence with the
source. IDs are int64, so a generous margin costs nothing.

flags:
`

func migrateCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, migrateUsage)
		fs.PrintDefaults()
	}
	co := clientFlags(fs)
	sequence := fs.String("sequence", "", "the ticketd sequence to create or raise (required)")
	from := fs.String("from", "", "the legacy database: postgres://… or mysql://… (see above)")
	pgSeq := fs.String("pg-sequence", "", "PostgreSQL source: the sequence to read (schema-qualified if needed)")
	table := fs.String("table", "", "the source table (MySQL alone: its AUTO_INCREMENT; with --column: max of the column)")
	column := fs.String("column", "", "the source column whose max() is the highest legacy ID (an integer column)")
	fromNumber := fs.String("from-number", "", "the highest legacy ID, given as a number instead of --from")
	margin := fs.Int64("margin", migrate.DefaultMargin, "IDs added above the source's highest: must cover every ID the legacy generator hands out until it stops (see above)")
	maxID := fs.Int64("max", 0, "max of the sequence when migrate creates it (default 2^63-1); an existing sequence keeps its own")
	dryRun := fs.Bool("dry-run", false, "print the plan (source's highest ID, target, create/raise/nothing to do) and change nothing")
	asJSON := fs.Bool("json", false, "print the plan or result as JSON")
	pos, err := flagsAnywhere(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 || (len(pos) == 1 && *sequence != "" && pos[0] != *sequence) {
		return usageError{"usage: ticketd migrate --sequence SEQ (--from URL ... | --from-number N) [--margin M] [--dry-run]; see ticketd migrate -h"}
	}
	if len(pos) == 1 {
		*sequence = pos[0]
	}
	if *sequence == "" {
		return usageError{"migrate: --sequence is required; see ticketd migrate -h"}
	}
	if *margin < 0 {
		return usageError{fmt.Sprintf("migrate: --margin must not be negative, got %d", *margin)}
	}
	if *maxID < 0 {
		return usageError{fmt.Sprintf("migrate: --max must not be negative, got %d", *maxID)}
	}
	var src migrate.Source
	switch {
	case *fromNumber != "" && (*from != "" || *pgSeq != "" || *table != "" || *column != ""):
		return usageError{"migrate: --from-number goes alone: no --from, --pg-sequence, --table or --column"}
	case *fromNumber != "":
		n, err := strconv.ParseInt(*fromNumber, 10, 64)
		if err != nil || n < 0 {
			return usageError{fmt.Sprintf("migrate: --from-number must be an integer from 0 to 2^63-1, got %q", *fromNumber)}
		}
		src = migrate.Number(n)
	case *from == "":
		return usageError{"migrate: give the source: --from URL (with --pg-sequence, or --table [--column]) or --from-number N; see ticketd migrate -h"}
	default:
		src, err = migrate.OpenSource(migrate.SourceSpec{From: *from, Sequence: *pgSeq, Table: *table, Column: *column})
		if err != nil {
			if errors.Is(err, migrate.ErrInvalid) {
				return usageError{err.Error()}
			}
			return err
		}
	}
	c, ctx, cancel, err := newClient(co)
	if err != nil {
		return err
	}
	defer cancel()
	defer c.Close()
	res, err := migrate.Run(ctx, c, *sequence, src, migrate.Options{Margin: *margin, Max: *maxID}, *dryRun)
	if err != nil {
		return err
	}
	maxSet := false
	fs.Visit(func(f *flag.Flag) { maxSet = maxSet || f.Name == "max" })
	if maxSet && res.Current != nil && res.Current.Max != *maxID {
		fmt.Fprintf(stderr, "note: %q exists with max %d; --max %d applies only to a sequence migrate creates\n", *sequence, res.Current.Max, *maxID)
	}
	if *asJSON {
		return printJSON(stdout, struct {
			migrate.Result
			DryRun bool `json:"dry_run"`
		}{res, *dryRun})
	}
	printMigration(stdout, res, *dryRun)
	return nil
}

func printMigration(w io.Writer, r migrate.Result, dryRun bool) {
	fmt.Fprintf(w, "source:  %s\n", r.Source)
	fmt.Fprintf(w, "highest: %d\n", r.SourceHighest)
	fmt.Fprintf(w, "target:  %d (highest + margin %d): every ID %q hands out afterwards is above it\n", r.Target, r.Margin, r.Sequence)
	if r.Current == nil {
		fmt.Fprintf(w, "ticketd: sequence %q does not exist\n", r.Sequence)
	} else {
		fmt.Fprintf(w, "ticketd: sequence %q exists: high-water mark %d, max %d\n", r.Sequence, *r.CurrentMark, r.Current.Max)
	}
	switch r.Action {
	case migrate.ActionCreate:
		fmt.Fprintf(w, "plan:    create %q with start %d, max %d\n", r.Sequence, r.Start, r.Max)
	case migrate.ActionRaise:
		fmt.Fprintf(w, "plan:    raise %q from %d to %d\n", r.Sequence, *r.CurrentMark, r.Target)
	default:
		fmt.Fprintf(w, "plan:    nothing to do (the mark is at or above the target)\n")
	}
	if dryRun {
		fmt.Fprintln(w, "dry run: nothing changed")
		return
	}
	next := "exhausted"
	if r.After != nil && r.After.Next != nil {
		next = strconv.FormatInt(*r.After.Next, 10)
	}
	switch r.Done {
	case migrate.ActionCreate:
		fmt.Fprintf(w, "done:    created %q; next ID %s\n", r.Sequence, next)
	case migrate.ActionRaise:
		fmt.Fprintf(w, "done:    raised %q to %d (%d IDs skipped); next ID %s\n", r.Sequence, r.Target, r.Skipped, next)
	default:
		fmt.Fprintf(w, "done:    nothing to do; next ID %s\n", next)
	}
}
