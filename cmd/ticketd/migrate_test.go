package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/client"
	"github.com/ticketd/ticketd/internal/testcluster"
	"github.com/ticketd/ticketd/migrate"
	"github.com/ticketd/ticketd/migrate/migratetest"
)

func runMigrate(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(append([]string{"migrate"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

func TestMigrateCmd_FromNumber_DryRunThenCreateThenNothing(t *testing.T) {
	tc := testcluster.New(t, 1, nil)
	addr := "--addr=" + strings.Join(tc.URLs(), ",")
	c, err := client.New(tc.URLs())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	code, out, errs := runMigrate(t, addr, "--sequence", "orders", "--from-number", "41", "--margin", "9", "--dry-run", "--json")
	var plan map[string]any
	if err := json.Unmarshal([]byte(out), &plan); code != 0 || err != nil || plan["action"] != "create" || plan["dry_run"] != true ||
		plan["source_highest"] != 41.0 || plan["target"] != 50.0 || plan["start"] != 51.0 || plan["after"] != nil || plan["done"] != nil {
		t.Fatalf("dry run --json: exit %d, %v\n%s%s", code, err, out, errs)
	}
	t.Logf("dry run --json:\n%s", out)
	code, out, errs = runMigrate(t, addr, "--sequence", "orders", "--from-number", "41", "--margin", "9", "--dry-run")
	if code != 0 || !strings.Contains(out, "plan:    create \"orders\" with start 51") || !strings.Contains(out, "dry run: nothing changed") {
		t.Fatalf("dry run: exit %d\n%s%s", code, out, errs)
	}
	t.Logf("dry run:\n%s", out)
	if _, err := c.SequenceInfo(ctx, "orders"); err == nil {
		t.Fatal("a dry run created the sequence")
	}

	// The sequence name may also come first, as in the other commands.
	code, out, errs = runMigrate(t, "orders", addr, "--from-number", "41", "--margin", "9", "--json")
	var res struct {
		migrate.Result
		DryRun bool `json:"dry_run"`
	}
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if res.Done != migrate.ActionCreate || res.Target != 50 || res.After == nil || res.After.Start != 51 || res.DryRun {
		t.Fatalf("migrate --json: %s", out)
	}
	r, err := c.Reserve(ctx, "orders", 1)
	if err != nil || r.First != 51 {
		t.Fatalf("first ID after migrate: %+v, %v; want 51", r, err)
	}

	code, out, errs = runMigrate(t, addr, "--sequence", "orders", "--from-number", "41", "--margin", "9")
	if code != 0 || !strings.Contains(out, "done:    nothing to do") {
		t.Fatalf("second run: exit %d\n%s%s", code, out, errs)
	}
	// A higher legacy number raises it.
	code, out, errs = runMigrate(t, addr, "--sequence", "orders", "--from-number", "5000", "--margin", "0", "--max", "7")
	if code != 0 || !strings.Contains(out, "done:    raised \"orders\" to 5000") || !strings.Contains(errs, "--max 7 applies only") {
		t.Fatalf("raise: exit %d\n%s%s", code, out, errs)
	}
	t.Logf("raise:\n%s", out)
	if r, err := c.Reserve(ctx, "orders", 1); err != nil || r.First <= 5000 {
		t.Fatalf("ID after the raise: %+v, %v", r, err)
	}
	code, out, errs = runMigrate(t, addr, "--sequence", "small", "--from-number", "100", "--margin", "0", "--max", "100")
	if code != 1 || !strings.Contains(errs, "max 100") {
		t.Fatalf("past --max: exit %d\n%s%s", code, out, errs)
	}
}

func TestMigrateCmd_BadFlags_UsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"--from-number", "5"}, "--sequence is required"},
		{[]string{"--sequence", "s"}, "give the source"},
		{[]string{"--sequence", "s", "--from-number", "5", "--margin", "-3"}, "--margin must not be negative, got -3"},
		{[]string{"--sequence", "s", "--from-number", "x5"}, "--from-number must be an integer"},
		{[]string{"--sequence", "s", "--from-number", "5", "--from", "postgres://h/d"}, "--from-number goes alone"},
		{[]string{"--sequence", "s", "--from", "postgres://h/d", "--table", "t"}, "--column"},
		{[]string{"--sequence", "s", "--from", "mysql://u:pw@tcp(h:1)/d"}, "--table"},
		{[]string{"--sequence", "s", "t", "--from-number", "5"}, "usage"},
	} {
		code, out, errs := runMigrate(t, tc.args...)
		if code != 2 || !strings.Contains(errs, tc.says) {
			t.Fatalf("%q: exit %d, want 2 saying %q\n%s%s", tc.args, code, tc.says, out, errs)
		}
	}
	if code, _, errs := runMigrate(t, "-h"); code != 0 || !strings.Contains(errs, "THE MARGIN must cover") || !strings.Contains(errs, "-dry-run") {
		t.Fatalf("-h: exit %d\n%s", code, errs)
	}
}

// The source URL from the environment (TICKETD_FROM keeps the password off
// the command line), against a real PostgreSQL.
func TestMigrateCmd_PostgresFromEnv(t *testing.T) {
	pg := migratetest.StartPostgres(t)
	if _, err := pg.Conn(t).Exec(context.Background(), "CREATE SEQUENCE legacy_seq; SELECT setval('legacy_seq', 777)"); err != nil {
		t.Fatal(err)
	}
	tc := testcluster.New(t, 1, nil)
	t.Setenv("TICKETD_FROM", pg.URL)
	t.Setenv("TICKETD_ADDR", tc.URLs()[0])
	code, out, errs := runMigrate(t, "--sequence", "pg", "--pg-sequence", "legacy_seq", "--margin", "23")
	if code != 0 || !strings.Contains(out, "highest: 777") || !strings.Contains(out, "created \"pg\"; next ID 801") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	t.Logf("\n%s", out)
	code, out, errs = runMigrate(t, "--sequence", "pg", "--pg-sequence", "nope_seq")
	if code != 1 || !strings.Contains(errs, `no sequence "nope_seq"`) {
		t.Fatalf("unknown sequence: exit %d\n%s%s", code, out, errs)
	}
}
