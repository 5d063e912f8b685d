package migrate

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Errors a migration can fail with. Test for them with errors.Is; the error
// returned wraps one of them and names what is wrong.
var (
	// ErrSourceUnreachable: the source database could not be connected to
	// (wrong address, server down, bad credentials).
	ErrSourceUnreachable = errors.New("migrate: source database unreachable")

	// ErrSourceNotFound: the table, column or sequence named does not
	// exist in the source database.
	ErrSourceNotFound = errors.New("migrate: not found in the source database")

	// ErrNotInteger: the column named is not of an integer type, or the
	// source object cannot hold IDs (a descending sequence, a table with no
	// AUTO_INCREMENT column, a value past int64).
	ErrNotInteger = errors.New("migrate: source does not hold integer IDs")

	// ErrInvalid: the request itself is malformed (negative margin, target
	// overflowing int64, conflicting or missing source settings).
	ErrInvalid = errors.New("migrate: invalid request")

	// ErrPastMax: the target high-water mark leaves the ticketd sequence no
	// ID to hand out: it is at or above the sequence's max (or --max for a
	// sequence to be created).
	ErrPastMax = errors.New("migrate: target past the sequence's max")
)

// Source is a legacy ID generator: it reports the highest ID it has handed
// out so far.
type Source interface {
	// Highest is the highest ID the legacy generator has handed out (0 when
	// it has handed out none). A generator that keeps running hands out
	// more; the margin of a Plan covers those.
	Highest(ctx context.Context) (int64, error)
	// String describes the source for humans, without credentials.
	String() string
}

// Number is a source whose highest ID is known: a plain number.
type Number int64

// Highest returns the number itself.
func (n Number) Highest(context.Context) (int64, error) {
	if n < 0 {
		return 0, fmt.Errorf("%w: --from-number must not be negative, got %d", ErrInvalid, int64(n))
	}
	return int64(n), nil
}

func (n Number) String() string { return fmt.Sprintf("the number %d", int64(n)) }

// SourceSpec names a legacy source the way the CLI flags do.
type SourceSpec struct {
	// From is the database: postgres://… (or postgresql://…), or
	// mysql://… (or mariadb://…), see ParseMySQLDSN for the MySQL forms.
	From string
	// Sequence is a PostgreSQL sequence (optionally schema-qualified):
	// its last handed-out value is read.
	Sequence string
	// Table (optionally schema- or database-qualified) with Column: the
	// highest value in that column. A MySQL/MariaDB Table without Column:
	// the table's AUTO_INCREMENT counter.
	Table, Column string
}

// OpenSource returns the Source a spec names. It connects to nothing yet:
// every Highest call opens its own connection and closes it.
func OpenSource(spec SourceSpec) (Source, error) {
	from := strings.TrimSpace(spec.From)
	scheme, _, ok := strings.Cut(from, "://")
	if !ok {
		return nil, fmt.Errorf("%w: --from %q: want postgres://… or mysql://…", ErrInvalid, redact(from))
	}
	switch strings.ToLower(scheme) {
	case "postgres", "postgresql":
		switch {
		case spec.Sequence != "" && (spec.Table != "" || spec.Column != ""):
			return nil, fmt.Errorf("%w: give either --pg-sequence or --table/--column, not both", ErrInvalid)
		case spec.Sequence != "":
			return NewPostgresSequence(from, spec.Sequence)
		case spec.Table != "" && spec.Column != "":
			return NewPostgresMax(from, spec.Table, spec.Column)
		case spec.Table != "":
			return nil, fmt.Errorf("%w: PostgreSQL has no table counter: give --column with --table (max of the column), or --pg-sequence (the sequence behind it)", ErrInvalid)
		}
		return nil, fmt.Errorf("%w: with a postgres source, give --pg-sequence SEQ or --table T --column C", ErrInvalid)
	case "mysql", "mariadb":
		if spec.Sequence != "" {
			return nil, fmt.Errorf("%w: --pg-sequence is for PostgreSQL sources; for MySQL/MariaDB give --table (AUTO_INCREMENT) or --table and --column (max)", ErrInvalid)
		}
		if spec.Table == "" {
			return nil, fmt.Errorf("%w: with a mysql source, give --table T (its AUTO_INCREMENT) or --table T --column C (max of the column)", ErrInvalid)
		}
		if spec.Column != "" {
			return NewMySQLMax(from, spec.Table, spec.Column)
		}
		return NewMySQLAutoIncrement(from, spec.Table)
	}
	return nil, fmt.Errorf("%w: --from scheme %q: want postgres:// or mysql://", ErrInvalid, scheme)
}

// redact hides a password in a URL-like string for error messages.
func redact(s string) string {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		rest, scheme = s, ""
	}
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return s
	}
	cred := rest[:at]
	if user, _, has := strings.Cut(cred, ":"); has {
		cred = user + ":xxxxx"
	}
	if scheme != "" {
		return scheme + "://" + cred + rest[at:]
	}
	return cred + rest[at:]
}

// splitQualified splits "schema.name" (or "db.name") at its last unquoted
// dot; names are taken literally (no quoting syntax).
func splitQualified(s string) (schema, name string) {
	if i := strings.LastIndex(s, "."); i >= 0 {
		return s[:i], s[i+1:]
	}
	return "", s
}
