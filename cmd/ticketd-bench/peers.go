package main

// The peers: what a user would pick instead of ticketd, each used the way
// people use it for IDs. Every one of them reserves a range of `count` IDs
// per operation, so the same overlap check applies to all of them:
//
//	etcd      read the counter, then a transaction that writes counter+count
//	          if the key's ModRevision is still the one read (compare-and-
//	          swap); a lost race re-reads (from the transaction's Else) and
//	          tries again
//	redis     INCRBY key count            -> (n-count, n]
//	postgres  SELECT nextval('seq')       -> [v, v+count), sequence
//	          created with INCREMENT BY count
//	mysql     REPLACE INTO tickets (stub) VALUES ('a') with the session's
//	          auto_increment_increment = count; LAST_INSERT_ID() -> [v, v+count)

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/redis/go-redis/v9"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// peerOptions are the connection settings of the peers.
type peerOptions struct {
	PGUser, PGDatabase            string
	MySQLUser, MySQLPassword      string
	MySQLDatabase                 string
	MySQLSelectLastInsertID       bool
	MySQLEngine                   string
	EtcdDialTimeout, PeerDialWait time.Duration
}

func addPeerFlags(fs *flag.FlagSet) *peerOptions {
	o := &peerOptions{}
	fs.StringVar(&o.PGUser, "pg-user", "bench", "postgres: user (trust authentication)")
	fs.StringVar(&o.PGDatabase, "pg-db", "postgres", "postgres: database")
	fs.StringVar(&o.MySQLUser, "mysql-user", "bench", "mysql: user")
	fs.StringVar(&o.MySQLPassword, "mysql-password", "bench", "mysql: password")
	fs.StringVar(&o.MySQLDatabase, "mysql-db", "bench", "mysql: database")
	fs.BoolVar(&o.MySQLSelectLastInsertID, "mysql-select", false,
		"mysql: send SELECT LAST_INSERT_ID() as a second statement, as Flickr's post does, instead of reading the same value from the REPLACE's OK packet")
	fs.StringVar(&o.MySQLEngine, "mysql-engine", "InnoDB", "mysql: engine of the ticket table: InnoDB (fsync per commit) or MyISAM (Flickr's choice; no fsync)")
	fs.DurationVar(&o.EtcdDialTimeout, "etcd-dial-timeout", 2*time.Second, "etcd: dial timeout")
	return o
}

// sqlIdent turns a sequence name into a safe SQL identifier suffix.
func sqlIdent(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// retrySetup calls f until it succeeds, ctx ends or timeout passes.
func retrySetup(ctx context.Context, timeout time.Duration, what string, f func(context.Context) error) error {
	deadline := time.Now().Add(timeout)
	for {
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := f(actx)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %w", what, err)
		}
		sleepUntil(ctx, time.Now().Add(200*time.Millisecond))
	}
}

// withTimeout bounds one operation by the per-request timeout.
func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, d)
}

// ---- etcd -------------------------------------------------------------------

// maxCASAttempts bounds the compare-and-swap loop of one reservation.
const maxCASAttempts = 1000

type etcdBackend struct {
	cfg loadConfig
	cli *clientv3.Client
	key string
}

func newEtcdClient(endpoints []string, dialTimeout time.Duration) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: dialTimeout,
		Logger:      zap.NewNop(),
		// Fail fast on a dead endpoint instead of waiting for the
		// connection: the per-request timeout bounds everything else.
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: 2 * time.Second,
	})
}

func newEtcdBackend(cfg loadConfig) (*etcdBackend, error) {
	// One client for every worker, as an application would have: gRPC
	// multiplexes the workers' requests over its connections.
	cli, err := newEtcdClient(cfg.Targets, cfg.Peer.EtcdDialTimeout)
	if err != nil {
		return nil, err
	}
	return &etcdBackend{cfg: cfg, cli: cli, key: "ticketd-bench/" + cfg.Sequence}, nil
}

func (b *etcdBackend) setup(ctx context.Context, timeout time.Duration) error {
	// The counter starts absent (= 0); just check that the cluster serves
	// linearizable reads.
	return retrySetup(ctx, timeout, "etcd", func(ctx context.Context) error {
		_, err := b.cli.Get(ctx, b.key)
		return err
	})
}

func (b *etcdBackend) newReserver(context.Context, int) (reserver, error) {
	return &etcdReserver{kv: b.cli.KV, key: b.key, count: b.cfg.Count, timeout: b.cfg.Timeout}, nil
}

func (b *etcdBackend) note() string {
	return "etcd: linearizable Get + Txn(If ModRevision == read revision, Then Put counter+count, Else Get); a lost race retries from the Else"
}

func (b *etcdBackend) close() { b.cli.Close() }

type etcdReserver struct {
	kv      clientv3.KV
	key     string
	count   uint64
	timeout time.Duration
}

func (r *etcdReserver) reserve(ctx context.Context) (idRange, int, error) {
	ctx, cancel := withTimeout(ctx, r.timeout)
	defer cancel()
	get, err := r.kv.Get(ctx, r.key)
	if err != nil {
		return idRange{}, 0, etcdErr(err)
	}
	cur, rev, err := etcdValue(get.Kvs)
	if err != nil {
		return idRange{}, 0, err
	}
	for attempt := 0; attempt < maxCASAttempts; attempt++ {
		next := cur + r.count
		resp, err := r.kv.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(r.key), "=", rev)).
			Then(clientv3.OpPut(r.key, strconv.FormatUint(next, 10))).
			Else(clientv3.OpGet(r.key)).
			Commit()
		if err != nil {
			return idRange{}, attempt, etcdErr(err)
		}
		if resp.Succeeded {
			return idRange{First: cur + 1, Last: next}, attempt, nil
		}
		if len(resp.Responses) == 0 || resp.Responses[0].GetResponseRange() == nil {
			return idRange{}, attempt, &opError{kind: "decode", err: errors.New("etcd: txn Else without a range response")}
		}
		if cur, rev, err = etcdValue(resp.Responses[0].GetResponseRange().Kvs); err != nil {
			return idRange{}, attempt, err
		}
	}
	return idRange{}, maxCASAttempts, &opError{kind: "cas_exhausted", backoff: true}
}

func (r *etcdReserver) close() {}

// etcdValue reads the counter and its ModRevision (0, 0 when absent: the
// compare then means "the key does not exist yet").
func etcdValue(kvs []*mvccpb.KeyValue) (uint64, int64, error) {
	if len(kvs) == 0 {
		return 0, 0, nil
	}
	v, err := strconv.ParseUint(string(kvs[0].Value), 10, 64)
	if err != nil {
		return 0, 0, &opError{kind: "decode", err: err}
	}
	return v, kvs[0].ModRevision, nil
}

func etcdErr(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return &opError{kind: "timeout", backoff: true, err: err}
	}
	// gRPC statuses (Unavailable, "etcdserver: no leader", ...) all mean
	// the cluster cannot serve right now.
	return &opError{kind: "etcd", backoff: true, err: err}
}

// ---- redis ------------------------------------------------------------------

type redisBackend struct {
	cfg loadConfig
	rdb *redis.Client
	key string
}

// newRedisClient is the go-redis client of the redis and resp kinds: a pool
// of a connection per worker, kept open, and no retries.
func newRedisClient(cfg loadConfig, conns int) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr:            cfg.Targets[0],
		PoolSize:        max(conns, 1),
		MinIdleConns:    max(conns, 1),
		DialTimeout:     2 * time.Second,
		ReadTimeout:     cfg.Timeout,
		WriteTimeout:    cfg.Timeout,
		MaxRetries:      -1, // a retried INCRBY could count twice; count the error instead
		DisableIdentity: true,
	})
}

func newRedisBackend(cfg loadConfig, conns int) (*redisBackend, error) {
	return &redisBackend{cfg: cfg, rdb: newRedisClient(cfg, conns), key: "ticketd-bench:" + cfg.Sequence}, nil
}

func (b *redisBackend) setup(ctx context.Context, timeout time.Duration) error {
	return retrySetup(ctx, timeout, "redis", func(ctx context.Context) error {
		return b.rdb.Ping(ctx).Err()
	})
}

func (b *redisBackend) newReserver(context.Context, int) (reserver, error) {
	return &redisReserver{rdb: b.rdb, key: b.key, count: int64(b.cfg.Count), timeout: b.cfg.Timeout}, nil
}

func (b *redisBackend) note() string {
	return "redis: INCRBY; the server should run with appendonly yes, appendfsync always"
}

func (b *redisBackend) close() { b.rdb.Close() }

type redisReserver struct {
	rdb     *redis.Client
	key     string
	count   int64
	timeout time.Duration
}

func (r *redisReserver) reserve(ctx context.Context) (idRange, int, error) {
	n, err := r.rdb.IncrBy(ctx, r.key, r.count).Result()
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return idRange{}, 0, &opError{kind: "timeout", backoff: true, err: err}
		}
		return idRange{}, 0, &opError{kind: "redis", backoff: true, err: err}
	}
	return idRange{First: uint64(n - r.count + 1), Last: uint64(n)}, 0, nil
}

func (r *redisReserver) close() {}

// ---- postgres ---------------------------------------------------------------

type postgresBackend struct {
	cfg loadConfig
	seq string
}

func newPostgresBackend(cfg loadConfig) (*postgresBackend, error) {
	return &postgresBackend{cfg: cfg, seq: "bench_" + sqlIdent(cfg.Sequence)}, nil
}

func (b *postgresBackend) connString() string {
	host, port, _ := strings.Cut(b.cfg.Targets[0], ":")
	return fmt.Sprintf("host=%s port=%s user=%s dbname=%s sslmode=disable connect_timeout=5",
		host, port, b.cfg.Peer.PGUser, b.cfg.Peer.PGDatabase)
}

func (b *postgresBackend) setup(ctx context.Context, timeout time.Duration) error {
	return retrySetup(ctx, timeout, "postgres", func(ctx context.Context) error {
		conn, err := pgx.Connect(ctx, b.connString())
		if err != nil {
			return err
		}
		defer conn.Close(context.Background())
		_, err = conn.Exec(ctx, fmt.Sprintf("CREATE SEQUENCE IF NOT EXISTS %s INCREMENT BY %d", b.seq, b.cfg.Count))
		return err
	})
}

func (b *postgresBackend) newReserver(ctx context.Context, _ int) (reserver, error) {
	conn, err := pgx.Connect(ctx, b.connString())
	if err != nil {
		return nil, err
	}
	return &postgresReserver{conn: conn, sql: fmt.Sprintf("SELECT nextval('%s')", b.seq), count: b.cfg.Count, timeout: b.cfg.Timeout}, nil
}

func (b *postgresBackend) note() string {
	return "postgres: SELECT nextval() on a sequence with INCREMENT BY count, one connection per worker; nextval itself does not wait for a WAL flush (sequences log ahead and a transaction without an xid commits asynchronously)"
}

func (b *postgresBackend) close() {}

type postgresReserver struct {
	conn    *pgx.Conn
	sql     string
	count   uint64
	timeout time.Duration
}

func (r *postgresReserver) reserve(ctx context.Context) (idRange, int, error) {
	ctx, cancel := withTimeout(ctx, r.timeout)
	defer cancel()
	var v int64
	if err := r.conn.QueryRow(ctx, r.sql).Scan(&v); err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) {
			return idRange{}, 0, &opError{kind: "pg_" + pgErr.Code, err: err}
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return idRange{}, 0, &opError{kind: "timeout", backoff: true, err: err}
		}
		return idRange{}, 0, &opError{kind: "postgres", backoff: true, err: err}
	}
	return idRange{First: uint64(v), Last: uint64(v) + r.count - 1}, 0, nil
}

func (r *postgresReserver) close() { r.conn.Close(context.Background()) }

// ---- mysql / mariadb --------------------------------------------------------

// maxAutoIncrementIncrement is the largest auto_increment_increment MySQL
// and MariaDB accept.
const maxAutoIncrementIncrement = 65535

type mysqlBackend struct {
	cfg   loadConfig
	db    *sql.DB
	table string
}

func newMySQLBackend(cfg loadConfig, conns int) (*mysqlBackend, error) {
	if cfg.Count > maxAutoIncrementIncrement {
		return nil, fmt.Errorf("mysql: auto_increment_increment cannot be %d (at most %d): a ticket table cannot hand out ranges that large", cfg.Count, maxAutoIncrementIncrement)
	}
	mc := mysql.NewConfig()
	mc.User, mc.Passwd, mc.DBName = cfg.Peer.MySQLUser, cfg.Peer.MySQLPassword, cfg.Peer.MySQLDatabase
	mc.Net, mc.Addr = "tcp", cfg.Targets[0]
	mc.Timeout = 5 * time.Second
	mc.ReadTimeout, mc.WriteTimeout = cfg.Timeout, cfg.Timeout
	// Set on every connection: the step of AUTO_INCREMENT is the range size.
	mc.Params = map[string]string{"auto_increment_increment": strconv.FormatUint(cfg.Count, 10)}
	connector, err := mysql.NewConnector(mc)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(connector)
	db.SetMaxOpenConns(conns + 1)
	db.SetMaxIdleConns(conns + 1)
	return &mysqlBackend{cfg: cfg, db: db, table: "tickets_" + sqlIdent(cfg.Sequence)}, nil
}

func (b *mysqlBackend) setup(ctx context.Context, timeout time.Duration) error {
	// Flickr's ticket table; by default on InnoDB so that a commit is
	// fsynced (innodb_flush_log_at_trx_commit=1). Flickr used MyISAM.
	engine := b.engine()
	return retrySetup(ctx, timeout, "mysql", func(ctx context.Context) error {
		_, err := b.db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS "+b.table+` (
			id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
			stub CHAR(1) NOT NULL DEFAULT '',
			PRIMARY KEY (id),
			UNIQUE KEY stub (stub)
		) ENGINE=`+engine)
		return err
	})
}

func (b *mysqlBackend) engine() string {
	if strings.EqualFold(b.cfg.Peer.MySQLEngine, "myisam") {
		return "MyISAM"
	}
	return "InnoDB"
}

func (b *mysqlBackend) newReserver(ctx context.Context, _ int) (reserver, error) {
	conn, err := b.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	return &mysqlReserver{
		conn: conn, replace: "REPLACE INTO " + b.table + " (stub) VALUES ('a')",
		selectID: b.cfg.Peer.MySQLSelectLastInsertID, count: b.cfg.Count, timeout: b.cfg.Timeout,
	}, nil
}

func (b *mysqlBackend) note() string {
	how := "LAST_INSERT_ID() read from the REPLACE's OK packet (one round trip)"
	if b.cfg.Peer.MySQLSelectLastInsertID {
		how = "SELECT LAST_INSERT_ID() as a second statement"
	}
	return "mariadb: Flickr ticket table on " + b.engine() + ", REPLACE INTO with auto_increment_increment = count (at most 65535), " + how +
		"; a deadlock (1213, frequent under concurrency on InnoDB) is retried, as MySQL's manual tells applications to, and counted as a retry"
}

func (b *mysqlBackend) close() { b.db.Close() }

type mysqlReserver struct {
	conn     *sql.Conn
	replace  string
	selectID bool
	count    uint64
	timeout  time.Duration
}

// maxDeadlockRetries bounds the retries of one reservation after InnoDB
// picked it as a deadlock victim.
const maxDeadlockRetries = 100

func (r *mysqlReserver) reserve(ctx context.Context) (idRange, int, error) {
	ctx, cancel := withTimeout(ctx, r.timeout)
	defer cancel()
	var (
		res     sql.Result
		err     error
		retries int
	)
	for ; retries <= maxDeadlockRetries; retries++ {
		res, err = r.conn.ExecContext(ctx, r.replace)
		var me *mysql.MySQLError
		if err == nil || !errors.As(err, &me) || me.Number != 1213 {
			break
		}
	}
	if err != nil {
		return idRange{}, retries, mysqlErr(err)
	}
	var id int64
	if r.selectID {
		err = r.conn.QueryRowContext(ctx, "SELECT LAST_INSERT_ID()").Scan(&id)
	} else {
		id, err = res.LastInsertId()
	}
	if err != nil {
		return idRange{}, retries, mysqlErr(err)
	}
	return idRange{First: uint64(id), Last: uint64(id) + r.count - 1}, retries, nil
}

func (r *mysqlReserver) close() { r.conn.Close() }

func mysqlErr(err error) error {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		// 1213 deadlock, 1205 lock wait timeout: REPLACE on a one-row
		// table under concurrency can hit both.
		return &opError{kind: fmt.Sprintf("mysql_%d", me.Number), err: err}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &opError{kind: "timeout", backoff: true, err: err}
	}
	return &opError{kind: "mysql", backoff: true, err: err}
}
