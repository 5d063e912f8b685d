package migrate_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/ticketd/ticketd/client"
	"github.com/ticketd/ticketd/migrate"
	"github.com/ticketd/ticketd/migrate/migratetest"
)

func pgExec(t *testing.T, conn *pgx.Conn, sqls ...string) {
	t.Helper()
	for _, q := range sqls {
		if _, err := conn.Exec(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// pgInserter inserts one row into table with the legacy generator (the
// column's bigserial sequence), on a connection of its own.
func pgInserter(t *testing.T, pg *migratetest.Postgres, table string) func(context.Context) (int64, error) {
	conn := pg.Conn(t)
	return func(ctx context.Context) (int64, error) {
		var id int64
		err := conn.QueryRow(ctx, "INSERT INTO "+table+" (note) VALUES ('legacy') RETURNING id").Scan(&id)
		return id, err
	}
}

func TestPostgres(t *testing.T) {
	pg := migratetest.StartPostgres(t)
	c := newCluster(t)
	conn := pg.Conn(t)

	t.Run("Sequence_LegacyWritesDuringMigrate_NewSequenceAboveEveryLegacyID", func(t *testing.T) {
		pgExec(t, conn,
			"CREATE TABLE orders (id bigserial PRIMARY KEY, note text)",
			"INSERT INTO orders (note) SELECT 'old' FROM generate_series(1, 1000)")
		src, err := migrate.NewPostgresSequence(pg.URL, "orders_id_seq")
		if err != nil {
			t.Fatal(err)
		}
		res := migrateUnderLegacyWrites(t, c, "pg-orders", src, pgInserter(t, pg, "orders"), migrate.ActionCreate)
		if res.Start != res.Target+1 || res.After == nil || res.After.Start != res.Target+1 {
			t.Fatalf("created with start %d (after: %+v), want target+1 = %d", res.Start, res.After, res.Target+1)
		}
	})

	t.Run("MaxColumn_LegacyWritesDuringMigrate_ExistingSequenceRaised", func(t *testing.T) {
		// ticketd's sequence exists and handed out IDs; the legacy
		// table's are far above them.
		if _, _, err := c.CreateSequence(ctxT(t), "pg-invoices", client.SequenceSettings{}); err != nil {
			t.Fatal(err)
		}
		early, err := c.Reserve(ctxT(t), "pg-invoices", 10)
		if err != nil {
			t.Fatal(err)
		}
		pgExec(t, conn,
			"CREATE TABLE invoices (id bigserial PRIMARY KEY, note text)",
			"SELECT setval('invoices_id_seq', 2000000)",
			"INSERT INTO invoices (note) SELECT 'old' FROM generate_series(1, 500)")
		src, err := migrate.NewPostgresMax(pg.URL, "invoices", "id")
		if err != nil {
			t.Fatal(err)
		}
		res := migrateUnderLegacyWrites(t, c, "pg-invoices", src, pgInserter(t, pg, "invoices"), migrate.ActionRaise)
		if res.Skipped < 1 || *res.CurrentMark >= res.Target || early.Last > *res.CurrentMark {
			t.Fatalf("raise from mark %d (IDs up to %d handed out before) to %d skipped %d", *res.CurrentMark, early.Last, res.Target, res.Skipped)
		}
	})

	t.Run("SequenceNotCalled_HighestIsBelowLastValue", func(t *testing.T) {
		pgExec(t, conn, "CREATE SEQUENCE fresh_seq START 500")
		src, _ := migrate.NewPostgresSequence(pg.URL, "fresh_seq")
		check := func(want int64) {
			t.Helper()
			got, err := src.Highest(ctxT(t))
			if err != nil || got != want {
				t.Fatalf("highest = %d, %v; want %d", got, err, want)
			}
		}
		check(499) // fresh: last_value 500, is_called false: 500 is handed out next
		pgExec(t, conn, "SELECT setval('fresh_seq', 700, false)")
		check(699)
		pgExec(t, conn, "SELECT setval('fresh_seq', 700, true)")
		check(700)
		pgExec(t, conn, "SELECT nextval('fresh_seq')")
		check(701)
		// A session caching 50 values: last_value counts the whole cache.
		pgExec(t, conn, "ALTER SEQUENCE fresh_seq CACHE 50", "SELECT nextval('fresh_seq')")
		check(751)
	})

	t.Run("DryRun_ChangesNothing", func(t *testing.T) {
		pgExec(t, conn, "CREATE SEQUENCE dry_seq", "SELECT setval('dry_seq', 123456)")
		src, _ := migrate.NewPostgresSequence(pg.URL, "dry_seq")
		// Not created.
		res, err := migrate.Run(ctxT(t), c, "pg-dry", src, migrate.Options{Margin: 1000}, true)
		if err != nil {
			t.Fatal(err)
		}
		if res.Action != migrate.ActionCreate || res.Done != "" || res.SourceHighest != 123456 || res.Target != 124456 || res.Start != 124457 {
			t.Fatalf("dry run plan: %+v", res)
		}
		mustNotExist(t, c, "pg-dry")
		// Not raised.
		if _, _, err := c.CreateSequence(ctxT(t), "pg-dry", client.SequenceSettings{}); err != nil {
			t.Fatal(err)
		}
		before := seqInfo(t, c, "pg-dry")
		res, err = migrate.Run(ctxT(t), c, "pg-dry", src, migrate.Options{Margin: 1000}, true)
		if err != nil {
			t.Fatal(err)
		}
		if res.Action != migrate.ActionRaise || res.Done != "" || res.Current == nil {
			t.Fatalf("dry run plan: %+v", res)
		}
		sameSeq(t, "a dry run", before, seqInfo(t, c, "pg-dry"))
	})

	t.Run("RunTwice_SecondChangesNothing", func(t *testing.T) {
		pgExec(t, conn, "CREATE TABLE twice (id bigserial PRIMARY KEY, note text)",
			"INSERT INTO twice (note) SELECT 'old' FROM generate_series(1, 300)")
		src, _ := migrate.NewPostgresMax(pg.URL, "twice", "id")
		res, err := migrate.Run(ctxT(t), c, "pg-twice", src, migrate.Options{Margin: 100}, false)
		if err != nil || res.Done != migrate.ActionCreate || res.Target != 400 {
			t.Fatalf("first run: %+v, %v", res, err)
		}
		checkRerunAndDryRun(t, c, "pg-twice", src, 100)
	})

	t.Run("ExistingSequenceAboveLegacy_LeftAsItIs", func(t *testing.T) {
		pgExec(t, conn, "CREATE SEQUENCE low_seq", "SELECT setval('low_seq', 5000)")
		if _, _, err := c.CreateSequence(ctxT(t), "pg-high", client.SequenceSettings{Start: 1_000_000}); err != nil {
			t.Fatal(err)
		}
		before := seqInfo(t, c, "pg-high")
		src, _ := migrate.NewPostgresSequence(pg.URL, "low_seq")
		res, err := migrate.Run(ctxT(t), c, "pg-high", src, migrate.Options{Margin: 1000}, false)
		if err != nil || res.Action != migrate.ActionNone || res.Done != migrate.ActionNone {
			t.Fatalf("%+v, %v", res, err)
		}
		sameSeq(t, "migrate below the mark", before, seqInfo(t, c, "pg-high"))
	})

	t.Run("BadInput_ClearErrors", func(t *testing.T) {
		pgExec(t, conn, "CREATE TABLE notes (id bigserial PRIMARY KEY, body text, amount numeric)",
			"INSERT INTO notes (body, amount) VALUES ('a', 1.5)", "CREATE SEQUENCE big_seq", "SELECT setval('big_seq', 90000)",
			"CREATE SEQUENCE down_seq INCREMENT -1 MAXVALUE 100 START 100")
		ctx := ctxT(t)
		mk := func(src migrate.Source, err error) migrate.Source {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
			return src
		}
		run := func(seq string, src migrate.Source, o migrate.Options) error {
			_, err := migrate.Run(ctx, c, seq, src, o, false)
			return err
		}
		down := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable&connect_timeout=5", migratetest.ClosedPort(t))
		src := mk(migrate.NewPostgresSequence(down, "orders_id_seq"))
		wantErr(t, run("pg-bad", src, migrate.Options{}), migrate.ErrSourceUnreachable, "127.0.0.1")
		src = mk(migrate.NewPostgresSequence(pg.URL, "nope_seq"))
		wantErr(t, run("pg-bad", src, migrate.Options{}), migrate.ErrSourceNotFound, "nope_seq")
		src = mk(migrate.NewPostgresSequence(pg.URL, "notes"))
		wantErr(t, run("pg-bad", src, migrate.Options{}), migrate.ErrSourceNotFound, "notes", "not a sequence")
		src = mk(migrate.NewPostgresSequence(pg.URL, "down_seq"))
		wantErr(t, run("pg-bad", src, migrate.Options{}), migrate.ErrNotInteger, "down_seq", "descends")
		src = mk(migrate.NewPostgresMax(pg.URL, "nope_table", "id"))
		wantErr(t, run("pg-bad", src, migrate.Options{}), migrate.ErrSourceNotFound, "nope_table")
		src = mk(migrate.NewPostgresMax(pg.URL, "notes", "nope_col"))
		wantErr(t, run("pg-bad", src, migrate.Options{}), migrate.ErrSourceNotFound, "nope_col")
		src = mk(migrate.NewPostgresMax(pg.URL, "notes", "body"))
		wantErr(t, run("pg-bad", src, migrate.Options{}), migrate.ErrNotInteger, "body", "text")
		src = mk(migrate.NewPostgresMax(pg.URL, "notes", "amount"))
		wantErr(t, run("pg-bad", src, migrate.Options{}), migrate.ErrNotInteger, "amount", "numeric")
		src = mk(migrate.NewPostgresSequence(pg.URL, "big_seq"))
		wantErr(t, run("pg-bad", src, migrate.Options{Margin: -1}), migrate.ErrInvalid, "margin", "-1")
		// Past --max of a sequence to be created: not created.
		wantErr(t, run("pg-bad", src, migrate.Options{Margin: 10_000, Max: 100_000}), migrate.ErrPastMax, "100000", "100000")
		mustNotExist(t, c, "pg-bad")
		// Past the max of an existing sequence: left as it is.
		if _, _, err := c.CreateSequence(ctx, "pg-small", client.SequenceSettings{Max: 95_000}); err != nil {
			t.Fatal(err)
		}
		before := seqInfo(t, c, "pg-small")
		wantErr(t, run("pg-small", src, migrate.Options{Margin: 10_000}), migrate.ErrPastMax, "pg-small", "95000")
		sameSeq(t, "a failed migrate", before, seqInfo(t, c, "pg-small"))
		// Malformed --from.
		_, err := migrate.OpenSource(migrate.SourceSpec{From: "oracle://scott:tiger@db/x", Table: "t"})
		wantErr(t, err, migrate.ErrInvalid, "oracle")
		if strings.Contains(err.Error(), "tiger") {
			t.Fatalf("error shows the password: %v", err)
		}
	})
}
