package fsm_test

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"os"
	"testing"

	"github.com/ticketd/ticketd/fsm"
)

// FuzzRestoreBackup feeds arbitrary bytes as a backup. Whatever the leader's
// check (ValidateBackup) accepts must apply as a restore entry on an empty
// state, and the state it leaves must survive a snapshot and its restore:
// raft panics when the FSM refuses a snapshot, so a backup that passed the
// check but left a state the FSM cannot restore would take a node down at
// its next restart. Nothing here may panic.
func FuzzRestoreBackup(f *testing.F) {
	for _, fx := range []string{fixtureV1, fixtureV2, fixtureV3, fixtureV4, fixtureV5} {
		if b, err := os.ReadFile(fx); err == nil {
			f.Add(b, int64(1000))
		}
	}
	f.Add([]byte("TKTDSNAP\x00\x00\x00\x03{}"), int64(1))
	f.Add([]byte("garbage"), int64(5))
	f.Fuzz(func(t *testing.T, backup []byte, advance int64) {
		if err := fsm.ValidateBackup(backup, advance); err != nil {
			a := newApplier(t)
			if _, ok := a.restoreBackup(backup, advance, t0).(error); !ok {
				t.Fatalf("the FSM applied a backup the leader refuses: %v", err)
			}
			return
		}
		a := newApplier(t)
		if _, ok := a.restoreBackup(backup, advance, t0).(fsm.RestoreResult); !ok {
			t.Fatalf("a backup that passed ValidateBackup was refused at apply: %v", a.restoreBackup(backup, advance, t0))
		}
		snap := persist(t, a.f)
		r := fsm.New()
		if err := r.Restore(io.NopCloser(bytes.NewReader(snap))); err != nil {
			t.Fatalf("the restored state's snapshot does not restore: %v", err)
		}
		if !bytes.Equal(persist(t, r), snap) {
			t.Fatal("snapshot → restore → snapshot changed the bytes")
		}
	})
}

// FuzzLeaseOps applies arbitrary lease operations (each a CommandLease body
// that decodes as JSON; an entry that does not decode panics by design) to a
// state with a lease in every state. Apply must answer with a lease or an
// error value, never panic; the state it leaves must survive a snapshot and
// its restore; and the uniqueness probe must stay clean.
func FuzzLeaseOps(f *testing.F) {
	for _, seed := range []string{
		`{"op":"acquire","namespace":"users","holder":"h","client_time_ms":9223372036854775807}`,
		`{"op":"renew","namespace":"users","worker_id":1,"token":5,"client_time_ms":-4}`,
		`{"op":"expire","namespace":"users","worker_id":0,"token":4,"version":4}`,
		`{"op":"recycle","namespace":"users","worker_id":-1,"token":0}`,
		`{"op":"revoke","namespace":"users","worker_id":3}`,
		`{"op":"steal"}`,
	} {
		f.Add([]byte(seed), []byte(`{"op":"acquire","namespace":"users","holder":"x"}`))
	}
	f.Fuzz(func(t *testing.T, first, second []byte) {
		st := fixtureV4State(t)
		index, _ := st.LastApplied()
		for _, body := range [][]byte{first, second} {
			var op fsm.LeaseOp
			if json.Unmarshal(body, &op) != nil {
				continue
			}
			index++
			switch resp := st.Apply(logEntry(index, 1, append([]byte{byte(fsm.CommandLease)}, body...))).(type) {
			case fsm.Lease, error:
			default:
				t.Fatalf("%s: answer %T %v", body, resp, resp)
			}
		}
		snap := persist(t, st)
		r := fsm.New()
		if err := r.Restore(io.NopCloser(bytes.NewReader(snap))); err != nil {
			t.Fatalf("the state after %q, %q does not restore: %v", first, second, err)
		}
		if rep := r.CheckAudit(); len(rep.Violations) != 0 {
			t.Fatalf("probe after %q, %q: %+v", first, second, rep.Violations)
		}
	})
}

// FuzzSnapshotRestore feeds arbitrary bytes to Restore over a state that is
// not empty (the v4 fixture's). Raft hands Restore whatever its snapshot
// store holds, and panics itself when Restore fails, so Restore must:
//   - never panic, and close its reader;
//   - agree with the leader's check of a backup (ValidateBackup), which
//     reads and validates with the same code;
//   - on an error, leave the state it had exactly as it was (atomic);
//   - on success, replace the whole state (a fresh FSM restored from the
//     same bytes persists the same bytes: nothing of the old state leaks)
//     with one that survives snapshot → restore → snapshot byte for byte
//     and on which Apply still answers without panicking.
func FuzzSnapshotRestore(f *testing.F) {
	known, err := os.ReadFile(fixtureV4)
	if err != nil {
		f.Fatal(err)
	}
	for _, fx := range []string{fixtureV1, fixtureV2, fixtureV3, fixtureV4, fixtureV5} {
		b, err := os.ReadFile(fx)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		for _, n := range []int{0, 7, 12, 13, len(b) / 2, len(b) - 2, len(b) - 1} {
			f.Add(b[:n])
		}
		f.Add(append(bytes.Clone(b), "{}"...)) // data after the state
	}
	for _, seed := range [][]byte{
		rawSnapshot("TKTDSNAP", 5, "{}"),
		rawSnapshot("TKTDSNAP", 0, "{}"),
		rawSnapshot("TKTDSNAP", 4, `{"last_index":1}`),
		rawSnapshot("TKTDSNAP", 1, `{"namespaces":[{"name":"n"}]}`),
		rawSnapshot("TKTDSNAP", 2, `{"token_floor":3}`),
		rawSnapshot("TKTDSNAP", 4, `{"sequences":[{"name":"s","start":1,"max":1,"issued":2}]}`),
		rawSnapshot("TKTDSNAP", 4, `{"unknown":1}`),
		rawSnapshot("TKTDSNAP", 4, `{"members":[{"id":"a"},{"id":"a"}]}`),
		rawSnapshot("XXXXSNAP", 4, "{}"),
		[]byte("garbage"),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		st := restore(t, known)
		before, changes := persist(t, st), st.LeaseChanges()
		rc := &trackingReader{Reader: bytes.NewReader(data)}
		err := st.Restore(rc)
		if !rc.closed {
			t.Fatal("Restore did not close its reader")
		}
		if vErr := fsm.ValidateBackup(data, 1); (vErr == nil) != (err == nil) {
			t.Fatalf("Restore says %v, the leader's check of a backup says %v", err, vErr)
		}
		if err != nil {
			if after := persist(t, st); !bytes.Equal(after, before) || st.LeaseChanges() != changes {
				t.Fatalf("a refused snapshot (%v) changed the state\nbefore: %s\n after: %s", err, before, after)
			}
			return
		}
		snap := persist(t, st)
		if fresh := restore(t, data); !bytes.Equal(persist(t, fresh), snap) {
			t.Fatalf("the state restored over another differs from the one restored into a fresh FSM\n%s\n%s", snap, persist(t, fresh))
		}
		if again := persist(t, restore(t, snap)); !bytes.Equal(again, snap) {
			t.Fatalf("snapshot → restore → snapshot changed the bytes\n%s\n%s", snap, again)
		}
		index, term := st.LastApplied()
		for _, s := range st.Sequences() {
			index++
			applyOrFail(t, st, logEntry(index, term+1, fsm.EncodeReserveBlock(fsm.ReserveBlock{Name: s.Name, Count: 1, Min: 1})))
		}
		for _, n := range st.Namespaces() {
			index++
			applyOrFail(t, st, logEntry(index, term+1, fsm.EncodeLeaseOp(fsm.LeaseOp{Op: fsm.LeaseOpAcquire, Namespace: n.Name, Holder: "fuzz"})))
		}
		_ = st.CheckAudit()
		_, _ = st.LeaseTimers()
	})
}

// FuzzNamespaceDecode takes Snowflake IDs apart with arbitrary layouts (those
// the namespace rules refuse are skipped: no namespace in any state has
// them), as GET /v1/inspect/snowflake does (Namespace.Decode, then
// FindLease). Decode must never panic, and its worker id and sequence
// always fit their bits, whatever the ID. For an ID the layout can produce
// (not negative, its tick's start a Unix millisecond an int64 holds),
// Decode gives a tick start inside [EpochMs, EndMs] and Compose gives the
// ID back from it and from every millisecond of its tick. The other way
// round, Decode(Compose(t, w, s)) gives t's tick, w and s for any time in
// the layout's range and any worker id and sequence that fit. And on a
// state where the namespace exists (if it could be created), FindLease on
// a decoded ID finds exactly the lease whose grant covers it.
//
// An ID the layout cannot produce gets only the first checks: its time may
// wrap. The rules allow layouts (61 timestamp bits and a 60 s tick, say)
// whose last ticks lie past the int64 milliseconds, and Decode(MaxInt64)
// under such a layout reports a time before the epoch.
func FuzzNamespaceDecode(f *testing.F) {
	n := testNamespace("ns")
	f.Add(n.EpochMs, n.TickMs, n.TimestampBits, n.WorkerBits, n.SequenceBits, n.MaxWorkers, int64(1)<<22|5<<12|7, t0+5, int64(0), int64(9))
	f.Add(int64(0), int64(60_000), uint8(61), uint8(1), uint8(1), int64(2), int64(math.MaxInt64), int64(math.MaxInt64), int64(-1), int64(-1))
	f.Add(int64(0), int64(1), uint8(1), uint8(1), uint8(61), int64(1), int64(math.MinInt64), int64(math.MinInt64), int64(1), int64(1))
	f.Add(int64(math.MaxInt64/2), int64(7), uint8(20), uint8(21), uint8(22), int64(1)<<21, int64(-1), int64(0), int64(math.MaxInt64), int64(math.MinInt64))
	f.Add(t0, int64(1000), uint8(31), uint8(16), uint8(16), int64(65536), int64(123456789), t0, int64(65535), int64(65535))
	f.Fuzz(func(t *testing.T, epochMs, tickMs int64, tsBits, workerBits, seqBits uint8, maxWorkers, id, timeMs, worker, seq int64) {
		n := fsm.Namespace{Name: "ns", EpochMs: epochMs, TimestampBits: tsBits, WorkerBits: workerBits, SequenceBits: seqBits,
			TickMs: tickMs, MaxWorkers: maxWorkers, LeaseTTLMs: 10_000, RecycleDelayMs: 20_000}
		if n.ValidateLayout() != nil {
			return
		}
		checkDecode(t, n, id)

		// A time in [EpochMs, EndMs], a worker id and a sequence that fit.
		span := uint64(n.EndMs() - n.EpochMs)
		tm := n.EpochMs + int64(uint64(timeMs)%(span+1))
		w, s := worker&(int64(1)<<workerBits-1), seq&(int64(1)<<seqBits-1)
		composed := n.Compose(tm, w, s)
		want := fsm.Decoded{TimeMs: n.EpochMs + (tm-n.EpochMs)/n.TickMs*n.TickMs, WorkerID: w, Sequence: s}
		if got := n.Decode(composed); composed < 0 || got != want {
			t.Fatalf("%+v: Compose(%d, %d, %d) = %d, which decodes to %+v, want %+v", n, tm, w, s, composed, got, want)
		}
		checkDecode(t, n, composed)

		// Inspection: the namespace as an entry stamped at its epoch
		// creates it (if the layout leaves 10 years from there), one lease
		// granted at tm.
		if n.ValidateAt(n.EpochMs) != nil {
			return
		}
		a := leaseApplier{newApplier(t)}
		if r, ok := a.create(n, n.EpochMs).(fsm.NamespaceResult); !ok || !r.Created {
			t.Fatalf("%+v passes the creation rules but the entry answers %v", n, a.create(n, n.EpochMs))
		}
		l := a.mustLease(fsm.LeaseOp{Op: fsm.LeaseOpAcquire, Namespace: "ns", Holder: "h", Stamp: stamp(tm)})
		for _, x := range []int64{composed, id} {
			d := n.Decode(x)
			rec, cur, held := a.f.FindLease("ns", d.WorkerID, d.TimeMs)
			covered := d.WorkerID == l.WorkerID && l.GrantedMs <= d.TimeMs
			if covered != (rec.Token != 0) || covered && (rec.Token != l.Token || cur != l || held != (d.TimeMs < l.EndMs())) {
				t.Fatalf("%+v: ID %d (%+v) with lease %+v: FindLease = %+v, %+v, %v", n, x, d, l, rec, cur, held)
			}
		}
	})
}

// checkDecode checks what Decode promises of id under layout n.
func checkDecode(t *testing.T, n fsm.Namespace, id int64) {
	t.Helper()
	d := n.Decode(id)
	if d.WorkerID < 0 || d.WorkerID >= int64(1)<<n.WorkerBits || d.Sequence < 0 || d.Sequence >= int64(1)<<n.SequenceBits {
		t.Fatalf("%+v: ID %d decodes to %+v: a field does not fit its bits", n, id, d)
	}
	tick := id >> (n.WorkerBits + n.SequenceBits)
	if id < 0 || tick > (math.MaxInt64-n.EpochMs)/n.TickMs {
		return // no generator can produce it: its time is not an int64 millisecond
	}
	if d.TimeMs < n.EpochMs || d.TimeMs > n.EndMs() || (d.TimeMs-n.EpochMs)%n.TickMs != 0 {
		t.Fatalf("%+v: ID %d decodes to %+v: not the start of a tick in [%d, %d]", n, id, d, n.EpochMs, n.EndMs())
	}
	if got := n.Compose(d.TimeMs, d.WorkerID, d.Sequence); got != id {
		t.Fatalf("%+v: ID %d decodes to %+v, which composes to %d", n, id, d, got)
	}
	if d.TimeMs <= math.MaxInt64-(n.TickMs-1) {
		if got := n.Compose(d.TimeMs+n.TickMs-1, d.WorkerID, d.Sequence); got != id {
			t.Fatalf("%+v: ID %d decodes to %+v; the tick's last millisecond composes to %d", n, id, d, got)
		}
	}
}
