// Command ticketd runs a ticketd node and talks to a running cluster.
//
//	ticketd serve   --id n1 --data-dir d1 --http-addr ... --raft-addr ... --initial-cluster n1=...,n2=...,n3=...
//	ticketd create  SEQ [--start S] [--max M]
//	ticketd reserve SEQ N
//	ticketd sequences [SEQ] [--rate-window 1s]
//	ticketd ids     NS [-n N] [-o json]
//	ticketd status
//	ticketd join    --id n4 --raft-addr ... --http-addr ...
//	ticketd remove  ID
//	ticketd leader transfer --to ID
//	ticketd members reconcile --replicas N --id-prefix P
//	ticketd backup  --out FILE | --out-dir DIR [--keep N]
//	ticketd restore --in FILE --advance N
//	ticketd tls ca create | tls cert create --node ID
//	ticketd completion bash|zsh
//	ticketd version [-o json]
//
// Every flag can also be set as TICKETD_<FLAG> in the environment (for
// example TICKETD_DATA_DIR); a flag given on the command line wins.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/client"
	"github.com/ticketd/ticketd/cluster"
	"github.com/ticketd/ticketd/internal/buildinfo"
	"github.com/ticketd/ticketd/metrics"
	"github.com/ticketd/ticketd/server"
)

const usage = `ticketd: a Raft-replicated ticket server

usage:
  ticketd serve     run a node (ticketd serve -h for its flags)
  ticketd create    SEQ [--start S] [--max M]   create a sequence
  ticketd reserve   SEQ N                        reserve N consecutive IDs
  ticketd sequences [SEQ]                        show one or every sequence
  ticketd raise     SEQ --at-least X             lift a sequence's high-water mark to at least X (never lowers)
  ticketd migrate   --sequence SEQ --from SOURCE  create or raise a sequence above a legacy generator's highest ID
  ticketd plan      --rate R --generators G --years Y   propose Snowflake bit layouts that fit
  ticketd status                                 show the cluster as a node sees it, and capacity left
  ticketd join      --id ID --raft-addr A --http-addr H   add a node
  ticketd remove    ID                           remove a node
  ticketd leader transfer --to ID                hand leadership to the voter ID and wait until it leads
  ticketd members reconcile --replicas N --id-prefix P
                                                 remove the voters P<ordinal> with ordinal >= N, one at a time (Helm scale-down hook)
  ticketd namespaces [NS] [--create [--preset instagram] [--horizon-years N] | --leases]
                                                 Snowflake namespaces and their worker-id leases
  ticketd ids       NS [-n N] [-o json]          N Snowflake IDs of a namespace, one a line, made by any node
  ticketd inspect   (--namespace NS | --sequence SEQ) ID   decode a Snowflake ID / locate a range ID
  ticketd audit     [--list]                     run the uniqueness probe on the allocation audit
  ticketd backup    --out FILE                   write a consistent backup of every sequence
  ticketd backup    --out-dir DIR [--keep N]     ... as a new numbered, timestamped file in DIR, keeping the newest N
  ticketd restore   --in FILE --advance N        seed a new, empty cluster from a backup
  ticketd promote   --data-dir DIR [--advance N] make a stopped standby a one-node cluster (disaster recovery)
  ticketd tls ca create   [--dir D]              make a cluster CA (certificate + key)
  ticketd tls cert create [--dir D] --node ID [--dns N] [--ip A] | --client NAME
                                                 make a node or client certificate signed by it
  ticketd version   [-o json]                    print the release and the feature level this binary knows

Client commands take --addr URL[,URL...] (env TICKETD_ADDR, default http://127.0.0.1:8080),
--token-file FILE (default: env TICKETD_TOKEN) and --ca/--cert/--key for HTTPS.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "serve":
		err = serve(args[1:], stderr)
	case "create":
		err = createCmd(args[1:], stdout, stderr)
	case "reserve":
		err = reserveCmd(args[1:], stdout, stderr)
	case "sequences":
		err = sequencesCmd(args[1:], stdout, stderr)
	case "status":
		err = statusCmd(args[1:], stdout, stderr)
	case "join":
		err = joinCmd(args[1:], stdout, stderr)
	case "remove":
		err = removeCmd(args[1:], stdout, stderr)
	case "leader":
		err = leaderCmd(args[1:], stdout, stderr)
	case "members":
		err = membersCmd(args[1:], stdout, stderr)
	case "backup":
		err = backupCmd(args[1:], stdout, stderr)
	case "ids":
		err = idsCmd(args[1:], stdout, stderr)
	case "inspect":
		err = inspectCmd(args[1:], stdout, stderr)
	case "audit":
		err = auditCmd(args[1:], stdout, stderr)
	case "namespaces":
		err = namespacesCmd(args[1:], stdout, stderr)
	case "restore":
		err = restoreCmd(args[1:], stdout, stderr)
	case "promote":
		err = promoteCmd(args[1:], stdout, stderr)
	case "raise":
		err = raiseCmd(args[1:], stdout, stderr)
	case "migrate":
		err = migrateCmd(args[1:], stdout, stderr)
	case "plan":
		err = planCmd(args[1:], stdout, stderr)
	case "tls":
		err = tlsCmd(args[1:], stdout, stderr)
	case "completion":
		err = completionCmd(args[1:], stdout, stderr)
	case "version", "--version", "-v":
		err = versionCmd(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "ticketd: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		msg, hint := explain(err, args[0])
		fmt.Fprintln(stderr, "ticketd:", msg)
		if hint != "" {
			fmt.Fprintln(stderr, "hint:", hint)
		}
		var usageErr usageError
		if errors.As(err, &usageErr) {
			return 2
		}
		return 1
	}
	return 0
}

type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// parse parses flags, then fills every flag not given on the command line
// from TICKETD_<NAME> in the environment.
func parse(fs *flag.FlagSet, args []string) error {
	if err := parseFlagsOnly(fs, args); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] {
			return
		}
		env := "TICKETD_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := os.LookupEnv(env); ok {
			if err := fs.Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: %v", env, v, err))
			}
		}
	})
	if len(errs) > 0 {
		return usageError{errors.Join(errs...).Error()}
	}
	return nil
}

func newLogger(w io.Writer, level, format string) (*slog.Logger, slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, l, usageError{fmt.Sprintf("--log-level %q: want debug, info, warn or error", level)}
	}
	opts := &slog.HandlerOptions{Level: l}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), l, nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), l, nil
	}
	return nil, l, usageError{fmt.Sprintf("--log-format %q: want text or json", format)}
}

func serve(args []string, stderr io.Writer) error {
	def := server.DefaultConfig()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	id := fs.String("id", "", "this node's ID; must stay the same across restarts (required)")
	dataDir := fs.String("data-dir", "", "directory for the Raft log, stable store and snapshots (required)")
	httpAddr := fs.String("http-addr", "127.0.0.1:8080", "address the HTTP API listens on")
	httpAdv := fs.String("http-advertise", "", "host:port other nodes and clients reach the API at (default: --http-addr)")
	respAddr := fs.String("resp-addr", "", "address the Redis-protocol front listens on (off unless set): INCR/INCRBY with any Redis client, same tokens and TLS as the API")
	raftAddr := fs.String("raft-addr", "127.0.0.1:8090", "address the Raft port listens on")
	raftAdv := fs.String("raft-advertise", "", "host:port other nodes reach the Raft port at (default: --raft-addr)")
	initial := fs.String("initial-cluster", "", "bootstrap a new cluster of these voters: id=raftaddr,id=raftaddr,... (identical on every node; a node it does not name joins through --join, so every node can take the same list)")
	bootstrap := fs.Bool("bootstrap", false, "bootstrap a new single-node cluster")
	join := fs.String("join", "", "API URL(s) of members to join through, comma-separated; at every start the node asks the cluster to have it as a member (docs/kubernetes-membership.md)")
	standby := fs.Bool("standby", false, "join as the cluster's disaster-recovery standby: a non-voting member, typically in another region, that issues no IDs until promoted (ticketd promote); needs --join")
	standbyBound := fs.Int64("standby-bound", 0, "with --standby: IDs per sequence the leader may serve past what this standby has stored (default 10000000, also the least)")
	standbyTimeout := fs.Duration("standby-timeout", 0, "with --standby: how long this standby may make no progress before the leader records it out of sync and goes on without it (default 10s: the SDK caches about 10 s of IDs, so its callers ride through the wait)")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	logFormat := fs.String("log-format", "text", "text or json")
	raftLogLevel := fs.String("raft-log-level", "warn", "level of hashicorp/raft's own log lines")
	heartbeat := fs.Duration("heartbeat-timeout", def.Cluster.HeartbeatTimeout, "raft heartbeat timeout")
	election := fs.Duration("election-timeout", def.Cluster.ElectionTimeout, "raft election timeout")
	lease := fs.Duration("leader-lease-timeout", def.Cluster.LeaderLeaseTimeout, "raft leader lease timeout (a leader that hears from no quorum for this long steps down)")
	snapThreshold := fs.Uint64("snapshot-threshold", def.Cluster.SnapshotThreshold, "log entries since the last snapshot that trigger a new one")
	snapInterval := fs.Duration("snapshot-interval", def.Cluster.SnapshotInterval, "how often the snapshot threshold is checked")
	trailing := fs.Uint64("trailing-logs", def.Cluster.TrailingLogs, "log entries kept after a snapshot")
	leaseReads := fs.Bool("lease-reads", false, "serve ranges from a leader lease instead of a quorum round per batch: voters promise not to vote for --lease-duration after answering the leader; assumes node clocks' rates differ by at most --lease-max-drift (README, Guarantees)")
	leaseDuration := fs.Duration("lease-duration", 0, "with --lease-reads: how long a voter promises not to vote after answering the leader's lease probe, on its own monotonic clock; a leader crash costs up to this much more unavailability (default: --election-timeout; at most 10s)")
	leaseDrift := fs.Float64("lease-max-drift", def.Cluster.LeaseMaxDrift, "with --lease-reads: the bound on clock-rate differences between nodes; the leader's lease ends at duration × (1 − drift)")
	maxInFlight := fs.Int("raft-max-rpcs-in-flight", def.Cluster.MaxRPCsInFlight, "AppendEntries RPCs in flight per follower: 1 turns pipelined replication off, 2 or more turns it on")
	sfNamespaces := fs.String("snowflake-namespaces", "", "Snowflake namespaces whose worker-id lease this node takes at start, comma-separated (any other is taken on its first POST /v1/namespaces/{name}/ids)")
	maxReadyLag := fs.Uint64("max-ready-lag", def.MaxReadyLag, "committed entries a node may have yet to apply and still answer /readyz 200")
	sec := addSecurityFlags(fs)
	unsafeFaults := registerFaultFlag(fs)
	pprofOn := fs.Bool("pprof", false, "serve Go's profiler under /debug/pprof/ on the HTTP address")
	shutdownTimeout := fs.Duration("shutdown-timeout", 10*time.Second, "how long a graceful shutdown may take")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("serve takes no arguments, got %q", fs.Args())}
	}
	log, _, err := newLogger(stderr, *logLevel, *logFormat)
	if err != nil {
		return err
	}
	var rl slog.Level
	if err := rl.UnmarshalText([]byte(*raftLogLevel)); err != nil {
		return usageError{fmt.Sprintf("--raft-log-level %q: want debug, info, warn or error", *raftLogLevel)}
	}
	peers, err := cluster.ParseInitialCluster(*initial)
	if err != nil {
		return usageError{"--initial-cluster: " + err.Error()}
	}
	cfg := def
	cfg.Cluster.ID = *id
	cfg.Cluster.DataDir = *dataDir
	cfg.Cluster.RaftAddr = *raftAddr
	cfg.Cluster.RaftAdvertise = *raftAdv
	cfg.Cluster.Bootstrap = *bootstrap
	cfg.Cluster.InitialCluster = peers
	cfg.Cluster.HeartbeatTimeout = *heartbeat
	cfg.Cluster.ElectionTimeout = *election
	cfg.Cluster.LeaderLeaseTimeout = *lease
	cfg.Cluster.SnapshotThreshold = *snapThreshold
	cfg.Cluster.SnapshotInterval = *snapInterval
	cfg.Cluster.TrailingLogs = *trailing
	cfg.Cluster.MaxRPCsInFlight = *maxInFlight
	cfg.Cluster.LeaseReads = *leaseReads
	cfg.Cluster.LeaseDuration = *leaseDuration
	cfg.Cluster.LeaseMaxDrift = *leaseDrift
	cfg.Cluster.RaftLogLevel = rl
	cfg.HTTPAddr = *httpAddr
	cfg.HTTPAdvertise = *httpAdv
	cfg.RESPAddr = *respAddr
	cfg.Version = buildinfo.Version()
	cfg.Logger = log
	cfg.Pprof = *pprofOn
	cfg.MaxReadyLag = *maxReadyLag
	cfg.Metrics = metrics.New(buildinfo.Version())
	if err := applyFaults(*unsafeFaults, &cfg); err != nil {
		return usageError{err.Error()}
	}
	for _, ns := range strings.Split(*sfNamespaces, ",") {
		if ns = strings.TrimSpace(ns); ns != "" {
			cfg.SnowflakeNamespaces = append(cfg.SnowflakeNamespaces, ns)
		}
	}
	if *join != "" {
		for _, u := range strings.Split(*join, ",") {
			cfg.Join = append(cfg.Join, strings.TrimSpace(u))
		}
	}
	switch {
	case *standby:
		cfg.Standby = &server.StandbySettings{Bound: *standbyBound, Timeout: *standbyTimeout}
	case *standbyBound != 0 || *standbyTimeout != 0:
		return usageError{"--standby-bound and --standby-timeout need --standby"}
	}
	// A bad flag is a usage error, reported before anything is opened.
	if err := cfg.Validate(); err != nil {
		return usageError{err.Error()}
	}
	if err := sec.apply(&cfg); err != nil {
		return err
	}
	if !*bootstrap && len(peers) == 0 && len(cfg.Join) == 0 {
		log.Info("no --bootstrap, --initial-cluster or --join: resuming from the data dir, or waiting to be added by `ticketd join`")
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	srv, err := server.Start(cfg)
	if err != nil {
		return err
	}
	stopTLS := make(chan struct{})
	defer close(stopTLS)
	sec.watchTLS(stopTLS, log, cfg.Metrics)
	select {
	case <-ctx.Done():
		log.Info("signal received; shutting down")
	case err := <-srv.Done():
		log.Error("HTTP server stopped", "err", err)
	}
	sctx, cancel := context.WithTimeout(context.Background(), *shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	log.Info("stopped")
	return nil
}

// clientOpts are the flags every client command shares.
type clientOpts struct {
	addr, tokenFile, ca, cert, key *string
	timeout                        *time.Duration
}

func clientFlags(fs *flag.FlagSet) *clientOpts {
	return &clientOpts{
		addr:      fs.String("addr", "http://127.0.0.1:8080", "API URL(s) of cluster nodes, comma-separated"),
		timeout:   fs.Duration("timeout", 10*time.Second, "how long the command may take"),
		tokenFile: fs.String("token-file", "", "file holding the bearer token (default: $TICKETD_TOKEN)"),
		ca:        fs.String("ca", "", "CA (PEM) to verify the nodes' HTTPS certificates"),
		cert:      fs.String("cert", "", "client certificate (PEM), for nodes that require one"),
		key:       fs.String("key", "", "private key (PEM) for --cert"),
	}
}

func (o *clientOpts) endpoints() []string {
	var eps []string
	for _, e := range strings.Split(*o.addr, ",") {
		if e = strings.TrimSpace(e); e != "" {
			eps = append(eps, e)
		}
	}
	return eps
}

func (o *clientOpts) httpClient() (*http.Client, string, error) {
	tlsCfg, err := clientTLS(*o.ca, *o.cert, *o.key)
	if err != nil {
		return nil, "", err
	}
	token, err := clientToken(*o.tokenFile)
	if err != nil {
		return nil, "", err
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg}}, token, nil
}

func newClient(o *clientOpts) (*client.Client, context.Context, context.CancelFunc, error) {
	hc, token, err := o.httpClient()
	if err != nil {
		return nil, nil, nil, err
	}
	opts := []client.Option{client.WithHTTPClient(hc)}
	if token != "" {
		opts = append(opts, client.WithBearerToken(token))
	}
	c, err := client.New(o.endpoints(), opts...)
	if err != nil {
		return nil, nil, nil, usageError{err.Error()}
	}
	ctx, cancel := context.WithTimeout(context.Background(), *o.timeout)
	return c, ctx, cancel, nil
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// flagsAnywhere lets positional arguments come before flags
// ("reserve orders 10 --addr ..."), which the flag package alone does not.
func flagsAnywhere(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := parse(fs, args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

func createCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("create", flag.ContinueOnError)
	fs.SetOutput(stderr)
	co := clientFlags(fs)
	start := fs.Int64("start", api.DefaultStart, "first ID of the sequence")
	maxID := fs.Int64("max", api.DefaultMax, "largest ID of the sequence")
	pos, err := flagsAnywhere(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{"usage: ticketd create SEQ [--start S] [--max M]"}
	}
	c, ctx, cancel, err := newClient(co)
	if err != nil {
		return err
	}
	defer cancel()
	info, created, err := c.CreateSequence(ctx, pos[0], client.SequenceSettings{Start: *start, Max: *maxID})
	if err != nil {
		return err
	}
	if !created {
		fmt.Fprintf(stderr, "sequence %q already exists with these settings\n", pos[0])
	}
	return printJSON(stdout, info)
}

func reserveCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("reserve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	co := clientFlags(fs)
	pos, err := flagsAnywhere(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usageError{"usage: ticketd reserve SEQ N"}
	}
	n, err := strconv.ParseInt(pos[1], 10, 64)
	if err != nil {
		return usageError{fmt.Sprintf("N must be an integer, got %q", pos[1])}
	}
	c, ctx, cancel, err := newClient(co)
	if err != nil {
		return err
	}
	defer cancel()
	r, err := c.Reserve(ctx, pos[0], n)
	if err != nil {
		return withHint(err, createHint(pos[0]))
	}
	return printJSON(stdout, api.Range{Sequence: pos[0], First: r.First, Last: r.Last})
}

func sequencesCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sequences", flag.ContinueOnError)
	fs.SetOutput(stderr)
	co := clientFlags(fs)
	out := outputFlag(fs)
	window := fs.Duration("rate-window", time.Second, "table only: RATE is the IDs per second the leader handed out over this long, "+
		"from two samples of its /metrics (this long is waited on top of --timeout); 0 leaves RATE out")
	pos, err := flagsAnywhere(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return usageError{"usage: ticketd sequences [SEQ] [-o table|json] [--rate-window D]"}
	}
	format, err := output(*out, outputTable)
	if err != nil {
		return err
	}
	if *window < 0 {
		return usageError{fmt.Sprintf("--rate-window %s: want 0 (no RATE) or more", *window)}
	}
	c, ctx, cancel, err := newClient(co)
	if err != nil {
		return err
	}
	defer cancel()
	var seqs []api.Sequence
	if len(pos) == 1 {
		info, err := c.SequenceInfo(ctx, pos[0])
		if err != nil {
			return withHint(err, createHint(pos[0]))
		}
		if format == outputJSON {
			return printJSON(stdout, info)
		}
		seqs = []api.Sequence{info}
	} else {
		if seqs, err = c.Sequences(ctx); err != nil {
			return err
		}
		if format == outputJSON {
			return printJSON(stdout, api.SequenceList{Sequences: seqs})
		}
	}
	if *window == 0 {
		return writeSequencesTable(stdout, seqs, nil)
	}
	names := make([]string, len(seqs))
	for i, s := range seqs {
		names[i] = s.Name
	}
	rctx, rcancel := context.WithTimeout(context.Background(), *co.timeout+*window)
	defer rcancel()
	rates, note := leaderRates(rctx, co, *window, names)
	if note != "" {
		fmt.Fprintln(stderr, "note:", note)
	}
	return writeSequencesTable(stdout, seqs, rates)
}

func joinCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("join", flag.ContinueOnError)
	fs.SetOutput(stderr)
	co := clientFlags(fs)
	id := fs.String("id", "", "ID of the node to add")
	raftAddr := fs.String("raft-addr", "", "Raft address of the node to add")
	httpAddr := fs.String("http-addr", "", "API host:port of the node to add")
	standby := fs.Bool("standby", false, "add it as the cluster's disaster-recovery standby (non-voting; see ticketd serve --standby)")
	standbyBound := fs.Int64("standby-bound", 0, "with --standby: IDs per sequence the leader may serve past what the standby has stored (default 10000000)")
	standbyTimeout := fs.Duration("standby-timeout", 0, "with --standby: how long it may make no progress before it is recorded out of sync (default 10s)")
	if _, err := flagsAnywhere(fs, args); err != nil {
		return err
	}
	if *id == "" || *raftAddr == "" || *httpAddr == "" {
		return usageError{"usage: ticketd join --id ID --raft-addr HOST:PORT --http-addr HOST:PORT [--standby [--standby-bound N] [--standby-timeout D]] [--addr URL]"}
	}
	if !*standby && (*standbyBound != 0 || *standbyTimeout != 0) {
		return usageError{"--standby-bound and --standby-timeout need --standby"}
	}
	req := api.JoinRequest{ID: *id, RaftAddr: *raftAddr, HTTPAddr: *httpAddr,
		Standby: *standby, StandbyBound: *standbyBound, StandbyTimeoutMs: standbyTimeout.Milliseconds()}
	c, ctx, cancel, err := newClient(co)
	if err != nil {
		return err
	}
	defer cancel()
	if err := c.AddMember(ctx, req); err != nil {
		return err
	}
	if *standby {
		fmt.Fprintf(stdout, "added %s as the standby (raft %s, http %s); it is recorded in sync once it has caught up\n", *id, *raftAddr, *httpAddr)
		return nil
	}
	fmt.Fprintf(stdout, "added %s (raft %s, http %s)\n", *id, *raftAddr, *httpAddr)
	return nil
}

func removeCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("remove", flag.ContinueOnError)
	fs.SetOutput(stderr)
	co := clientFlags(fs)
	pos, err := flagsAnywhere(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{"usage: ticketd remove ID [--addr URL]"}
	}
	c, ctx, cancel, err := newClient(co)
	if err != nil {
		return err
	}
	defer cancel()
	if err := c.RemoveMember(ctx, pos[0]); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "removed %s\n", pos[0])
	return nil
}
