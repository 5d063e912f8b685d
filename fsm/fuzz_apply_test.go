package fsm_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ticketd/ticketd/fsm"
)

// FuzzApplyLog turns the input into a log and applies it, from an empty
// state or from the v4 fixture's, to two FSMs (twins). It checks what
// DESIGN.md promises of Apply:
//   - the decode step (decodeCommand) tells a corrupt entry (empty, unknown
//     type without IgnoreUnknownTypeFlag, body that does not decode) from a
//     valid one without panicking, and Apply panics on exactly the corrupt
//     ones: that panic is the design, any other is a bug;
//   - an entry that decodes never panics, answers with one of the documented
//     results (nil for an unknown type with the flag), and a rejection (an
//     error value) leaves the state as it was;
//   - determinism: twins fed the same log give equal answers and persist
//     byte-identical snapshots (raft replicas must never diverge);
//   - the final state survives snapshot → restore → snapshot byte for byte,
//     a backup of it is the same bytes, and the uniqueness probe stays clean
//     (unless a restore entry seeded the audit from a backup whose own audit
//     contradicts it: see auditConsistent).
//
// The input is a list of chunks, each a uvarint length and that many bytes
// (logEntries). A chunk is an entry's Data as it is, or, if it starts with
// macroMarker, a command built from a template and a few parameter bytes
// (see logBuilder): random bytes seldom make JSON that names a sequence or
// a lease's current token, and a restore entry carries a whole backup, so
// the templates let short inputs reach deep states, while raw chunks keep
// the decoder exposed to anything.
//
// Fuzz it with -fuzzminimizetime of a few seconds: with Go's default (60 s)
// the worker was seen minimizing a new input for 20-40 s at a time with no
// executions counted.
func FuzzApplyLog(f *testing.F) {
	fixture, err := os.ReadFile(fixtureV4)
	if err != nil {
		f.Fatal(err)
	}
	b := &logBuilder{backups: [][]byte{fixture, backupWithFreeWorker(f), mustRead(f, fixtureV1), []byte("garbage"), fixture[:len(fixture)/2], nil}}
	for _, s := range applyLogSeeds() {
		f.Add(s.fromFixture, frameEntries(s.entries...))
	}
	f.Add(true, bytes.Repeat([]byte{0xff}, 11)) // a length that is not a uvarint
	f.Fuzz(func(t *testing.T, fromFixture bool, log []byte) {
		twins := [2]*fsm.FSM{fsm.New(), fsm.New()}
		if fromFixture {
			for _, tw := range twins {
				if err := tw.Restore(io.NopCloser(bytes.NewReader(fixture))); err != nil {
					t.Fatal(err)
				}
			}
		}
		index, _ := twins[0].LastApplied()
		scratch := fsm.New() // takes the corrupt entries
		trusted := true      // false once a restore brought in an audit that contradicts its own state
		for _, chunk := range logEntries(log) {
			data := b.entry(chunk, twins[0])
			index++
			entry := func() *raft.Log {
				return &raft.Log{Index: index, Term: fuzzTerm, Type: raft.LogCommand, Data: bytes.Clone(data), AppendedAt: fuzzAppendedAt}
			}
			_, cmd, err := fsm.DecodeCommand(data)
			if err != nil {
				if msg := applyPanics(scratch, entry()); msg == "" {
					t.Fatalf("entry %q does not decode (%v), yet Apply did not panic", data, err)
				}
				continue
			}
			before := observe(twins[0])
			resp := applyOrFail(t, twins[0], entry())
			if twin := applyOrFail(t, twins[1], entry()); !reflect.DeepEqual(resp, twin) {
				t.Fatalf("entry %q at index %d: twins answered %#v and %#v", data, index, resp, twin)
			}
			switch resp.(type) {
			case nil, error, fsm.CreateResult, fsm.Block, fsm.BlockBatch, fsm.NamespaceResult, fsm.Lease, fsm.RestoreResult:
			default:
				t.Fatalf("entry %q: undocumented answer %T %#v", data, resp, resp)
			}
			if cmd == nil && resp != nil {
				t.Fatalf("entry %q of an unknown type with the ignore flag answered %#v, want nil", data, resp)
			}
			if _, rejected := resp.(error); rejected {
				if after := observe(twins[0]); !reflect.DeepEqual(before, after) {
					t.Fatalf("entry %q was rejected (%v) but changed the state\nbefore: %+v\n after: %+v", data, resp, before, after)
				}
			}
			if c, ok := cmd.(*fsm.RestoreBackup); ok {
				if _, restored := resp.(fsm.RestoreResult); restored && !auditConsistent(c.Backup) {
					trusted = false
				}
			}
		}
		ia, ta := twins[0].LastApplied()
		if ib, tb := twins[1].LastApplied(); ia != ib || ta != tb {
			t.Fatalf("twins applied up to %d/%d and %d/%d", ia, ta, ib, tb)
		}
		for _, f := range twins {
			if err := f.CheckSequenceIndex(); err != nil {
				t.Fatalf("after the log: %v", err)
			}
		}
		snap := persist(t, twins[0])
		if other := persist(t, twins[1]); !bytes.Equal(snap, other) {
			t.Fatalf("twins fed the same log persist different snapshots\n%s\n%s", snap, other)
		}
		var backup bytes.Buffer
		_, hasStandby := twins[0].StandbyInfo()
		_, hasFence := twins[0].Fenced()
		if err := twins[0].Backup(&backup); err != nil {
			t.Fatal(err)
		}
		if !hasStandby && !hasFence && !bytes.Equal(backup.Bytes(), snap) {
			t.Fatal("a backup is not the snapshot's bytes")
		}
		if hasStandby || hasFence { // the cluster's, not the data's: a backup leaves them out
			b := fsm.New()
			if err := b.Restore(io.NopCloser(bytes.NewReader(backup.Bytes()))); err != nil {
				t.Fatalf("the backup does not restore: %v", err)
			}
			_, bs := b.StandbyInfo()
			_, bf := b.Fenced()
			if bs || bf || !reflect.DeepEqual(b.Sequences(), twins[0].Sequences()) {
				t.Fatal("a backup carried the standby or the fence, or not the sequences")
			}
		}
		r := fsm.New()
		if err := r.Restore(io.NopCloser(bytes.NewReader(snap))); err != nil {
			t.Fatalf("the state the log left does not restore: %v\n%s", err, snap)
		}
		if again := persist(t, r); !bytes.Equal(again, snap) {
			t.Fatalf("snapshot → restore → snapshot changed the bytes\n%s\n%s", snap, again)
		}
		if err := r.CheckSequenceIndex(); err != nil {
			t.Fatalf("after a restore: %v", err)
		}
		rep := twins[0].CheckAudit()
		if !reflect.DeepEqual(rep, r.CheckAudit()) {
			t.Fatalf("the probe answers differently after a restore: %+v, %+v", rep, r.CheckAudit())
		}
		if trusted && len(rep.Violations) != 0 {
			t.Fatalf("probe: %+v\nstate: %s", rep.Violations, snap)
		}
	})
}

const maxFuzzEntries = 64

var (
	fuzzTerm       uint64 = 3
	fuzzAppendedAt        = time.UnixMilli(t0).UTC()
)

// logEntries cuts a fuzz input into chunks: a uvarint length, then that
// many bytes (what is left, if fewer); a length that is not a uvarint makes
// the rest one chunk. A chunk of length 0 is an empty entry.
func logEntries(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 && len(out) < maxFuzzEntries {
		n, k := binary.Uvarint(b)
		if k <= 0 {
			return append(out, b)
		}
		b = b[k:]
		n = min(n, uint64(len(b)))
		out = append(out, b[:n])
		b = b[n:]
	}
	return out
}

// frameEntries is the inverse of logEntries, for seeds.
func frameEntries(chunks ...[]byte) []byte {
	var out []byte
	for _, c := range chunks {
		out = binary.AppendUvarint(out, uint64(len(c)))
		out = append(out, c...)
	}
	return out
}

// macroMarker starts a chunk that is a template, not an entry. As an entry's
// first byte it would be type 0x7f with IgnoreUnknownTypeFlag, a case that
// 0x8f in the seeds covers as well.
const macroMarker = 0xff

// Templates: macro(kind, parameter bytes...).
const (
	macroCreateSequence  byte = iota // name, start, max
	macroReserve                     // name, count, min, stamp
	macroMember                      // set/remove, id
	macroCreateNamespace             // name, max workers, variant, stamp, shard
	macroLease                       // op, namespace, worker, token, version, holder, request id, client time, stamp, chosen
	macroLegacy                      // acquire/renew/release, namespace, worker, token, holder, request id, stamp
	macroRestore                     // backup, advance, stamp
	macroReserveBlocks               // requests (1-5), stamp, then name, count, min of each
	macroStandby                     // op, id, bound, timeout, stamp (issue #34)
	macroCount
)

func macro(kind byte, params ...byte) []byte { return append([]byte{macroMarker, kind}, params...) }

// logBuilder turns chunks into entries. Tokens and versions are taken from
// the state the entry will apply to (twins hold the same), mutated or not
// as a parameter says, so that lease lifecycles are reachable.
type logBuilder struct {
	// backups a restore template may carry; nil: a backup of the state
	// the entry applies to.
	backups [][]byte
}

// param is the i-th parameter byte, 0 if the chunk is shorter.
func param(p []byte, i int) byte {
	if i < len(p) {
		return p[i]
	}
	return 0
}

func pick[T any](p []byte, i int, choices ...T) T { return choices[int(param(p, i))%len(choices)] }

// stampAt is no stamp for 0, else t0 plus steps of 2.5 s (the templates'
// namespaces have a 10 s TTL and a 20 s recycle delay).
func stampAt(p []byte, i int) fsm.Stamp {
	if param(p, i) == 0 {
		return fsm.Stamp{}
	}
	return stamp(t0 + int64(param(p, i))*2500)
}

var (
	fuzzSequences  = []string{"orders", "a", "", "no spaces"}
	fuzzNamespaces = []string{"users", "ns2", ""}
	fuzzHolders    = []string{"h1", "h2", "", strings.Repeat("x", 257)}
	fuzzRequestIDs = []string{"", "r1", "r2", strings.Repeat("r", 129)}
	fuzzLeaseOps   = []string{fsm.LeaseOpAcquire, fsm.LeaseOpRenew, fsm.LeaseOpRelease, fsm.LeaseOpRevoke, fsm.LeaseOpExpire, fsm.LeaseOpRecycle, "steal"}
	fuzzCounts     = []int64{1, 2, 100, 1 << 20, 0, -1, math.MaxInt64}
)

func (b *logBuilder) entry(chunk []byte, st *fsm.FSM) []byte {
	if len(chunk) < 2 || chunk[0] != macroMarker {
		return chunk
	}
	p := chunk[2:]
	switch chunk[1] % macroCount {
	case macroCreateSequence:
		start := pick(p, 1, int64(1), 42, math.MaxInt64-10, 0, -5)
		max := pick(p, 2, start, start+9, math.MaxInt64, start-1)
		return fsm.EncodeCreateSequence(fsm.CreateSequence{Name: pick(p, 0, fuzzSequences...), Start: start, Max: max})
	case macroReserve:
		return fsm.EncodeReserveBlock(fsm.ReserveBlock{Name: pick(p, 0, fuzzSequences...), Count: pick(p, 1, fuzzCounts...),
			Min: pick(p, 2, fuzzCounts...), Stamp: stampAt(p, 3)})
	case macroMember:
		id := pick(p, 1, "n1", "n2", "")
		if param(p, 0)%2 == 1 {
			return fsm.EncodeRemoveMember(fsm.RemoveMember{ID: id})
		}
		return fsm.EncodeSetMember(fsm.SetMember{ID: id, RaftAddr: "10.0.0.1:8090", HTTPAddr: "10.0.0.1:8080"})
	case macroCreateNamespace:
		n := testNamespace(pick(p, 0, fuzzNamespaces...))
		n.MaxWorkers = 1 + int64(param(p, 1)%4)
		if param(p, 4)%2 == 1 { // issue #16; older seeds have no 5th byte
			n.WorkerRole, n.HorizonYears = fsm.WorkerRoleShard, 50
		}
		switch param(p, 2) % 4 {
		case 1:
			n.TickMs = 2 // another layout: a conflict if the name exists
		case 2:
			n.EpochMs = t0 + 1_000_000_000 // in the future
		case 3:
			n.TimestampBits = 40 // 62 bits in all
		}
		return fsm.EncodeCreateNamespace(fsm.CreateNamespace{Namespace: n, Stamp: stamp(t0 + int64(param(p, 3))*2500)})
	case macroLease:
		ns, worker := pick(p, 1, fuzzNamespaces...), int64(param(p, 2)%5)-1
		cur := leaseOf(st, ns, worker)
		return fsm.EncodeLeaseOp(fsm.LeaseOp{Op: pick(p, 0, fuzzLeaseOps...), Namespace: ns, WorkerID: worker,
			Token: pick(p, 3, cur.Token, cur.Token+1, 0, cur.Token-1), Version: pick(p, 4, cur.Version, cur.Version+1, 0),
			Holder: pick(p, 5, fuzzHolders...), RequestID: pick(p, 6, fuzzRequestIDs...),
			ClientTimeMs: pick(p, 7, 0, t0, t0+5000, t0+60_000, -1, math.MaxInt64), Stamp: stampAt(p, 8),
			Chosen: param(p, 9)%2 == 1}) // issue #16; seeds from before have no 10th byte: not chosen
	case macroLegacy:
		ns, worker := pick(p, 1, fuzzNamespaces...), int64(param(p, 2)%5)-1
		token := pick(p, 3, leaseOf(st, ns, worker).Token, 0, 1)
		switch param(p, 0) % 3 {
		case 1:
			return fsm.EncodeRenewLease(fsm.RenewLease{Namespace: ns, WorkerID: worker, Token: token, Stamp: stampAt(p, 6)})
		case 2:
			return fsm.EncodeReleaseLease(fsm.ReleaseLease{Namespace: ns, WorkerID: worker, Token: token, Stamp: stampAt(p, 6)})
		}
		return fsm.EncodeAcquireLease(fsm.AcquireLease{Namespace: ns, Holder: pick(p, 4, fuzzHolders...),
			RequestID: pick(p, 5, fuzzRequestIDs...), Stamp: stampAt(p, 6)})
	case macroRestore:
		backup := pick(p, 0, b.backups...)
		if backup == nil {
			var buf bytes.Buffer
			if err := st.Backup(&buf); err != nil {
				panic(err)
			}
			backup = buf.Bytes()
		}
		return fsm.EncodeRestoreBackup(fsm.RestoreBackup{Backup: backup, Advance: pick(p, 1, int64(1), 1000, 0, math.MaxInt64, -1),
			Stamp: stampAt(p, 2)})
	case macroReserveBlocks:
		c := fsm.ReserveBlocks{Stamp: stampAt(p, 1)}
		for i := range 1 + int(param(p, 0))%5 {
			c.Requests = append(c.Requests, fsm.BlockRequest{Name: pick(p, 2+3*i, fuzzSequences...),
				Count: pick(p, 3+3*i, fuzzCounts...), Min: pick(p, 4+3*i, fuzzCounts...)})
		}
		return fsm.EncodeReserveBlocks(c)
	case macroStandby:
		return fsm.EncodeStandbyOp(fsm.StandbyOp{
			Op: pick(p, 0, fsm.StandbyAdd, fsm.StandbyInSync, fsm.StandbyOutOfSync, fsm.StandbyRemove, fsm.StandbyFence, "promote"),
			ID: pick(p, 1, "dr1", "dr2", ""), Bound: pick(p, 2, fsm.DefaultStandbyBound, 2*fsm.DefaultStandbyBound, 5, 0, math.MaxInt64),
			TimeoutMs: pick(p, 3, int64(fsm.DefaultStandbyTimeoutMs), 100, 5, 0), Stamp: stampAt(p, 4)})
	}
	panic("unreachable")
}

// leaseOf is the latest lease of a worker id (the zero Lease if none).
func leaseOf(st *fsm.FSM, ns string, worker int64) fsm.Lease {
	for _, l := range st.Leases(ns) {
		if l.WorkerID == worker {
			return l
		}
	}
	return fsm.Lease{}
}

// backupWithFreeWorker is a backup whose worker id 0 was released and freed
// by a recycle entry at index 14, a larger index than a new cluster's first
// entries.
func backupWithFreeWorker(tb testing.TB) []byte {
	a := leaseApplier{newApplier(tb)}
	for i := range 10 {
		a.apply(fsm.EncodeSetMember(fsm.SetMember{ID: fmt.Sprintf("m%d", i)}))
	}
	a.create(testNamespace("users"), t0)
	l := a.mustLease(fsm.LeaseOp{Op: fsm.LeaseOpAcquire, Namespace: "users", Holder: "old"})
	e := a.mustLease(fsm.LeaseOp{Op: fsm.LeaseOpRelease, Namespace: "users", WorkerID: l.WorkerID, Token: l.Token})
	a.mustLease(fsm.LeaseOp{Op: fsm.LeaseOpRecycle, Namespace: "users", WorkerID: l.WorkerID, Token: l.Token, Version: e.Version})
	var b bytes.Buffer
	if err := a.f.Backup(&b); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}

func mustRead(tb testing.TB, path string) []byte {
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// applyOrFail applies l, turning a panic into a failure that names the
// entry.
func applyOrFail(t *testing.T, f *fsm.FSM, l *raft.Log) (resp any) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("Apply panicked on an entry that decodes, %q at index %d: %v", l.Data, l.Index, r)
		}
	}()
	return f.Apply(l)
}

// applyPanics applies l and returns what Apply panicked with ("" if it did
// not).
func applyPanics(f *fsm.FSM, l *raft.Log) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
		}
	}()
	f.Apply(l)
	return ""
}

// observed is the state a rejected entry must leave as it was (the lease
// clock aside: every stamped entry moves it, accepted or not).
type observed struct {
	Sequences  []fsm.Sequence
	Members    []fsm.Member
	Namespaces []fsm.Namespace
	Leases     [][]fsm.Lease
	Audit      []fsm.AuditRecord
	Changes    uint64
	Standby    *fsm.Standby
	Fence      *fsm.Fence
}

func observe(f *fsm.FSM) observed {
	o := observed{Sequences: f.Sequences(), Members: f.Members(), Namespaces: f.Namespaces(),
		Audit: f.Audit(0, fsm.AuditRetention), Changes: f.LeaseChanges()}
	for _, n := range o.Namespaces {
		o.Leases = append(o.Leases, f.Leases(n.Name))
	}
	if sb, ok := f.StandbyInfo(); ok {
		o.Standby = &sb
	}
	if fe, ok := f.Fenced(); ok {
		o.Fence = &fe
	}
	return o
}

// auditConsistent reports whether a backup's audit agrees with the rest of
// it: its own probe is clean, every block record lies at or below its
// sequence's high-water mark and every lease record names one of its
// namespaces. Validation does not ask this of a backup, so a crafted backup
// can carry records that the probe flags once the restored cluster grants
// again; only such a restore excuses violations.
func auditConsistent(backup []byte) bool {
	f := fsm.New()
	if f.Restore(io.NopCloser(bytes.NewReader(backup))) != nil || len(f.CheckAudit().Violations) != 0 {
		return false
	}
	issued := map[string]int64{}
	for _, s := range f.Sequences() {
		issued[s.Name] = s.Issued
	}
	namespaces := map[string]bool{}
	for _, n := range f.Namespaces() {
		namespaces[n.Name] = true
	}
	for _, r := range f.Audit(0, fsm.AuditRetention) {
		if hi, ok := issued[r.Sequence]; r.Kind == fsm.AuditBlock && (!ok || r.Last > hi) {
			return false
		}
		if r.Kind == fsm.AuditLease && !namespaces[r.Namespace] {
			return false
		}
	}
	return true
}

type applyLogSeed struct {
	fromFixture bool
	entries     [][]byte
}

// applyLogSeeds are logs that reach every command and answer: each command
// accepted and rejected, leases through all their states (new and legacy
// commands), restores accepted and refused, and corrupt entries.
func applyLogSeeds() []applyLogSeed {
	m := macro
	const (
		acquire, renew, release, revoke, expire, recycle, steal = 0, 1, 2, 3, 4, 5, 6
		users, ns2                                              = 0, 1
		w0, w1, w2                                              = 1, 2, 3 // worker parameter: id+1
	)
	corrupt := [][]byte{
		{}, []byte("\x02{"), []byte("\x0c{}"), []byte("\x0b{\"requests\":{}}"), []byte("\x01[]"), {0}, []byte("\x02{\"name\":1}"), {byte(fsm.CommandLease)},
		[]byte("\x09{\"backup\":\"!!\"}"), []byte("\x7f{}"), {macroMarker},
	}
	raw := [][]byte{
		fsm.EncodeCreateSequence(fsm.CreateSequence{Name: "raw", Start: 1, Max: 9}),
		append([]byte{0x8f}, "{}"...), // an unknown type with the flag: skipped
		append([]byte{byte(fsm.CommandCreateSequence | fsm.IgnoreUnknownTypeFlag)}, `{"name":"f","start":1,"max":9}`...), // known: applied
		append([]byte{byte(fsm.CommandReserveBlock)}, `{"name":"f","count":3,"min":1,"extra":true}`...),
		append([]byte{byte(fsm.CommandLease)}, `{"op":"acquire","namespace":"users","holder":"h"}`...),
		append([]byte{byte(fsm.CommandSetMember)}, `null`...),
		[]byte("\x0b{}"), // a batch of no requests: rejected
	}
	return []applyLogSeed{
		// Sequences and members.
		{false, [][]byte{
			m(macroCreateSequence, 0, 0, 0), m(macroReserve, 0, 2, 0, 1), m(macroReserve, 0, 0, 0), m(macroReserve, 0, 6, 1),
			m(macroCreateSequence, 0, 0, 1), m(macroCreateSequence, 1, 2, 2), m(macroReserve, 1, 6, 6), m(macroReserve, 1, 0, 2),
			m(macroReserve, 2, 0, 0), m(macroCreateSequence, 3, 0, 0), m(macroCreateSequence, 0, 4, 3),
			m(macroReserveBlocks, 3, 1, 0, 2, 0, 1, 1, 1, 2, 0, 0, 0, 5, 1), m(macroReserveBlocks, 0, 0, 1, 6, 6),
			m(macroReserveBlocks, 4, 2, 0, 0, 0, 0, 3, 1, 0, 1, 0, 1, 4, 4, 3, 3, 0),
			m(macroMember, 0, 0), m(macroMember, 0, 2), m(macroMember, 1, 0), m(macroMember, 1, 1),
		}},
		// A standby through its states, with blocks capped at its bound
		// and a batch naming a sequence twice (issue #34).
		{false, [][]byte{
			m(macroCreateSequence, 0, 0, 2), m(macroReserve, 0, 6, 0), m(macroStandby, 0, 0, 0, 0, 1),
			m(macroReserve, 0, 6, 0), m(macroReserveBlocks, 2, 1, 0, 6, 0, 0, 6, 0), m(macroStandby, 1, 0), m(macroStandby, 1, 0),
			m(macroStandby, 0, 1, 0, 0), m(macroStandby, 0, 0, 1, 0), m(macroStandby, 0, 0, 2, 2), m(macroStandby, 2, 0, 0, 0, 3),
			m(macroStandby, 5, 0), m(macroStandby, 4, 2), m(macroStandby, 4, 0, 0, 0, 4), m(macroStandby, 3, 1), m(macroStandby, 3, 0),
			m(macroReserve, 0, 6, 0),
		}},
		// A lease through all its states, twice over, and legacy leases.
		{false, [][]byte{
			m(macroCreateNamespace, users, 2, 0, 0), m(macroCreateNamespace, users, 2, 1, 0), m(macroCreateNamespace, ns2, 0, 2, 0),
			m(macroLease, acquire, users, w0, 0, 0, 0, 1, 1, 1), m(macroLease, acquire, users, w0, 0, 0, 0, 1, 1, 1), // idempotent
			m(macroLease, renew, users, w0, 0, 0, 0, 0, 2, 2), m(macroLease, renew, users, w0, 1, 0, 0, 0, 2, 2),
			m(macroLease, expire, users, w0, 0, 1), m(macroLease, expire, users, w0, 0, 0, 0, 0, 0, 3),
			m(macroLease, recycle, users, w0, 0, 0), m(macroLease, acquire, users, w0, 0, 0, 1, 2, 3, 4),
			m(macroLease, acquire, users, w0, 0, 0, 0), m(macroLease, acquire, users, w0, 0, 0, 3),
			m(macroLease, release, users, w0, 0, 0), m(macroLease, revoke, users, w1, 2), m(macroLease, steal, users),
			m(macroLegacy, 0, users, 0, 0, 1, 1, 5), m(macroLegacy, 1, users, w2, 0, 0, 0, 6), m(macroLegacy, 2, users, w2, 0, 0, 0, 7),
			m(macroLegacy, 0, users, 0, 0, 0, 0, 20), m(macroLegacy, 2, users, w1, 1, 0, 0, 30),
			m(macroLease, recycle, users, w1, 0, 0), m(macroLease, acquire, users, 0, 0, 0, 0, 0, 0, 40),
		}},
		// A shard namespace and chosen acquires (issue #16): granted,
		// retried, refused while held and resting, granted after the
		// recycle; an unchosen and an out-of-range acquire refused.
		{false, [][]byte{
			m(macroCreateNamespace, ns2, 3, 0, 0, 1), m(macroCreateNamespace, ns2, 3, 0, 0, 0),
			m(macroLease, acquire, ns2, w1, 0, 0, 0, 1, 1, 1, 1), m(macroLease, acquire, ns2, w1, 0, 0, 0, 1, 1, 1, 1),
			m(macroLease, acquire, ns2, w1, 0, 0, 1, 2, 1, 1, 1), m(macroLease, acquire, ns2, w0, 0, 0, 0, 0, 0, 0, 0),
			m(macroLease, release, ns2, w1, 0, 0), m(macroLease, acquire, ns2, w1, 0, 0, 1, 2, 1, 2, 1),
			m(macroLease, recycle, ns2, w1, 0, 0), m(macroLease, acquire, ns2, w1, 0, 0, 1, 2, 1, 3, 1),
			m(macroLease, acquire, ns2, 0, 0, 0, 1, 2, 1, 3, 1),
		}},
		// Restores: the v4 fixture into an empty state, its ended leases
		// recycled and granted again, then restores that are refused.
		{false, [][]byte{
			m(macroRestore, 0, 1, 1), m(macroLease, recycle, users, w0), m(macroLease, recycle, users, w1), m(macroLease, recycle, users, w2),
			m(macroLease, acquire, users, 0), m(macroLease, acquire, users, 0), m(macroReserve, 0, 2, 0), m(macroRestore, 0, 1, 2),
			m(macroRestore, 5), m(macroRestore, 3), m(macroRestore, 4),
		}},
		// A backup with a free worker id, freed at a higher index than the
		// new cluster's grant of it.
		{false, [][]byte{m(macroRestore, 1, 0, 0), m(macroLease, acquire, users, 0)}},
		// An empty state's own backup, then the v1 fixture; bad advances.
		{false, [][]byte{m(macroRestore, 0, 2), m(macroRestore, 0, 4), m(macroRestore, 5), m(macroRestore, 2, 3), m(macroReserve, 0, 6, 1)}},
		// On the v4 fixture's state (a lease in each state).
		{true, [][]byte{
			m(macroLease, renew, users, w1), m(macroLease, expire, users, w2), m(macroLease, recycle, users, w2), m(macroLease, acquire, users, 0, 0, 0, 1),
			m(macroLegacy, 0, users, 0, 0, 2, 0, 200), m(macroReserve, 0, 3, 1), m(macroRestore, 0, 1), m(macroCreateNamespace, users, 3),
		}},
		{false, append(raw, corrupt...)},
	}
}
