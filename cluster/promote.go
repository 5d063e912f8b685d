package cluster

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"

	"github.com/ticketd/ticketd/fsm"
)

// Promotion of a disaster-recovery standby (issue #34), offline, on the
// stopped standby's data directory: its own state (latest snapshot plus
// every entry in its log, as raft.RecoverCluster reads them) becomes a
// one-node cluster with the standby as its only voter, after fsm.Promote
// has advanced every mark by the recorded bound (or the operator's
// --advance), ended every lease and raised the fencing floor. Nothing is
// written until every check has passed; RecoverCluster then writes the
// snapshot and compacts the log.

// nodeIDFile holds the --id a data directory was started with, so that an
// offline tool knows whose data it holds (every replica's state records the
// same standby).
const nodeIDFile = "node-id"

// ErrPromote marks a promotion refused; nothing was changed.
var ErrPromote = errors.New("promotion refused")

// ensureNodeID records id in dir, or refuses a data directory that holds
// another node's: the Raft ID must never change with the data.
func ensureNodeID(dir, id string) error {
	path := filepath.Join(dir, nodeIDFile)
	b, err := os.ReadFile(path)
	switch {
	case err == nil && strings.TrimSpace(string(b)) != "":
		if got := strings.TrimSpace(string(b)); got != id {
			return fmt.Errorf("%w: %s holds the data of node %q, not %q: a node's --id must stay the same across restarts", ErrStorage, dir, got, id)
		}
		return nil
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%w: read %s: %v", ErrStorage, path, err)
	}
	// An empty file is one a crash cut short (ext4 keeps the name and
	// loses the data of a file not yet synced): it names nobody, so it is
	// written again. writeFileSync syncs before the rename.
	if err := writeFileSync(path, id+"\n"); err != nil {
		return fmt.Errorf("%w: write %s: %v", ErrStorage, path, err)
	}
	return nil
}

// PromoteOptions are the inputs of Promote.
type PromoteOptions struct {
	DataDir string
	// ID is this node's id; empty reads it from the data directory.
	ID string
	// Advance is the operator's --advance; 0 uses the recorded bound.
	Advance int64
	// PrimaryLostAt is when the operator knows the primary was lost by
	// (--primary-lost-at): the recorded bound is used only if that is
	// before the standby's trust horizon (the latest certificate its
	// leader sent it, less MaxClockSkew). Zero: not given.
	PrimaryLostAt time.Time
	// MaxClockSkew is how far the primary leader's wall clock and the
	// clock PrimaryLostAt was read from may disagree (--max-clock-skew);
	// zero uses DefaultMaxClockSkew.
	MaxClockSkew time.Duration
	// Now is the promoting machine's wall clock, recorded for people.
	Now time.Time
	// Prepare, if set, is called on the state machine before it reads
	// anything (the fault-injection build plants faults with it).
	Prepare func(*fsm.FSM)
	Logger  hclog.Logger
}

// PromoteReport is what Promote did, or would refuse.
type PromoteReport struct {
	ID       string
	RaftAddr string
	Result   fsm.PromoteResult
	// LastIndex is the last index of the standby's log.
	LastIndex uint64
	// CertifiedUntil is the latest time the primary's leader certified
	// that it would not record the standby out of sync before (zero if
	// the standby holds no certificate of its latest in-sync record), and
	// TrustUntil that less the clock skew: the horizon a --primary-lost-at
	// must not pass.
	CertifiedUntil time.Time
	TrustUntil     time.Time
	MaxClockSkew   time.Duration
}

// DefaultMaxClockSkew is --max-clock-skew's default: NTP keeps servers
// within milliseconds of each other; a second leaves room for a clock that
// has stepped, or an operator's time read off a dashboard.
const DefaultMaxClockSkew = time.Second

// Promote makes a stopped standby's data a one-node cluster. Every refusal
// wraps ErrPromote (and the FSM's reason), and leaves the directory as it
// was.
func Promote(o PromoteOptions) (PromoteReport, error) {
	var rep PromoteReport
	refuse := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrPromote, fmt.Sprintf(format, args...))
	}
	if o.DataDir == "" {
		return rep, refuse("--data-dir is required")
	}
	if st, err := os.Stat(o.DataDir); err != nil || !st.IsDir() {
		return rep, refuse("%s is not a data directory", o.DataDir)
	}
	logPath := filepath.Join(o.DataDir, "raft.db")
	if _, err := os.Stat(logPath); err != nil {
		return rep, refuse("%s holds no raft.db: not a ticketd data directory", o.DataDir)
	}
	if err := checkDataDir(o.DataDir); err != nil {
		return rep, refuse("%v", err)
	}
	if err := checkRaftLog(logPath); err != nil {
		return rep, refuse("%v (promote a stopped standby: stop it first)", err)
	}
	id, err := promoteID(o)
	if err != nil {
		return rep, err
	}
	rep.ID = id
	logger := o.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(o.DataDir, 2, logger)
	if err != nil {
		return rep, refuse("open snapshots: %v", err)
	}

	// Read the state and the configuration exactly as RecoverCluster
	// will, and decide before writing anything. The checks read a copy of
	// the log: bolt writes to a file it opens for writing (raft-boltdb
	// opens no other way), so a refusal leaves raft.db as it was, byte for
	// byte.
	f := fsm.New()
	if o.Prepare != nil {
		o.Prepare(f)
	}
	conf, last, err := readStateOfCopy(f, logPath, snaps)
	if err != nil {
		return rep, refuse("%v", err)
	}
	rep.LastIndex = last
	for _, p := range f.Promotions() {
		if p.Standby == id {
			if _, isStandby := f.StandbyInfo(); !isStandby {
				_, err := f.PromoteCheck(id, o.Advance)
				return rep, fmt.Errorf("%w: %w", ErrPromote, err)
			}
		}
	}
	var self *raft.Server
	for i, s := range conf.Servers {
		if string(s.ID) == id {
			self = &conf.Servers[i]
		}
	}
	switch {
	case self == nil:
		return rep, refuse("node %q is not in the raft configuration this data holds (%s): it never was a member here", id, describeServers(conf))
	case self.Suffrage == raft.Voter:
		return rep, refuse("node %q is a voter of its cluster, not a standby: a cluster that lost a minority of voters recovers by itself; one that lost them all is restored from a backup (ticketd restore) or, as a last resort, recovered from a voter's data (see docs/disaster-recovery.md, and docs/operations.md for backup and restore)", id)
	}
	rep.RaftAddr = string(self.Address)
	if _, err := f.PromoteCheck(id, o.Advance); err != nil {
		return rep, fmt.Errorf("%w: %w", ErrPromote, err)
	}
	if o.Advance == 0 {
		sb, _ := f.StandbyInfo()
		if err := checkTrust(&rep, o, sb); err != nil {
			return rep, err
		}
	}
	freshPath := filepath.Join(o.DataDir, freshStartFile)
	if _, err := os.Stat(freshPath); err == nil && o.Advance == 0 {
		return rep, fmt.Errorf("%w: %w: this data directory started empty (%s) and has not applied an in-sync record of itself since it caught up, so its own in-sync record may predate what it once acknowledged (a standby that lost its disk and rejoined): give --advance N, at least the IDs any sequence can have been given since it rejoined, and at least the bound", ErrPromote, fsm.ErrStandbyNotInSync, freshPath)
	}

	// Now write: RecoverCluster replays the same state into a fresh state
	// machine, whose Snapshot applies the promotion first.
	store, err := raftboltdb.New(raftboltdb.Options{Path: logPath, BoltOptions: &bbolt.Options{Timeout: checkLockTimeout}})
	if err != nil {
		return rep, refuse("open %s: %v (is a ticketd running on it?)", logPath, err)
	}
	defer store.Close()
	var old []string
	for _, s := range conf.Servers {
		if string(s.ID) != id {
			old = append(old, string(s.ID))
		}
	}
	pf := &promotingFSM{FSM: fsm.New(), id: id, advance: o.Advance, now: o.Now, oldMembers: old}
	if o.Prepare != nil {
		o.Prepare(pf.FSM)
	}
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(id)
	rc.Logger = logger
	_, trans := raft.NewInmemTransport(raft.ServerAddress(rep.RaftAddr))
	newConf := raft.Configuration{Servers: []raft.Server{{Suffrage: raft.Voter, ID: raft.ServerID(id), Address: self.Address}}}
	if err := raft.RecoverCluster(rc, pf, store, store, snaps, trans, newConf); err != nil {
		if pf.err != nil {
			return rep, fmt.Errorf("%w: %w", ErrPromote, pf.err)
		}
		return rep, fmt.Errorf("promote: %w", err)
	}
	rep.Result = pf.res
	_ = os.Remove(freshPath) // the advance was given, and the data is a cluster's own now
	return rep, nil
}

func promoteID(o PromoteOptions) (string, error) {
	b, err := os.ReadFile(filepath.Join(o.DataDir, nodeIDFile))
	recorded := strings.TrimSpace(string(b))
	switch {
	case err == nil && o.ID != "" && o.ID != recorded:
		return "", fmt.Errorf("%w: --id %q, but %s holds the data of node %q", ErrPromote, o.ID, o.DataDir, recorded)
	case err == nil && recorded != "":
		return recorded, nil
	case o.ID != "":
		return o.ID, nil
	}
	return "", fmt.Errorf("%w: %s records no node id (a data directory written before ticketd 0.34): give --id, the node's --id", ErrPromote, o.DataDir)
}

// readState restores the latest snapshot into f and applies every command
// entry of the log after it, as RecoverCluster does; it returns the latest
// configuration and the last index.
func readState(f *fsm.FSM, logs raft.LogStore, snaps raft.SnapshotStore) (raft.Configuration, uint64, error) {
	var conf raft.Configuration
	metas, err := snaps.List()
	if err != nil {
		return conf, 0, fmt.Errorf("list snapshots: %v", err)
	}
	var from uint64
	if len(metas) > 0 {
		meta, rc, err := snaps.Open(metas[0].ID)
		if err != nil {
			return conf, 0, fmt.Errorf("open snapshot %s: %v", metas[0].ID, err)
		}
		err = f.Restore(rc)
		if err != nil {
			return conf, 0, fmt.Errorf("restore snapshot %s: %v", meta.ID, err)
		}
		conf, from = meta.Configuration, meta.Index
	}
	last, err := logs.LastIndex()
	if err != nil {
		return conf, 0, fmt.Errorf("read the log: %v", err)
	}
	if len(metas) == 0 && last == 0 {
		return conf, 0, errors.New("the data directory holds no raft state")
	}
	first, err := logs.FirstIndex()
	if err != nil {
		return conf, 0, fmt.Errorf("read the log: %v", err)
	}
	for i := max(from+1, first); i <= last && i > 0; i++ {
		var e raft.Log
		if err := logs.GetLog(i, &e); err != nil {
			return conf, 0, fmt.Errorf("read log entry %d: %v", i, err)
		}
		switch e.Type {
		case raft.LogCommand:
			_ = f.Apply(&e)
		case raft.LogConfiguration:
			conf = raft.DecodeConfiguration(e.Data)
		}
	}
	return conf, max(last, from), nil
}

func describeServers(c raft.Configuration) string {
	var parts []string
	for _, s := range c.Servers {
		parts = append(parts, fmt.Sprintf("%s %s", s.ID, s.Suffrage))
	}
	if len(parts) == 0 {
		return "empty"
	}
	return strings.Join(parts, ", ")
}

// promotingFSM applies the promotion to the replayed state when
// RecoverCluster asks for the snapshot it writes as the new cluster's.
type promotingFSM struct {
	*fsm.FSM
	id         string
	advance    int64
	now        time.Time
	oldMembers []string
	res        fsm.PromoteResult
	err        error
}

func (p *promotingFSM) Snapshot() (raft.FSMSnapshot, error) {
	p.res, p.err = p.FSM.Promote(p.id, p.advance, p.now.UnixMilli(), p.oldMembers)
	if p.err != nil {
		return nil, p.err
	}
	return p.FSM.Snapshot()
}

func (p *promotingFSM) Restore(rc io.ReadCloser) error { return p.FSM.Restore(rc) }

// readStateOfCopy is readState on a copy of the log at logPath.
func readStateOfCopy(f *fsm.FSM, logPath string, snaps raft.SnapshotStore) (raft.Configuration, uint64, error) {
	dir, err := os.MkdirTemp("", "ticketd-promote-check-")
	if err != nil {
		return raft.Configuration{}, 0, err
	}
	defer os.RemoveAll(dir)
	copyPath := filepath.Join(dir, "raft.db")
	if err := copyFile(logPath, copyPath); err != nil {
		return raft.Configuration{}, 0, fmt.Errorf("copy the log to check it: %v", err)
	}
	store, err := raftboltdb.New(raftboltdb.Options{Path: copyPath})
	if err != nil {
		return raft.Configuration{}, 0, fmt.Errorf("open a copy of %s: %v", logPath, err)
	}
	defer store.Close()
	return readState(f, store, snaps)
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}

// ErrPrimaryLostAt: the bound may be trusted only if the primary was lost
// before the standby's trust horizon, which the operator must say.
var ErrPrimaryLostAt = errors.New("when was the primary lost")

// checkTrust decides whether the standby's in-sync record may be trusted
// for a promotion with the recorded bound: only if its leader certified
// that record (standbycert.go) and the operator says the primary was lost
// before the certificate's time, less the clock skew.
func checkTrust(rep *PromoteReport, o PromoteOptions, sb fsm.Standby) error {
	skew := o.MaxClockSkew
	if skew <= 0 {
		skew = DefaultMaxClockSkew
	}
	rep.MaxClockSkew = skew
	cert, ok, err := readCert(o.DataDir)
	switch {
	case err != nil:
		return fmt.Errorf("%w: %w: its certificate cannot be read (%v), so its in-sync record cannot be weighed: give --advance N", ErrPromote, fsm.ErrStandbyNotInSync, err)
	case !ok:
		return fmt.Errorf("%w: %w: the primary's leader never certified this standby's in-sync record (%s is missing: it never held a certificate, or ran a release older than certificates), so the record cannot be weighed against when the primary was lost: give --advance N, at least the IDs any sequence can have been given since it was recorded in sync at index %d", ErrPromote, fsm.ErrStandbyNotInSync, certFile, sb.SinceIndex)
	case cert.InSyncIndex != sb.SinceIndex:
		return fmt.Errorf("%w: %w: its certificate is of the in-sync record at index %d, not of the one at index %d its log ends with: give --advance N, at least the IDs any sequence can have been given since index %d", ErrPromote, fsm.ErrStandbyNotInSync, cert.InSyncIndex, sb.SinceIndex, sb.SinceIndex)
	}
	rep.CertifiedUntil, rep.TrustUntil = cert.ValidUntil, cert.ValidUntil.Add(-skew)
	horizon := rep.TrustUntil.UTC().Format(time.RFC3339Nano)
	switch {
	case o.PrimaryLostAt.IsZero():
		return fmt.Errorf("%w: %w: the primary's leader (%s, term %d) certified that it would not record this standby out of sync before %s; less a clock skew of %s (--max-clock-skew) that is %s. Say when the primary was lost: --primary-lost-at TIME (RFC 3339); a time up to %s promotes with the recorded bound of %d. Otherwise, or if you do not know, give --advance N (at least the IDs any sequence can have been given since %s)",
			ErrPromote, ErrPrimaryLostAt, cert.Leader, cert.Term, cert.ValidUntil.UTC().Format(time.RFC3339Nano), skew, horizon, horizon, sb.Bound, rep.TrustUntil.UTC().Format(time.RFC3339))
	case o.PrimaryLostAt.After(rep.TrustUntil):
		return fmt.Errorf("%w: %w: the primary was lost at %s, after %s (the latest certificate of its leader %s, %s, less a clock skew of %s): from then on it may have recorded this standby out of sync and gone on without it. Give --advance N, at least the IDs any sequence can have been given since %s",
			ErrPromote, fsm.ErrStandbyNotInSync, o.PrimaryLostAt.UTC().Format(time.RFC3339Nano), horizon, cert.Leader, cert.ValidUntil.UTC().Format(time.RFC3339Nano), skew, rep.TrustUntil.UTC().Format(time.RFC3339))
	}
	return nil
}
