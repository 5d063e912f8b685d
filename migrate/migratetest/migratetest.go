// Package migratetest starts private PostgreSQL and MariaDB servers for
// tests: Debian's binaries (scripts/migrate-deps.sh installs them), each
// server in a temp dir of its own on a free loopback port, stopped and
// removed in t.Cleanup.
//
// When the binaries are missing the test is skipped, naming the script;
// with TICKETD_REQUIRE_DBS set (CI sets it to 1) it fails instead.
package migratetest

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
)

// Required reports whether TICKETD_REQUIRE_DBS asks for the databases: a
// missing server is then a failure, not a skip.
func Required() bool {
	v := os.Getenv("TICKETD_REQUIRE_DBS")
	return v != "" && v != "0"
}

func missing(tb testing.TB, what string) {
	tb.Helper()
	if Required() {
		tb.Fatalf("%s: not found, and TICKETD_REQUIRE_DBS is set; install with scripts/migrate-deps.sh", what)
	}
	tb.Skipf("%s: not found; install with scripts/migrate-deps.sh (with TICKETD_REQUIRE_DBS=1 this is a failure)", what)
}

// Postgres is a private PostgreSQL server. Its superuser "postgres" logs
// in without a password (trust) over TCP on 127.0.0.1.
type Postgres struct {
	Port int
	// URL reaches the database "postgres" as the superuser.
	URL string
}

// URLFor is the URL of another database on the same server.
func (p *Postgres) URLFor(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", p.Port, db)
}

// Conn opens a connection to the database "postgres", closed in Cleanup.
func (p *Postgres) Conn(tb testing.TB) *pgx.Conn {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, p.URL)
	if err != nil {
		tb.Fatalf("postgres: %v", err)
	}
	tb.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// postgresBin finds the directory of initdb and postgres: the newest
// /usr/lib/postgresql/*/bin, else PATH.
func postgresBin() (string, bool) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return pgVersion(dirs[i]) > pgVersion(dirs[j]) })
	for _, d := range dirs {
		if isExec(filepath.Join(d, "initdb")) && isExec(filepath.Join(d, "postgres")) {
			return d, true
		}
	}
	i, err1 := exec.LookPath("initdb")
	p, err2 := exec.LookPath("postgres")
	if err1 == nil && err2 == nil && filepath.Dir(i) == filepath.Dir(p) {
		return filepath.Dir(i), true
	}
	return "", false
}

func pgVersion(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

func isExec(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// StartPostgres starts a PostgreSQL server. PostgreSQL refuses to run as
// root, so under root it runs as the system user "postgres" (Debian's
// package creates it), owning the temp dir.
func StartPostgres(tb testing.TB) *Postgres {
	tb.Helper()
	bin, ok := postgresBin()
	if !ok {
		missing(tb, "PostgreSQL (initdb, postgres under /usr/lib/postgresql/*/bin)")
	}
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			missing(tb, "the system user postgres (to run PostgreSQL as non-root)")
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	dir, err := os.MkdirTemp("", "ticketd-pg-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			tb.Fatal(err)
		}
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync")
	initdb.Dir = dir
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		tb.Fatalf("initdb: %v\n%s", err, out)
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port := freePort(tb)
		logf, err := os.Create(filepath.Join(dir, fmt.Sprintf("postgres-%d.log", attempt)))
		if err != nil {
			tb.Fatal(err)
		}
		cmd := exec.Command(filepath.Join(bin, "postgres"), "-D", data,
			"-h", "127.0.0.1", "-p", strconv.Itoa(port), "-k", dir,
			"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
			"-c", "shared_buffers=16MB", "-c", "max_connections=40")
		cmd.Dir = dir
		cmd.Stdout, cmd.Stderr = logf, logf
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGQUIT}
		if err := cmd.Start(); err != nil {
			logf.Close()
			tb.Fatalf("start postgres: %v", err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait(); logf.Close() }()
		p := &Postgres{Port: port}
		p.URL = p.URLFor("postgres")
		if err := waitUp(exited, func(ctx context.Context) error {
			c, err := pgx.Connect(ctx, p.URL)
			if err == nil {
				c.Close(ctx)
			}
			return err
		}); err != nil {
			stop(cmd, exited, syscall.SIGQUIT)
			log, _ := os.ReadFile(logf.Name())
			lastErr = fmt.Errorf("postgres on port %d: %v\n%s", port, err, log)
			continue
		}
		// SIGINT: PostgreSQL's fast shutdown.
		tb.Cleanup(func() { stop(cmd, exited, syscall.SIGINT) })
		return p
	}
	tb.Fatalf("postgres did not come up: %v", lastErr)
	return nil
}

// MariaDB is a private MariaDB server run with --skip-grant-tables: any
// user name logs in without a password, over TCP on 127.0.0.1.
type MariaDB struct {
	Port int
}

// URL is a migrate source URL (go-sql-driver DSN form) for database db.
func (m *MariaDB) URL(db string) string { return "mysql://" + m.DSN(db) }

// DSN is the go-sql-driver DSN for database db ("" for none).
func (m *MariaDB) DSN(db string) string {
	return fmt.Sprintf("root@tcp(127.0.0.1:%d)/%s", m.Port, db)
}

// DB opens a pool on database db, closed in Cleanup.
func (m *MariaDB) DB(tb testing.TB, db string) *sql.DB {
	tb.Helper()
	cfg, err := mysql.ParseDSN(m.DSN(db))
	if err != nil {
		tb.Fatal(err)
	}
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	d := sql.OpenDB(c)
	tb.Cleanup(func() { d.Close() })
	return d
}

func mariadbBins() (installDB, server string, ok bool) {
	look := func(names ...string) string {
		for _, n := range names {
			if p, err := exec.LookPath(n); err == nil {
				return p
			}
			for _, d := range []string{"/usr/sbin", "/usr/bin"} {
				if p := filepath.Join(d, n); isExec(p) {
					return p
				}
			}
		}
		return ""
	}
	installDB = look("mariadb-install-db", "mysql_install_db")
	server = look("mariadbd", "mysqld")
	return installDB, server, installDB != "" && server != ""
}

// StartMariaDB starts a MariaDB server (as root with --user=root when the
// test runs as root).
func StartMariaDB(tb testing.TB) *MariaDB {
	tb.Helper()
	installDB, server, ok := mariadbBins()
	if !ok {
		missing(tb, "MariaDB (mariadb-install-db, mariadbd)")
	}
	dir, err := os.MkdirTemp("", "ticketd-mariadb-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	data := filepath.Join(dir, "data")
	common := []string{"--no-defaults", "--datadir=" + data}
	if os.Geteuid() == 0 {
		common = append(common, "--user=root")
	}
	install := exec.Command(installDB, append(common, "--skip-test-db", "--auth-root-authentication-method=normal")...)
	install.Dir = dir
	if out, err := install.CombinedOutput(); err != nil {
		tb.Fatalf("%s: %v\n%s", installDB, err, out)
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port := freePort(tb)
		errLog := filepath.Join(dir, fmt.Sprintf("mariadbd-%d.err", attempt))
		args := append(append([]string{}, common...),
			"--port="+strconv.Itoa(port), "--bind-address=127.0.0.1",
			"--socket="+filepath.Join(dir, "mysqld.sock"), "--pid-file="+filepath.Join(dir, "mysqld.pid"),
			"--log-error="+errLog, "--tmpdir="+dir,
			"--skip-grant-tables", "--skip-name-resolve", "--skip-log-bin",
			"--innodb-buffer-pool-size=32M", "--innodb-log-file-size=16M",
			"--innodb-flush-log-at-trx-commit=0", "--max-connections=40")
		cmd := exec.Command(server, args...)
		cmd.Dir = dir
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			tb.Fatalf("start %s: %v", server, err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		m := &MariaDB{Port: port}
		if err := waitUp(exited, func(ctx context.Context) error {
			cfg, err := mysql.ParseDSN(m.DSN(""))
			if err != nil {
				return err
			}
			c, err := mysql.NewConnector(cfg)
			if err != nil {
				return err
			}
			db := sql.OpenDB(c)
			defer db.Close()
			return db.PingContext(ctx)
		}); err != nil {
			stop(cmd, exited, syscall.SIGKILL)
			log, _ := os.ReadFile(errLog)
			lastErr = fmt.Errorf("mariadbd on port %d: %v\n%s", port, err, log)
			continue
		}
		tb.Cleanup(func() { stop(cmd, exited, syscall.SIGTERM) })
		return m
	}
	tb.Fatalf("mariadbd did not come up: %v", lastErr)
	return nil
}

// waitUp polls ping until it succeeds, the server exits, or 60s pass.
func waitUp(exited <-chan error, ping func(context.Context) error) error {
	deadline := time.Now().Add(60 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			return fmt.Errorf("exited during start: %v (last ping: %v)", err, last)
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		last = ping(ctx)
		cancel()
		if last == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("not up after 60s: %v", last)
}

// stop sends sig, waits up to 20s for the exit, then kills.
func stop(cmd *exec.Cmd, exited <-chan error, sig syscall.Signal) {
	_ = cmd.Process.Signal(sig)
	select {
	case <-exited:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
}

// freePort is a loopback port free a moment ago. Another process may take
// it before the server binds it; the callers retry on a new one.
func freePort(tb testing.TB) int {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// ClosedPort is a loopback port nothing listens on (a moment ago): the
// address of a database that is down.
func ClosedPort(tb testing.TB) int { return freePort(tb) }
