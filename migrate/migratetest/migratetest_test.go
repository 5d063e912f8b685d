package migratetest_test

import (
	"context"
	"testing"

	"github.com/ticketd/ticketd/migrate/migratetest"
)

func TestStartPostgres_Answers(t *testing.T) {
	p := migratetest.StartPostgres(t)
	var v string
	if err := p.Conn(t).QueryRow(context.Background(), "SHOW server_version").Scan(&v); err != nil {
		t.Fatal(err)
	}
	t.Logf("PostgreSQL %s on port %d", v, p.Port)
}

func TestStartMariaDB_Answers(t *testing.T) {
	m := migratetest.StartMariaDB(t)
	var v string
	if err := m.DB(t, "").QueryRow("SELECT VERSION()").Scan(&v); err != nil {
		t.Fatal(err)
	}
	t.Logf("MariaDB %s on port %d", v, m.Port)
}
