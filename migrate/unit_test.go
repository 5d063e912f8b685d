package migrate_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/migrate"
)

func TestTarget_MarginAndOverflow(t *testing.T) {
	if got, err := migrate.Target(1000, 50); err != nil || got != 1050 {
		t.Fatalf("Target(1000, 50) = %d, %v", got, err)
	}
	if _, err := migrate.Target(1000, -1); !errors.Is(err, migrate.ErrInvalid) {
		t.Fatalf("negative margin: %v", err)
	}
	if _, err := migrate.Target(math.MaxInt64-10, 11); !errors.Is(err, migrate.ErrPastMax) {
		t.Fatalf("overflow: %v", err)
	}
	if got, err := migrate.Target(math.MaxInt64-10, 10); err != nil || got != math.MaxInt64 {
		t.Fatalf("Target at the edge = %d, %v", got, err)
	}
}

func TestParseMySQLDSN_BothForms(t *testing.T) {
	for _, tc := range []struct{ in, addr, user, pass, db string }{
		{"mysql://app:p@ss:w@tcp(db.example:3307)/shop?timeout=5s", "db.example:3307", "app", "p@ss:w", "shop"},
		{"mysql://app:pw@db.example:3307/shop", "db.example:3307", "app", "pw", "shop"},
		{"mariadb://app:p%40ss@db.example/shop?timeout=5s", "db.example:3306", "app", "p@ss", "shop"},
		{"mysql://app@tcp(127.0.0.1:3306)/", "127.0.0.1:3306", "app", "", ""},
	} {
		cfg, err := migrate.ParseMySQLDSN(tc.in)
		if err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		if cfg.Addr != tc.addr || cfg.User != tc.user || cfg.Passwd != tc.pass || cfg.DBName != tc.db {
			t.Fatalf("%s: addr %q user %q pass %q db %q", tc.in, cfg.Addr, cfg.User, cfg.Passwd, cfg.DBName)
		}
	}
	if _, err := migrate.ParseMySQLDSN("postgres://x@y/z"); !errors.Is(err, migrate.ErrInvalid) {
		t.Fatalf("postgres URL as mysql: %v", err)
	}
}

func TestOpenSource_BadSpecsNameTheProblem(t *testing.T) {
	for _, tc := range []struct {
		spec migrate.SourceSpec
		says string
	}{
		{migrate.SourceSpec{From: "db.example/shop", Table: "t"}, "postgres://"},
		{migrate.SourceSpec{From: "postgres://u:hunter2@h/d", Table: "t"}, "--column"},
		{migrate.SourceSpec{From: "postgres://u:hunter2@h/d"}, "--pg-sequence"},
		{migrate.SourceSpec{From: "postgres://u:hunter2@h/d", Sequence: "s", Table: "t", Column: "c"}, "not both"},
		{migrate.SourceSpec{From: "mysql://u:hunter2@tcp(h:1)/d"}, "--table"},
		{migrate.SourceSpec{From: "mysql://u:hunter2@tcp(h:1)/d", Sequence: "s", Table: "t"}, "--pg-sequence"},
		{migrate.SourceSpec{From: "sqlite://u:hunter2@h/d", Table: "t"}, "sqlite"},
	} {
		_, err := migrate.OpenSource(tc.spec)
		if !errors.Is(err, migrate.ErrInvalid) || !strings.Contains(err.Error(), tc.says) {
			t.Fatalf("%+v: want ErrInvalid saying %q, got %v", tc.spec, tc.says, err)
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Fatalf("%+v: error shows the password: %v", tc.spec, err)
		}
	}
	if _, err := migrate.Number(-1).Highest(t.Context()); !errors.Is(err, migrate.ErrInvalid) {
		t.Fatalf("negative number: %v", err)
	}
}
