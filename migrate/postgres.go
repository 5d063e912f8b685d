package migrate

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
)

// PostgresSequence reads a PostgreSQL sequence: the highest value it has
// handed out is last_value when is_called is true, and below last_value
// when it is false (a fresh sequence, or one set with setval(s, n, false),
// hands out last_value next). Values cached by sessions (CACHE > 1) are
// already counted in last_value. Only ascending sequences are accepted.
type PostgresSequence struct {
	url, seq string
	where    string
}

// NewPostgresSequence returns a source reading sequence seq (as
// to_regclass reads it: optionally schema-qualified, unquoted names fold
// to lower case) in the database at url (postgres://user:pass@host:port/db,
// or any connection string pgx accepts; PGPASSWORD and ~/.pgpass apply).
func NewPostgresSequence(url, seq string) (*PostgresSequence, error) {
	where, err := pgWhere(url)
	if err != nil {
		return nil, err
	}
	if seq == "" {
		return nil, fmt.Errorf("%w: empty sequence name", ErrInvalid)
	}
	return &PostgresSequence{url: url, seq: seq, where: where}, nil
}

func (s *PostgresSequence) String() string {
	return fmt.Sprintf("postgres sequence %s at %s", s.seq, s.where)
}

// Highest reads the sequence's last value.
func (s *PostgresSequence) Highest(ctx context.Context) (int64, error) {
	conn, err := pgConnect(ctx, s.url, s.where)
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var (
		name      *string
		kind      string
		increment *int64
	)
	err = conn.QueryRow(ctx, `
		SELECT c.oid::regclass::text, c.relkind::text, s.seqincrement
		FROM pg_class c LEFT JOIN pg_sequence s ON s.seqrelid = c.oid
		WHERE c.oid = to_regclass($1)`, s.seq).Scan(&name, &kind, &increment)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("%w: no sequence %q at %s", ErrSourceNotFound, s.seq, s.where)
	}
	if err != nil {
		return 0, fmt.Errorf("postgres %s: looking up sequence %q: %w", s.where, s.seq, err)
	}
	if kind != "S" || increment == nil {
		return 0, fmt.Errorf("%w: %q at %s is not a sequence (relkind %s)", ErrSourceNotFound, s.seq, s.where, kind)
	}
	if *increment < 0 {
		return 0, fmt.Errorf("%w: sequence %s at %s descends (increment %d); only ascending generators can be moved to ticketd", ErrNotInteger, *name, s.where, *increment)
	}
	var (
		last   int64
		called bool
	)
	// The name comes back from regclass's output, quoted where needed.
	if err := conn.QueryRow(ctx, "SELECT last_value, is_called FROM "+*name).Scan(&last, &called); err != nil {
		return 0, fmt.Errorf("postgres %s: reading sequence %s: %w", s.where, *name, err)
	}
	if !called {
		// last_value is the value nextval hands out next: nothing at or
		// above it has been handed out.
		last--
	}
	return max(last, 0), nil
}

// PostgresMax reads max(column) of a PostgreSQL table; the column must be
// smallint, integer or bigint.
type PostgresMax struct {
	url, table, column string
	where              string
}

// NewPostgresMax returns a source reading max(column) of table (as
// to_regclass reads it) in the database at url. The column name is taken
// literally (case-sensitive, no quoting needed).
func NewPostgresMax(url, table, column string) (*PostgresMax, error) {
	where, err := pgWhere(url)
	if err != nil {
		return nil, err
	}
	if table == "" || column == "" {
		return nil, fmt.Errorf("%w: empty table or column name", ErrInvalid)
	}
	return &PostgresMax{url: url, table: table, column: column, where: where}, nil
}

func (s *PostgresMax) String() string {
	return fmt.Sprintf("postgres max(%s) of table %s at %s", s.column, s.table, s.where)
}

// Highest reads max(column); an empty table gives 0.
func (s *PostgresMax) Highest(ctx context.Context) (int64, error) {
	conn, err := pgConnect(ctx, s.url, s.where)
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var name *string
	if err := conn.QueryRow(ctx, `SELECT to_regclass($1)::text`, s.table).Scan(&name); err != nil {
		return 0, fmt.Errorf("postgres %s: looking up table %q: %w", s.where, s.table, err)
	}
	if name == nil {
		return 0, fmt.Errorf("%w: no table %q at %s", ErrSourceNotFound, s.table, s.where)
	}
	var typ string
	err = conn.QueryRow(ctx, `
		SELECT format_type(a.atttypid, a.atttypmod) FROM pg_attribute a
		WHERE a.attrelid = $1::regclass AND a.attname = $2 AND a.attnum > 0 AND NOT a.attisdropped`,
		*name, s.column).Scan(&typ)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("%w: table %s at %s has no column %q", ErrSourceNotFound, *name, s.where, s.column)
	}
	if err != nil {
		return 0, fmt.Errorf("postgres %s: looking up column %s.%s: %w", s.where, *name, s.column, err)
	}
	switch typ {
	case "smallint", "integer", "bigint":
	default:
		return 0, fmt.Errorf("%w: column %s.%s at %s is %s, not smallint, integer or bigint", ErrNotInteger, *name, s.column, s.where, typ)
	}
	var highest *int64
	q := "SELECT max(" + pgx.Identifier{s.column}.Sanitize() + ")::bigint FROM " + *name
	if err := conn.QueryRow(ctx, q).Scan(&highest); err != nil {
		return 0, fmt.Errorf("postgres %s: reading max(%s) of %s: %w", s.where, s.column, *name, err)
	}
	if highest == nil || *highest < 0 {
		return 0, nil
	}
	return *highest, nil
}

// pgWhere parses a connection string and describes it without secrets.
func pgWhere(url string) (string, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return "", fmt.Errorf("%w: --from %s: %v", ErrInvalid, redact(url), err)
	}
	return fmt.Sprintf("%s@%s/%s", cfg.User, hostPort(cfg.Host, cfg.Port), cfg.Database), nil
}

func hostPort(host string, port uint16) string {
	if len(host) > 0 && host[0] == '/' {
		return host // a Unix socket directory
	}
	return host + ":" + strconv.Itoa(int(port))
}

func pgConnect(ctx context.Context, url, where string) (*pgx.Conn, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("%w: postgres %s: %v", ErrSourceUnreachable, where, err)
	}
	return conn, nil
}
