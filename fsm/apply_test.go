package fsm_test

import (
	"math"
	"strings"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/ticketd/ticketd/fsm"
)

// The type byte is part of the on-disk log format: values are appended, never
// renumbered. Changing one of these breaks every log already written.
func TestCommandType_ValuesAreFrozen(t *testing.T) {
	for _, tc := range []struct {
		typ  fsm.CommandType
		want uint8
	}{
		{fsm.CommandCreateSequence, 1},
		{fsm.CommandReserveBlock, 2},
		{fsm.CommandSetMember, 3},
		{fsm.CommandRemoveMember, 4},
		{fsm.CommandCreateNamespace, 5},
		{fsm.CommandAcquireLease, 6},
		{fsm.CommandRenewLease, 7},
		{fsm.CommandReleaseLease, 8},
		{fsm.CommandRestoreBackup, 9},
		{fsm.CommandLease, 10},
		{fsm.CommandReserveBlocks, 11},
		{fsm.CommandRaiseSequence, 12},
		{fsm.CommandCreateNamespaceV2, 13},
		{fsm.CommandLeaseV2, 14},
		{fsm.IgnoreUnknownTypeFlag, 0x80},
	} {
		if uint8(tc.typ) != tc.want {
			t.Errorf("%s = %d, want %d (command types are append-only)", tc.typ, uint8(tc.typ), tc.want)
		}
	}
}

func TestEncode_TypeByteThenJSONBody(t *testing.T) {
	for _, tc := range []struct {
		data []byte
		typ  fsm.CommandType
		body string
	}{
		{fsm.EncodeCreateSequence(fsm.CreateSequence{Name: "a", Start: 1, Max: 9}), fsm.CommandCreateSequence, `{"name":"a","start":1,"max":9}`},
		{fsm.EncodeReserveBlock(fsm.ReserveBlock{Name: "a", Count: 5, Min: 2}), fsm.CommandReserveBlock, `{"name":"a","count":5,"min":2}`},
		{fsm.EncodeSetMember(fsm.SetMember{ID: "n1", RaftAddr: "r:1", HTTPAddr: "h:1"}), fsm.CommandSetMember, `{"id":"n1","raft_addr":"r:1","http_addr":"h:1"}`},
		{fsm.EncodeRemoveMember(fsm.RemoveMember{ID: "n1"}), fsm.CommandRemoveMember, `{"id":"n1"}`},
	} {
		if got := fsm.CommandType(tc.data[0]); got != tc.typ {
			t.Errorf("type byte = %s, want %s", got, tc.typ)
		}
		if got := string(tc.data[1:]); got != tc.body {
			t.Errorf("%s body = %s, want %s", tc.typ, got, tc.body)
		}
	}
}

func TestApply_CreateSequence_NewSequenceIsCreatedWithMarkBelowStart(t *testing.T) {
	a := newApplier(t)
	r := a.mustCreate("orders", 100, 1000)
	want := fsm.Sequence{Name: "orders", Start: 100, Max: 1000, Issued: 99}
	if r.Sequence != want {
		t.Fatalf("CreateResult.Sequence = %+v, want %+v", r.Sequence, want)
	}
	if got := a.seq("orders"); got != want {
		t.Fatalf("Sequence() = %+v, want %+v", got, want)
	}
	if next, ok := want.Next(); !ok || next != 100 {
		t.Fatalf("Next() = %d, %v; want 100, true", next, ok)
	}
	if got := want.Remaining(); got != 901 {
		t.Fatalf("Remaining() = %d, want 901", got)
	}
}

func TestApply_CreateSequence_SameSettings_IsIdempotentAndKeepsMark(t *testing.T) {
	a := newApplier(t)
	a.mustCreate("orders", 1, 1000)
	a.mustReserve("orders", 10, 1)

	resp := a.create("orders", 1, 1000)
	r, ok := resp.(fsm.CreateResult)
	if !ok {
		t.Fatalf("second create: got %#v, want a CreateResult", resp)
	}
	if r.Created {
		t.Fatalf("second create with the same settings: Created = true, want false")
	}
	want := fsm.Sequence{Name: "orders", Start: 1, Max: 1000, Issued: 10}
	if r.Sequence != want || a.seq("orders") != want {
		t.Fatalf("second create: result %+v, state %+v; want both %+v (mark kept)", r.Sequence, a.seq("orders"), want)
	}
}

func TestApply_CreateSequence_DifferentSettings_ConflictStateUnchanged(t *testing.T) {
	a := newApplier(t)
	a.mustCreate("orders", 1, 1000)
	a.mustReserve("orders", 10, 1)
	before := a.seq("orders")

	for _, tc := range []struct {
		name       string
		start, max int64
	}{
		{"other start", 2, 1000},
		{"other max", 1, 999},
		{"both", 5, math.MaxInt64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantErr(t, a.create("orders", tc.start, tc.max), fsm.ErrSequenceConflict)
			if got := a.seq("orders"); got != before {
				t.Fatalf("after conflict: %+v, want %+v", got, before)
			}
		})
	}
}

func TestApply_CreateSequence_InvalidNameOrBounds_RejectedStateUnchanged(t *testing.T) {
	for _, tc := range []struct {
		name       string
		seq        string
		start, max int64
	}{
		{"empty name", "", 1, 10},
		{"name too long", strings.Repeat("a", 65), 1, 10},
		{"slash in name", "a/b", 1, 10},
		{"space in name", "a b", 1, 10},
		{"non-ASCII name", "café", 1, 10},
		{"start zero", "s", 0, 10},
		{"start negative", "s", -5, 10},
		{"start MinInt64", "s", math.MinInt64, 10},
		{"max below start", "s", 10, 9},
		{"max negative", "s", 1, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newApplier(t)
			a.mustCreate("existing", 1, 10)
			before := stateOf(a.f)

			wantErr(t, a.create(tc.seq, tc.start, tc.max), fsm.ErrInvalidCommand)

			after := stateOf(a.f)
			before.Index, before.Term = after.Index, after.Term // the entry itself was applied
			assertSameState(t, "after invalid create", after, before)
		})
	}
}

func TestApply_CreateSequence_BoundaryNamesAndBounds_Accepted(t *testing.T) {
	a := newApplier(t)
	a.mustCreate(strings.Repeat("z", 64), 1, 1)
	a.mustCreate("A-z_0.9", math.MaxInt64, math.MaxInt64)
	a.mustCreate("x", 1, math.MaxInt64)
}

func TestApply_Reserve_InvalidCountOrMin_RejectedStateUnchanged(t *testing.T) {
	for _, tc := range []struct {
		name       string
		count, min int64
	}{
		{"count zero", 0, 0},
		{"count negative", -1, 1},
		{"min zero", 5, 0},
		{"min negative", 5, -1},
		{"min above count", 5, 6},
		{"count MinInt64", math.MinInt64, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newApplier(t)
			a.mustCreate("s", 1, 100)
			before := a.seq("s")
			wantErr(t, a.reserve("s", tc.count, tc.min), fsm.ErrInvalidCommand)
			if got := a.seq("s"); got != before {
				t.Fatalf("after invalid reserve: %+v, want %+v", got, before)
			}
		})
	}
}

func TestApply_Reserve_UnknownSequence_NotFound(t *testing.T) {
	a := newApplier(t)
	a.mustCreate("exists", 1, 100)
	before := a.seq("exists")
	wantErr(t, a.reserve("missing", 10, 1), fsm.ErrSequenceNotFound)
	if _, ok := a.f.Sequence("missing"); ok {
		t.Fatalf("reserve on an unknown sequence created it")
	}
	if got := a.seq("exists"); got != before {
		t.Fatalf("other sequence changed: %+v, want %+v", got, before)
	}
}

func TestApply_Reserve_GrantsMinOfCountAndRemaining(t *testing.T) {
	a := newApplier(t)
	a.mustCreate("s", 1, 10)

	b := a.mustReserve("s", 7, 1)
	if b.Sequence != "s" || b.First != 1 || b.Last != 7 || b.Len() != 7 {
		t.Fatalf("first block = %+v, want s [1, 7]", b)
	}
	// 3 left: a count of 5 with min 3 gets the 3.
	b = a.mustReserve("s", 5, 3)
	if b.First != 8 || b.Last != 10 || b.Len() != 3 {
		t.Fatalf("second block = %+v, want [8, 10] (min(count=5, remaining=3))", b)
	}
	s := a.seq("s")
	if s.Issued != 10 || s.Remaining() != 0 {
		t.Fatalf("after draining: %+v, want Issued=10 Remaining=0", s)
	}
	if _, ok := s.Next(); ok {
		t.Fatalf("Next() ok on an exhausted sequence")
	}
}

func TestApply_Reserve_FewerThanMinLeft_ExhaustedStateUnchanged(t *testing.T) {
	a := newApplier(t)
	a.mustCreate("s", 1, 10)
	a.mustReserve("s", 7, 7) // 3 left

	before := a.seq("s")
	wantErr(t, a.reserve("s", 5, 4), fsm.ErrSequenceExhausted)
	wantErr(t, a.reserve("s", 4, 4), fsm.ErrSequenceExhausted)
	if got := a.seq("s"); got != before {
		t.Fatalf("after exhausted reserve: %+v, want %+v", got, before)
	}
	// A smaller request still fits.
	if b := a.mustReserve("s", 5, 3); b.First != 8 || b.Last != 10 {
		t.Fatalf("block = %+v, want [8, 10]", b)
	}
	wantErr(t, a.reserve("s", 1, 1), fsm.ErrSequenceExhausted)
}

func TestApply_Reserve_BlockCarriesEntryIndexAndTerm(t *testing.T) {
	f := fsm.New()
	f.Apply(logEntry(3, 2, fsm.EncodeCreateSequence(fsm.CreateSequence{Name: "s", Start: 1, Max: 100})))
	resp := f.Apply(logEntry(17, 5, fsm.EncodeReserveBlock(fsm.ReserveBlock{Name: "s", Count: 4, Min: 1})))
	want := fsm.Block{Sequence: "s", First: 1, Last: 4, Index: 17, Term: 5}
	if resp != want {
		t.Fatalf("block = %#v, want %#v", resp, want)
	}
}

// A sequence whose max is math.MaxInt64, started close to it: reserving right
// up to the max must end exactly at MaxInt64, never wrap to negative IDs, and
// then report exhaustion.
func TestApply_ReserveNearMax_NeverWraps(t *testing.T) {
	const max = math.MaxInt64
	a := newApplier(t)
	a.mustCreate("edge", max-9, max) // 10 IDs

	if b := a.mustReserve("edge", 4, 1); b.First != max-9 || b.Last != max-6 {
		t.Fatalf("block 1 = [%d, %d], want [%d, %d]", b.First, b.Last, int64(max-9), int64(max-6))
	}
	if b := a.mustReserve("edge", 4, 4); b.First != max-5 || b.Last != max-2 {
		t.Fatalf("block 2 = [%d, %d], want [%d, %d]", b.First, b.Last, int64(max-5), int64(max-2))
	}
	// 2 left (MaxInt64-1 and MaxInt64): asking for at least 3 is refused and
	// changes nothing.
	before := a.seq("edge")
	wantErr(t, a.reserve("edge", 4, 3), fsm.ErrSequenceExhausted)
	if got := a.seq("edge"); got != before {
		t.Fatalf("after refused reserve: %+v, want %+v", got, before)
	}
	// A huge count gets exactly the 2 left, ending at MaxInt64.
	b := a.mustReserve("edge", math.MaxInt64, 1)
	if b.First != max-1 || b.Last != max || b.Len() != 2 {
		t.Fatalf("last block = [%d, %d] len %d, want [%d, %d] len 2", b.First, b.Last, b.Len(), int64(max-1), int64(max))
	}
	s := a.seq("edge")
	if s.Issued != max || s.Remaining() != 0 {
		t.Fatalf("after the last block: %+v, want Issued=MaxInt64 Remaining=0", s)
	}
	if next, ok := s.Next(); ok {
		t.Fatalf("Next() = %d, true on an exhausted sequence; want false", next)
	}
	for _, count := range []int64{1, 2, math.MaxInt64} {
		wantErr(t, a.reserve("edge", count, 1), fsm.ErrSequenceExhausted)
	}
	if got := a.seq("edge"); got != s {
		t.Fatalf("exhausted sequence changed: %+v, want %+v", got, s)
	}
}

func TestApply_ReserveSingleIDAtMaxInt64_GrantsItOnce(t *testing.T) {
	const max = math.MaxInt64
	a := newApplier(t)
	a.mustCreate("one", max, max)
	if b := a.mustReserve("one", math.MaxInt64, 1); b.First != max || b.Last != max {
		t.Fatalf("block = [%d, %d], want [MaxInt64, MaxInt64]", b.First, b.Last)
	}
	wantErr(t, a.reserve("one", 1, 1), fsm.ErrSequenceExhausted)
}

// The widest possible block: every ID from 1 to MaxInt64 in one entry.
func TestApply_ReserveWholeInt64Range_NoOverflow(t *testing.T) {
	a := newApplier(t)
	a.mustCreate("all", 1, math.MaxInt64)
	b := a.mustReserve("all", math.MaxInt64, math.MaxInt64)
	if b.First != 1 || b.Last != math.MaxInt64 || b.Len() != math.MaxInt64 {
		t.Fatalf("block = [%d, %d] len %d, want [1, MaxInt64] len MaxInt64", b.First, b.Last, b.Len())
	}
	wantErr(t, a.reserve("all", 1, 1), fsm.ErrSequenceExhausted)
}

func TestApply_NonCommandLogTypes_IgnoredStateUnchanged(t *testing.T) {
	a := newApplier(t)
	a.mustCreate("s", 1, 100)
	before := stateOf(a.f)

	// Data that would create a sequence, or panic, if it were applied.
	bodies := [][]byte{nil, {0xff, 'x'}, fsm.EncodeCreateSequence(fsm.CreateSequence{Name: "t", Start: 1, Max: 5})}
	for _, typ := range []raft.LogType{raft.LogNoop, raft.LogBarrier, raft.LogConfiguration, raft.LogAddPeerDeprecated, raft.LogRemovePeerDeprecated} {
		for _, data := range bodies {
			if resp := a.f.Apply(&raft.Log{Index: 50, Term: 9, Type: typ, Data: data}); resp != nil {
				t.Fatalf("%s entry: response %#v, want nil", typ, resp)
			}
		}
	}
	assertSameState(t, "after non-command entries", stateOf(a.f), before)
}

func TestApply_UnknownCommandType_Panics(t *testing.T) {
	for _, typ := range []byte{0, 18, 0x42, 0x7f} {
		f := fsm.New()
		msg := mustPanic(t, func() { f.Apply(logEntry(7, 1, []byte{typ, '{', '}'})) })
		if !strings.Contains(msg, "unknown command type") || !strings.Contains(msg, "index 7") {
			t.Errorf("type %d: panic %q should name the unknown type and the index", typ, msg)
		}
		assertUnlocked(t, f)
	}
}

func TestApply_UnknownTypeWithIgnoreFlag_SkippedStateUnchanged(t *testing.T) {
	a := newApplier(t)
	a.mustCreate("s", 1, 100)
	before := stateOf(a.f)

	for _, typ := range []byte{0x80, 0x92, 0xfe, 0xff} {
		for _, body := range []string{`{}`, `not json at all`, ``} {
			data := append([]byte{typ}, body...)
			if resp := a.f.Apply(logEntry(before.Index+1, 1, data)); resp != nil {
				t.Fatalf("type %#x: response %#v, want nil", typ, resp)
			}
		}
	}
	after := stateOf(a.f)
	if after.Index != before.Index+1 {
		t.Fatalf("LastApplied index = %d, want %d (a skipped entry still counts as applied)", after.Index, before.Index+1)
	}
	before.Index = after.Index
	assertSameState(t, "after ignorable entries", after, before)
}

// The flag is part of the type value, not stripped before dispatch (Nomad
// strips it): a known type with the flag set is an unknown, ignorable type.
// This pins the current convention; see DESIGN.md.
// As in Nomad, the flag is stripped before dispatch: a type this version
// knows is applied even with the flag set.
func TestApply_KnownTypeWithIgnoreFlag_IsApplied(t *testing.T) {
	a := newApplier(t)
	a.mustCreate("s", 1, 100)
	data := fsm.EncodeReserveBlock(fsm.ReserveBlock{Name: "s", Count: 5, Min: 1})
	data[0] |= byte(fsm.IgnoreUnknownTypeFlag)
	b, ok := a.apply(data).(fsm.Block)
	if !ok || b.First != 1 || b.Last != 5 {
		t.Fatalf("response %#v, want block 1..5", b)
	}
	if s := a.seq("s"); s.Issued != 5 {
		t.Fatalf("flagged reserve was not applied: %+v", s)
	}
}

func TestApply_UndecodableBody_Panics(t *testing.T) {
	types := []fsm.CommandType{fsm.CommandCreateSequence, fsm.CommandReserveBlock, fsm.CommandSetMember, fsm.CommandRemoveMember}
	// Bodies that no command type can decode.
	bodies := []string{``, `{`, `not json`, `{"name":"s","id":"n"} trailing`, `[1,2,3]`, `"a string"`, `42`}
	for _, typ := range types {
		for _, body := range bodies {
			f := fsm.New()
			data := append([]byte{byte(typ)}, body...)
			msg := mustPanic(t, func() { f.Apply(logEntry(9, 1, data)) })
			if !strings.Contains(msg, "cannot decode") || !strings.Contains(msg, "index 9") {
				t.Errorf("%s with body %q: panic %q should say it cannot decode and name the index", typ, body, msg)
			}
			assertUnlocked(t, f)
			if got := stateOf(f); len(got.Sequences) != 0 || len(got.Members) != 0 {
				t.Errorf("%s with body %q: state changed before the panic: %+v", typ, body, got)
			}
		}
	}
}

func TestApply_UndecodableBody_WrongFieldTypes_Panic(t *testing.T) {
	for _, tc := range []struct {
		typ  fsm.CommandType
		body string
	}{
		{fsm.CommandCreateSequence, `{"name":"s","start":"1","max":10}`},
		{fsm.CommandCreateSequence, `{"name":"s","start":1,"max":9223372036854775808}`},
		{fsm.CommandCreateSequence, `{"name":"s","start":1.5,"max":10}`},
		{fsm.CommandReserveBlock, `{"name":"s","count":1e3,"min":1}`},
		{fsm.CommandReserveBlock, `{"name":["s"],"count":1,"min":1}`},
		{fsm.CommandSetMember, `{"id":1}`},
		{fsm.CommandRemoveMember, `{"id":{}}`},
	} {
		f := fsm.New()
		mustPanic(t, func() { f.Apply(logEntry(1, 1, append([]byte{byte(tc.typ)}, tc.body...))) })
		assertUnlocked(t, f)
	}
}

func TestApply_EmptyData_Panics(t *testing.T) {
	for _, data := range [][]byte{nil, {}} {
		f := fsm.New()
		msg := mustPanic(t, func() { f.Apply(logEntry(4, 1, data)) })
		if !strings.Contains(msg, "empty") || !strings.Contains(msg, "index 4") {
			t.Errorf("panic %q should say the entry is empty and name the index", msg)
		}
		assertUnlocked(t, f)
	}
}

func TestApply_SetMemberAndRemoveMember(t *testing.T) {
	a := newApplier(t)
	set := func(id, raftAddr, httpAddr string) any {
		return a.apply(fsm.EncodeSetMember(fsm.SetMember{ID: id, RaftAddr: raftAddr, HTTPAddr: httpAddr}))
	}
	remove := func(id string) any { return a.apply(fsm.EncodeRemoveMember(fsm.RemoveMember{ID: id})) }

	for _, id := range []string{"n3", "n1", "n2"} {
		if resp := set(id, id+":7000", id+":8000"); resp != nil {
			t.Fatalf("set %s: %#v, want nil", id, resp)
		}
	}
	// Overwrite replaces the whole record.
	if resp := set("n2", "n2:7001", ""); resp != nil {
		t.Fatalf("overwrite n2: %#v, want nil", resp)
	}
	want := []fsm.Member{
		{ID: "n1", RaftAddr: "n1:7000", HTTPAddr: "n1:8000"},
		{ID: "n2", RaftAddr: "n2:7001", HTTPAddr: ""},
		{ID: "n3", RaftAddr: "n3:7000", HTTPAddr: "n3:8000"},
	}
	assertMembers(t, a.f, want)
	if m, ok := a.f.Member("n2"); !ok || m != want[1] {
		t.Fatalf("Member(n2) = %+v, %v; want %+v, true", m, ok, want[1])
	}

	before := stateOf(a.f)
	wantErr(t, set("", "x:1", "x:2"), fsm.ErrInvalidCommand)
	after := stateOf(a.f)
	before.Index = after.Index
	assertSameState(t, "after empty member id", after, before)

	if resp := remove("n2"); resp != nil {
		t.Fatalf("remove n2: %#v, want nil", resp)
	}
	if resp := remove("never-existed"); resp != nil {
		t.Fatalf("remove unknown: %#v, want nil (removal is idempotent)", resp)
	}
	assertMembers(t, a.f, []fsm.Member{want[0], want[2]})
	if _, ok := a.f.Member("n2"); ok {
		t.Fatalf("Member(n2) still found after removal")
	}
}

func assertMembers(t *testing.T, f *fsm.FSM, want []fsm.Member) {
	t.Helper()
	got := f.Members()
	if len(got) != len(want) {
		t.Fatalf("Members() = %+v, want %+v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("Members() = %+v, want %+v (sorted by ID)", got, want)
		}
	}
}

func TestApply_LastApplied_TracksEveryCommandEntryIncludingRejections(t *testing.T) {
	f := fsm.New()
	if i, term := f.LastApplied(); i != 0 || term != 0 {
		t.Fatalf("new FSM LastApplied = %d, %d; want 0, 0", i, term)
	}
	steps := []struct {
		index, term uint64
		data        []byte
	}{
		{1, 1, fsm.EncodeCreateSequence(fsm.CreateSequence{Name: "s", Start: 1, Max: 2})},
		{2, 1, fsm.EncodeReserveBlock(fsm.ReserveBlock{Name: "s", Count: 2, Min: 1})},
		{5, 2, fsm.EncodeReserveBlock(fsm.ReserveBlock{Name: "s", Count: 1, Min: 1})},    // exhausted
		{6, 2, fsm.EncodeReserveBlock(fsm.ReserveBlock{Name: "nope", Count: 1, Min: 1})}, // not found
		{7, 3, fsm.EncodeCreateSequence(fsm.CreateSequence{Name: "", Start: 1, Max: 2})}, // invalid
		{8, 3, fsm.EncodeSetMember(fsm.SetMember{ID: "n1", RaftAddr: "a", HTTPAddr: "b"})},
		{9, 4, []byte{0xFF, 'z'}}, // ignorable unknown type (0x7F with the flag)
	}
	for _, s := range steps {
		f.Apply(logEntry(s.index, s.term, s.data))
		if i, term := f.LastApplied(); i != s.index || term != s.term {
			t.Fatalf("after entry %d: LastApplied = %d, %d; want %d, %d", s.index, i, term, s.index, s.term)
		}
	}
	// Entries of other log types are not the FSM's: they do not move it.
	f.Apply(&raft.Log{Index: 10, Term: 4, Type: raft.LogNoop})
	if i, term := f.LastApplied(); i != 9 || term != 4 {
		t.Fatalf("after a noop entry: LastApplied = %d, %d; want 9, 4", i, term)
	}
}

func TestFSM_ReadMethods_ReturnCopiesSortedByName(t *testing.T) {
	a := newApplier(t)
	for _, n := range []string{"c", "a", "b"} {
		a.mustCreate(n, 1, 10)
	}
	seqs := a.f.Sequences()
	if len(seqs) != 3 || seqs[0].Name != "a" || seqs[1].Name != "b" || seqs[2].Name != "c" {
		t.Fatalf("Sequences() = %+v, want a, b, c", seqs)
	}
	seqs[0].Issued = 9
	s, _ := a.f.Sequence("b")
	s.Issued = 9
	if a.seq("a").Issued != 0 || a.seq("b").Issued != 0 {
		t.Fatalf("mutating a returned Sequence changed the FSM")
	}
	if _, ok := a.f.Sequence("zz"); ok {
		t.Fatalf("Sequence(zz) found")
	}
}

func TestSequence_NextAndRemaining(t *testing.T) {
	for _, tc := range []struct {
		s         fsm.Sequence
		next      int64
		ok        bool
		remaining int64
	}{
		{fsm.Sequence{Start: 1, Max: 10, Issued: 0}, 1, true, 10},
		{fsm.Sequence{Start: 1, Max: 10, Issued: 9}, 10, true, 1},
		{fsm.Sequence{Start: 1, Max: 10, Issued: 10}, 0, false, 0},
		{fsm.Sequence{Start: 1, Max: math.MaxInt64, Issued: 0}, 1, true, math.MaxInt64},
		{fsm.Sequence{Start: 1, Max: math.MaxInt64, Issued: math.MaxInt64 - 1}, math.MaxInt64, true, 1},
		{fsm.Sequence{Start: 1, Max: math.MaxInt64, Issued: math.MaxInt64}, 0, false, 0},
	} {
		next, ok := tc.s.Next()
		if next != tc.next || ok != tc.ok || tc.s.Remaining() != tc.remaining {
			t.Errorf("%+v: Next() = %d, %v, Remaining() = %d; want %d, %v, %d", tc.s, next, ok, tc.s.Remaining(), tc.next, tc.ok, tc.remaining)
		}
	}
}
