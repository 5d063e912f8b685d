package migrate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// ParseMySQLDSN reads a MySQL/MariaDB source in one of two forms:
//
//	mysql://user:pass@tcp(host:port)/db?param=value   the scheme + a go-sql-driver DSN
//	mysql://user:pass@host:port/db?param=value        a URL (port 3306 by default)
//
// "mariadb://" may stand for "mysql://". Query parameters are
// go-sql-driver's (tls=true, timeout=5s, …). Percent-escapes in the URL form's
// user and password are decoded.
func ParseMySQLDSN(from string) (*mysql.Config, error) {
	scheme, rest, ok := strings.Cut(from, "://")
	if !ok || (!strings.EqualFold(scheme, "mysql") && !strings.EqualFold(scheme, "mariadb")) {
		return nil, fmt.Errorf("%w: %q is not a mysql:// source", ErrInvalid, redact(from))
	}
	dsn := rest
	if !strings.Contains(rest, "@tcp(") && !strings.Contains(rest, "@unix(") &&
		!strings.HasPrefix(rest, "tcp(") && !strings.HasPrefix(rest, "unix(") {
		u, err := url.Parse("mysql://" + rest)
		if err != nil {
			return nil, fmt.Errorf("%w: --from %s: %v", ErrInvalid, redact(from), err)
		}
		host := u.Host
		if host == "" {
			host = "127.0.0.1"
		}
		if u.Port() == "" {
			host = net.JoinHostPort(strings.Trim(host, "[]"), "3306")
		}
		cred := ""
		if u.User != nil {
			cred = u.User.Username()
			if p, ok := u.User.Password(); ok {
				cred += ":" + p
			}
			cred += "@"
		}
		dsn = cred + "tcp(" + host + ")/" + strings.TrimPrefix(u.Path, "/")
		if u.RawQuery != "" {
			dsn += "?" + u.RawQuery
		}
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("%w: --from %s: %v", ErrInvalid, redact(from), err)
	}
	return cfg, nil
}

// MySQLAutoIncrement reads a MySQL/MariaDB table's AUTO_INCREMENT counter.
// The counter is the NEXT value the table would hand out, so the highest
// handed out is one below it. It also reads max() of the AUTO_INCREMENT
// column and takes the larger of the two, so a stale counter can never give
// a value below a row that exists.
//
// MySQL 8 answers information_schema.TABLES (and SHOW TABLE STATUS) from
// cached statistics, up to information_schema_stats_expiry seconds old (a
// day by default); the session sets it to 0 first, so the counter is read
// from the storage engine. MariaDB has no such cache (nor the variable:
// its "unknown system variable" error is ignored).
type MySQLAutoIncrement struct {
	cfg   *mysql.Config
	table string
	where string
}

// NewMySQLAutoIncrement returns a source reading table's AUTO_INCREMENT
// ("db.table", or a table of the DSN's database).
func NewMySQLAutoIncrement(from, table string) (*MySQLAutoIncrement, error) {
	cfg, err := ParseMySQLDSN(from)
	if err != nil {
		return nil, err
	}
	if table == "" {
		return nil, fmt.Errorf("%w: empty table name", ErrInvalid)
	}
	return &MySQLAutoIncrement{cfg: cfg, table: table, where: mysqlWhere(cfg)}, nil
}

func (s *MySQLAutoIncrement) String() string {
	return fmt.Sprintf("mysql AUTO_INCREMENT of table %s at %s", s.table, s.where)
}

// Highest returns AUTO_INCREMENT - 1 (or max of the column when higher).
func (s *MySQLAutoIncrement) Highest(ctx context.Context) (int64, error) {
	db, conn, err := mysqlConnect(ctx, s.cfg, s.where)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	defer conn.Close()
	// MySQL 8: read the counter from the engine, not a cached statistic.
	if _, err := conn.ExecContext(ctx, "SET SESSION information_schema_stats_expiry = 0"); err != nil {
		var me *mysql.MySQLError
		if !errors.As(err, &me) || me.Number != 1193 { // 1193: unknown system variable (MariaDB, MySQL 5.7)
			return 0, fmt.Errorf("mysql %s: %w", s.where, err)
		}
	}
	schema, name, err := mysqlTable(ctx, conn, s.table, s.where)
	if err != nil {
		return 0, err
	}
	var next sql.NullString
	if err := conn.QueryRowContext(ctx,
		`SELECT AUTO_INCREMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?`,
		schema, name).Scan(&next); err != nil {
		return 0, fmt.Errorf("mysql %s: reading AUTO_INCREMENT of %s.%s: %w", s.where, schema, name, err)
	}
	var col sql.NullString
	err = conn.QueryRowContext(ctx,
		`SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND EXTRA LIKE '%auto_increment%'`,
		schema, name).Scan(&col)
	if errors.Is(err, sql.ErrNoRows) || !next.Valid {
		return 0, fmt.Errorf("%w: table %s.%s at %s has no AUTO_INCREMENT column; give --column to read max() of one", ErrNotInteger, schema, name, s.where)
	}
	if err != nil {
		return 0, fmt.Errorf("mysql %s: looking up the AUTO_INCREMENT column of %s.%s: %w", s.where, schema, name, err)
	}
	n, err := strconv.ParseUint(next.String, 10, 64)
	if err != nil || n-1 > uint64(1<<63-1) {
		return 0, fmt.Errorf("%w: AUTO_INCREMENT of %s.%s at %s is %s, past int64", ErrNotInteger, schema, name, s.where, next.String)
	}
	highest := max(int64(n)-1, 0)
	m, err := mysqlMax(ctx, conn, schema, name, col.String, s.where)
	if err != nil {
		return 0, err
	}
	return max(highest, m), nil
}

// MySQLMax reads max(column) of a MySQL/MariaDB table; the column must be
// of an integer type.
type MySQLMax struct {
	cfg           *mysql.Config
	table, column string
	where         string
}

// NewMySQLMax returns a source reading max(column) of table.
func NewMySQLMax(from, table, column string) (*MySQLMax, error) {
	cfg, err := ParseMySQLDSN(from)
	if err != nil {
		return nil, err
	}
	if table == "" || column == "" {
		return nil, fmt.Errorf("%w: empty table or column name", ErrInvalid)
	}
	return &MySQLMax{cfg: cfg, table: table, column: column, where: mysqlWhere(cfg)}, nil
}

func (s *MySQLMax) String() string {
	return fmt.Sprintf("mysql max(%s) of table %s at %s", s.column, s.table, s.where)
}

// Highest reads max(column); an empty table gives 0.
func (s *MySQLMax) Highest(ctx context.Context) (int64, error) {
	db, conn, err := mysqlConnect(ctx, s.cfg, s.where)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	defer conn.Close()
	schema, name, err := mysqlTable(ctx, conn, s.table, s.where)
	if err != nil {
		return 0, err
	}
	return mysqlMax(ctx, conn, schema, name, s.column, s.where)
}

func mysqlWhere(cfg *mysql.Config) string {
	return fmt.Sprintf("%s@%s/%s", cfg.User, cfg.Addr, cfg.DBName)
}

func mysqlConnect(ctx context.Context, cfg *mysql.Config, where string) (*sql.DB, *sql.Conn, error) {
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	db := sql.OpenDB(connector)
	conn, err := db.Conn(ctx)
	if err == nil {
		err = conn.PingContext(ctx)
		if err != nil {
			conn.Close()
		}
	}
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("%w: mysql %s: %v", ErrSourceUnreachable, where, err)
	}
	return db, conn, nil
}

// mysqlTable resolves "db.table" or "table" (in the connection's database)
// and checks that it exists.
func mysqlTable(ctx context.Context, conn *sql.Conn, table, where string) (schema, name string, err error) {
	schema, name = splitQualified(table)
	if schema == "" {
		var cur sql.NullString
		if err := conn.QueryRowContext(ctx, "SELECT DATABASE()").Scan(&cur); err != nil {
			return "", "", fmt.Errorf("mysql %s: %w", where, err)
		}
		if !cur.Valid {
			return "", "", fmt.Errorf("%w: table %q names no database, and --from names none either (…/DB or --table DB.TABLE)", ErrInvalid, table)
		}
		schema = cur.String
	}
	var n int
	if err := conn.QueryRowContext(ctx,
		`SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?`,
		schema, name).Scan(&n); err != nil {
		return "", "", fmt.Errorf("mysql %s: looking up table %s.%s: %w", where, schema, name, err)
	}
	if n == 0 {
		return "", "", fmt.Errorf("%w: no table %s.%s at %s", ErrSourceNotFound, schema, name, where)
	}
	return schema, name, nil
}

var mysqlIntTypes = map[string]bool{"tinyint": true, "smallint": true, "mediumint": true, "int": true, "integer": true, "bigint": true}

func mysqlMax(ctx context.Context, conn *sql.Conn, schema, table, column, where string) (int64, error) {
	var typ string
	err := conn.QueryRowContext(ctx,
		`SELECT DATA_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND COLUMN_NAME = ?`,
		schema, table, column).Scan(&typ)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("%w: table %s.%s at %s has no column %q", ErrSourceNotFound, schema, table, where, column)
	}
	if err != nil {
		return 0, fmt.Errorf("mysql %s: looking up column %s.%s.%s: %w", where, schema, table, column, err)
	}
	if !mysqlIntTypes[strings.ToLower(typ)] {
		return 0, fmt.Errorf("%w: column %s.%s.%s at %s is %s, not an integer type", ErrNotInteger, schema, table, column, where, typ)
	}
	var m sql.NullString
	q := "SELECT CAST(MAX(" + mysqlIdent(column) + ") AS CHAR) FROM " + mysqlIdent(schema) + "." + mysqlIdent(table)
	if err := conn.QueryRowContext(ctx, q).Scan(&m); err != nil {
		return 0, fmt.Errorf("mysql %s: reading max(%s) of %s.%s: %w", where, column, schema, table, err)
	}
	if !m.Valid {
		return 0, nil
	}
	v, err := strconv.ParseInt(m.String, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: max(%s) of %s.%s at %s is %s, past int64", ErrNotInteger, column, schema, table, where, m.String)
	}
	return max(v, 0), nil
}

func mysqlIdent(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }
