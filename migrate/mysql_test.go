package migrate_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/client"
	"github.com/ticketd/ticketd/migrate"
	"github.com/ticketd/ticketd/migrate/migratetest"
)

func myExec(t *testing.T, db *sql.DB, sqls ...string) {
	t.Helper()
	for _, q := range sqls {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// myInserter inserts one row into table with the legacy generator
// (AUTO_INCREMENT), autocommitted, on a connection of its own.
func myInserter(t *testing.T, m *migratetest.MariaDB, table string) func(context.Context) (int64, error) {
	db := m.DB(t, "legacy")
	db.SetMaxOpenConns(1)
	return func(ctx context.Context) (int64, error) {
		r, err := db.ExecContext(ctx, "INSERT INTO "+table+" (note) VALUES ('legacy')")
		if err != nil {
			return 0, err
		}
		return r.LastInsertId()
	}
}

// valuesInsert inserts n rows with one multi-row VALUES statement: InnoDB
// gives them exactly n consecutive AUTO_INCREMENT values.
func valuesInsert(table string, n int) string {
	return "INSERT INTO " + table + " (note) VALUES " + strings.TrimSuffix(strings.Repeat("('x'),", n), ",")
}

func TestMariaDB(t *testing.T) {
	m := migratetest.StartMariaDB(t)
	c := newCluster(t)
	admin := m.DB(t, "")
	myExec(t, admin, "CREATE DATABASE legacy")
	db := m.DB(t, "legacy")
	url := m.URL("legacy")

	t.Run("AutoIncrement_LegacyWritesDuringMigrate_NewSequenceAboveEveryLegacyID", func(t *testing.T) {
		myExec(t, db, "CREATE TABLE orders (id BIGINT AUTO_INCREMENT PRIMARY KEY, note VARCHAR(20)) ENGINE=InnoDB",
			"INSERT INTO orders (note) SELECT 'old' FROM seq_1_to_1000")
		src, err := migrate.NewMySQLAutoIncrement(url, "orders")
		if err != nil {
			t.Fatal(err)
		}
		res := migrateUnderLegacyWrites(t, c, "my-orders", src, myInserter(t, m, "orders"), migrate.ActionCreate)
		if res.Start != res.Target+1 {
			t.Fatalf("created with start %d, want %d", res.Start, res.Target+1)
		}
	})

	t.Run("MaxColumn_LegacyWritesDuringMigrate_ExistingSequenceRaised", func(t *testing.T) {
		if _, _, err := c.CreateSequence(ctxT(t), "my-invoices", client.SequenceSettings{}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Reserve(ctxT(t), "my-invoices", 10); err != nil {
			t.Fatal(err)
		}
		myExec(t, db, "CREATE TABLE invoices (id BIGINT AUTO_INCREMENT PRIMARY KEY, note VARCHAR(20)) ENGINE=InnoDB AUTO_INCREMENT=3000000",
			"INSERT INTO invoices (note) SELECT 'old' FROM seq_1_to_500")
		src, err := migrate.NewMySQLMax(url, "invoices", "id")
		if err != nil {
			t.Fatal(err)
		}
		res := migrateUnderLegacyWrites(t, c, "my-invoices", src, myInserter(t, m, "invoices"), migrate.ActionRaise)
		if res.Skipped < 1 {
			t.Fatalf("raise skipped %d IDs", res.Skipped)
		}
	})

	t.Run("AutoIncrement_IsTheNextValue", func(t *testing.T) {
		myExec(t, db, "CREATE TABLE ai (id INT AUTO_INCREMENT PRIMARY KEY, note VARCHAR(20)) ENGINE=InnoDB",
			valuesInsert("ai", 10))
		src, _ := migrate.NewMySQLAutoIncrement(url, "legacy.ai")
		check := func(what string, want int64) {
			t.Helper()
			got, err := src.Highest(ctxT(t))
			if err != nil || got != want {
				t.Fatalf("%s: highest = %d, %v; want %d", what, got, err, want)
			}
		}
		// (Rows of one multi-row VALUES insert take exactly their IDs;
		// INSERT ... SELECT would reserve them in growing batches, and the
		// counter would run ahead of the rows: still an upper bound.)
		check("rows 1..10", 10)
		// The top row deleted: max(id) is 9, but 10 was handed out.
		myExec(t, db, "DELETE FROM ai WHERE id = 10")
		check("row 10 deleted", 10)
		// A rolled-back insert used 11.
		myExec(t, db, "BEGIN", "INSERT INTO ai (note) VALUES ('rolled back')", "ROLLBACK")
		check("insert of 11 rolled back", 11)
		// An insert not yet committed holds 12: the counter counts it,
		// max(id) cannot see it.
		tx, err := db.Begin()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec("INSERT INTO ai (note) VALUES ('in flight')"); err != nil {
			t.Fatal(err)
		}
		check("insert of 12 in flight", 12)
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		myExec(t, db, "ALTER TABLE ai AUTO_INCREMENT = 5000")
		check("AUTO_INCREMENT set to 5000", 4999)
		// The URL form reaches the same table.
		u, err := migrate.NewMySQLAutoIncrement(fmt.Sprintf("mariadb://root@127.0.0.1:%d/legacy", m.Port), "ai")
		if err != nil {
			t.Fatal(err)
		}
		if got, err := u.Highest(ctxT(t)); err != nil || got != 4999 {
			t.Fatalf("URL form: highest = %d, %v; want 4999", got, err)
		}
	})

	t.Run("DryRunAndRunTwice_ChangeNothing", func(t *testing.T) {
		myExec(t, db, "CREATE TABLE twice (id BIGINT AUTO_INCREMENT PRIMARY KEY, note VARCHAR(20)) ENGINE=InnoDB",
			valuesInsert("twice", 300))
		src, _ := migrate.NewMySQLAutoIncrement(url, "twice")
		res, err := migrate.Run(ctxT(t), c, "my-twice", src, migrate.Options{Margin: 100}, true)
		if err != nil || res.Action != migrate.ActionCreate || res.Target != 400 || res.Done != "" {
			t.Fatalf("dry run: %+v, %v", res, err)
		}
		mustNotExist(t, c, "my-twice")
		res, err = migrate.Run(ctxT(t), c, "my-twice", src, migrate.Options{Margin: 100}, false)
		if err != nil || res.Done != migrate.ActionCreate || res.Target != 400 {
			t.Fatalf("first run: %+v, %v", res, err)
		}
		checkRerunAndDryRun(t, c, "my-twice", src, 100)
	})

	t.Run("BadInput_ClearErrors", func(t *testing.T) {
		myExec(t, db, "CREATE TABLE plain (id INT PRIMARY KEY, name VARCHAR(20), price DECIMAL(10,2))",
			"INSERT INTO plain VALUES (1, 'a', 1.50)")
		mk := func(src migrate.Source, err error) migrate.Source {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
			return src
		}
		run := func(src migrate.Source) error {
			_, err := migrate.Run(ctxT(t), c, "my-bad", src, migrate.Options{}, false)
			return err
		}
		down := fmt.Sprintf("mysql://root:secret@tcp(127.0.0.1:%d)/legacy?timeout=5s", migratetest.ClosedPort(t))
		err := run(mk(migrate.NewMySQLAutoIncrement(down, "orders")))
		wantErr(t, err, migrate.ErrSourceUnreachable, "127.0.0.1")
		if strings.Contains(err.Error(), "secret") {
			t.Fatalf("error shows the password: %v", err)
		}
		wantErr(t, run(mk(migrate.NewMySQLAutoIncrement(url, "nope"))), migrate.ErrSourceNotFound, "nope")
		wantErr(t, run(mk(migrate.NewMySQLAutoIncrement(url, "plain"))), migrate.ErrNotInteger, "plain", "no AUTO_INCREMENT")
		wantErr(t, run(mk(migrate.NewMySQLMax(url, "plain", "nope_col"))), migrate.ErrSourceNotFound, "nope_col")
		wantErr(t, run(mk(migrate.NewMySQLMax(url, "plain", "name"))), migrate.ErrNotInteger, "name", "varchar")
		wantErr(t, run(mk(migrate.NewMySQLMax(url, "plain", "price"))), migrate.ErrNotInteger, "price", "decimal")
		wantErr(t, run(mk(migrate.NewMySQLMax(m.URL(""), "plain", "id"))), migrate.ErrInvalid, "plain", "database")
		wantErr(t, run(mk(migrate.NewMySQLMax(m.URL("nodb"), "plain", "id"))), migrate.ErrSourceUnreachable, "nodb")
		mustNotExist(t, c, "my-bad")
		_, err = migrate.OpenSource(migrate.SourceSpec{From: url, Sequence: "s"})
		wantErr(t, err, migrate.ErrInvalid, "--pg-sequence")
	})
}
