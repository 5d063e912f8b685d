package checker

import (
	"slices"
	"strings"
	"testing"
)

// nsf is a node-snowflake request to node over [inv, cmp] ms answered with
// IDs of worker w at the given ticks (sequence numbers from seq0 up).
func nsf(idx int64, node, proto string, inv, cmp float64, w int64, seq0 int64, ticks ...int64) Op {
	o := Op{Type: "op", Index: idx, F: FNodeSnowflake, Node: node, Seq: "jep-nodesf", Protocol: proto,
		Invoke: int64(inv * float64(msNs)), Complete: int64(cmp * float64(msNs)), Outcome: OK,
		LeaseWorker: &w, SeqBits: 12, WorkerBits: 10, Count: int64(len(ticks))}
	for i, tk := range ticks {
		o.IDs = append(o.IDs, tk<<22|w<<12|(seq0+int64(i)))
	}
	return o
}

// nsfAudit holds grants (holder, worker, token, seen at ms, stamped at
// timeMs) and one pass begun at passMs.
func nsfAudit(passMs float64, grants ...AuditRecord) *Audit {
	return &Audit{Type: "audit", Leases: grants, Polls: []AuditPoll{{StartNs: int64(passMs * float64(msNs)), EndNs: int64(passMs*float64(msNs)) + 1}}}
}

func nsfGrant(node string, w int64, tok uint64, seenMs float64, timeMs int64) AuditRecord {
	return AuditRecord{Kind: AuditKindLease, Namespace: "jep-nodesf", Holder: "ticketd/" + node, WorkerID: w, Token: tok,
		SeenNs: int64(seenMs * float64(msNs)), TimeMs: timeMs}
}

func nsfFloor(node string, w, grantedMs, floorTick int64) LeaseFloor {
	return LeaseFloor{Namespace: "jep-nodesf", WorkerID: w, Holder: "ticketd/" + node, GrantedMs: grantedMs, FloorMs: floorTick - 1, FloorTick: floorTick}
}

func TestNodeSnowflake_ValidHistory(t *testing.T) {
	ops := []Op{
		nsf(1, "n1", "http", 0, 5, 0, 0, 100, 100, 101),
		nsf(2, "n1", "resp", 3, 8, 0, 5, 100, 102), // overlaps op 1: any order
		nsf(3, "n1", "http", 9, 10, 0, 0, 110),
		nsf(4, "n2", "http", 1, 2, 1, 0, 100), // another worker id: its own order
		// n1's lease of worker 0 ended; n2 got it, floor at tick 150.
		nsf(5, "n2", "resp", 20000, 20001, 0, 0, 160, 161),
		{Type: "op", F: FNodeSnowflake, Node: "n3", Protocol: "http", Outcome: Unknown, Err: "clock-behind"},
		{Type: "op", F: FNodeSnowflake, Node: "n3", Protocol: "resp", Outcome: Fail, Err: "ERR workers-exhausted"},
	}
	a := nsfAudit(30000, nsfGrant("n1", 0, 10, 1000, 5), nsfGrant("n2", 1, 11, 1000, 6), nsfGrant("n2", 0, 30, 19000, 7))
	a.Floors = []LeaseFloor{nsfFloor("n2", 0, 7, 150)}
	r := CheckNodeSnowflake(ops, a)
	if !r.Valid {
		t.Fatalf("valid history judged invalid: %+v", r.Examples)
	}
	if r.IDs != 9 || r.Tenures != 3 || r.Floors != 1 || r.Unattributed != 0 || r.Nodes != 2 || r.Errors["clock-behind"] != 1 || r.Requests["resp"][Fail] != 1 {
		t.Fatalf("figures: %+v", r)
	}
}

func TestNodeSnowflake_Duplicate(t *testing.T) {
	ops := []Op{nsf(1, "n1", "http", 0, 5, 0, 0, 100), nsf(2, "n2", "resp", 0, 5, 0, 0, 100)}
	r := CheckNodeSnowflake(ops, nil)
	if r.Valid || r.Duplicates != 1 || r.Unattributed != 2 {
		t.Fatalf("duplicate not caught: %+v", r)
	}
}

func TestNodeSnowflake_OutOfOrderInTenure(t *testing.T) {
	ops := []Op{nsf(1, "n1", "http", 0, 5, 0, 0, 100), nsf(2, "n1", "resp", 6, 7, 0, 0, 99)}
	r := CheckNodeSnowflake(ops, nsfAudit(10000, nsfGrant("n1", 0, 10, 1, 5)))
	if r.Valid || r.OutOfOrder != 1 {
		t.Fatalf("out of order not caught: %+v", r)
	}
	if q := QuickCheck(ops); q != "" {
		t.Fatalf("QuickCheck looks at other ops: %s", q)
	}
}

// A node's new tenure of a worker id that ignores its floor: its IDs lie
// below the earlier tenure's, even when no request of one was answered
// before a request of the other was sent.
func TestNodeSnowflake_IgnoredFloor(t *testing.T) {
	ops := []Op{
		nsf(1, "n1", "http", 0, 5000, 0, 0, 500), // slow: overlaps everything below
		nsf(2, "n2", "http", 10, 20, 0, 0, 300),
		nsf(3, "n2", "http", 30, 40, 0, 0, 301),
	}
	a := nsfAudit(30000, nsfGrant("n1", 0, 10, 1, 5), nsfGrant("n2", 0, 30, 9, 7))
	a.Floors = []LeaseFloor{nsfFloor("n2", 0, 7, 501)}
	r := CheckNodeSnowflake(ops, a)
	if r.Valid || r.BelowEarlierTenure != 2 || r.BelowFloor != 2 || r.OutOfOrder != 0 || r.BelowEarlierServed != 0 {
		t.Fatalf("ignored floor not caught as such: %+v", r)
	}
}

// A node that serves past its lease: a request of its tenure sent after
// the next holder of the worker id served.
func TestNodeSnowflake_ServedAfterLease(t *testing.T) {
	ops := []Op{
		nsf(1, "n1", "http", 0, 5, 0, 0, 100),
		nsf(2, "n2", "http", 10000, 10001, 0, 0, 200),
		nsf(3, "n1", "resp", 10002, 10003, 0, 0, 199), // old lease, its own clock behind n2's
	}
	a := nsfAudit(30000, nsfGrant("n1", 0, 10, 1, 5), nsfGrant("n2", 0, 30, 9000, 7))
	a.Floors = []LeaseFloor{nsfFloor("n2", 0, 7, 150)}
	r := CheckNodeSnowflake(ops, a)
	if r.Valid || r.AfterLease != 1 || r.BelowEarlierServed != 1 || r.PastEnd != 1 {
		t.Fatalf("serving after the lease not caught: %+v", r)
	}
	if r.FirstSeenMs != 10003 {
		t.Fatalf("first seen %.0f ms, want 10003", r.FirstSeenMs)
	}
}

// Requests the audit has not been read past are left out of the tenure
// checks, not put in a tenure they may not belong to.
func TestNodeSnowflake_PendingAttribution(t *testing.T) {
	ops := []Op{nsf(1, "n1", "http", 0, 5, 0, 0, 100), nsf(2, "n1", "http", 10, 11, 0, 0, 101)}
	r := CheckNodeSnowflake(ops, nsfAudit(8, nsfGrant("n1", 0, 10, 1, 5)))
	if !r.Valid || r.Unattributed != 1 || r.Tenures != 1 {
		t.Fatalf("pending request: %+v", r)
	}
}

// A node that serves past its lease while the harness holds its worker id:
// the raw acquire's answer is the moment by which the later lease existed.
func TestNodeSnowflake_ServedAfterRawGrant(t *testing.T) {
	w := int64(0)
	ops := []Op{
		nsf(1, "n1", "http", 0, 5, 0, 0, 100),
		{Type: "op", Index: 2, F: FAcquire, Seq: "jep-nodesf", RequestID: "r1", Invoke: 9000 * msNs, Complete: 9001 * msNs, Outcome: OK, LeaseWorker: &w, Token: 30},
		nsf(3, "n1", "http", 9002, 9003, 0, 0, 9000),
	}
	r := CheckNodeSnowflake(ops, nsfAudit(30000, nsfGrant("n1", 0, 10, 1, 5)))
	if r.Valid || r.AfterLease != 1 || r.RawGrants != 1 || r.BelowEarlierServed != 0 {
		t.Fatalf("serving after a raw grant not caught: %+v", r)
	}
}

// After a clock step forward the FSM's lease stamps stand still: a node's
// two grants of one worker id carry the same granted_ms, and each floor
// goes to the grant the audit showed by the time its listing was read.
func TestNodeSnowflake_FloorsOfGrantsWithOneStamp(t *testing.T) {
	ops := []Op{
		nsf(1, "n1", "http", 100, 101, 0, 0, 200),
		nsf(2, "n1", "http", 20000, 20001, 0, 0, 900),
	}
	a := nsfAudit(30000, nsfGrant("n1", 0, 10, 50, 7), nsfGrant("n1", 0, 40, 19000, 7))
	f1, f2 := nsfFloor("n1", 0, 7, 150), nsfFloor("n1", 0, 7, 800)
	f1.SeenNs, f2.SeenNs = 60*msNs, 19010*msNs
	a.Floors = []LeaseFloor{f1, f2}
	r := CheckNodeSnowflake(ops, a)
	if !r.Valid || r.Floors != 2 || r.TenureList[0].FloorTick != 150 || r.TenureList[1].FloorTick != 800 {
		t.Fatalf("floors of one stamp: %+v", r)
	}
}

// named is an answer that names its lease by the grant's audit sequence
// number (lease_grant_seq, issue 47).
func named(o Op, grantSeq uint64) Op {
	o.GrantSeq = grantSeq
	return o
}

// nsfSeq is nsfGrant with the record's audit sequence number.
func nsfSeq(seq uint64, node string, w int64, tok uint64, seenMs float64, timeMs int64) AuditRecord {
	g := nsfGrant(node, w, tok, seenMs, timeMs)
	g.Seq = seq
	return g
}

// TestNodeSnowflake_AuditReadLate_NamedAnswersAttributedExactly is issue
// 47's INVALID 10-minute run in small: node n5 held worker 2 (token 77804)
// until the kill of every node at 267.9 s; the worker id rested and went
// back to n5 as token 81825 (floor tick 831243, the first lease's end
// bound) at about 282.0 s, while the leader was being killed, so the
// harness read that grant in the audit only at 285.5 s. n5's answers at
// 282.2-282.36 s were made under the new lease. The timed rule (the grant
// the audit showed by the completion plus 3 s) put them in the earlier
// tenure and reported them past its end bound; the answers' own names put
// them where they belong, and the RESP request among them (which names
// nothing) goes with the named answers around it.
func TestNodeSnowflake_AuditReadLate_NamedAnswersAttributedExactly(t *testing.T) {
	const w = 2
	ops := []Op{
		nsf(1, "n5", "http", 265900, 265905, w, 0, 827254),
		nsf(2, "n5", "http", 266400, 266405, w, 0, 827754),
		nsf(3, "n5", "http", 282200, 282205, w, 0, 842500),
		nsf(4, "n5", "resp", 282250, 282260, w, 0, 842550),
		nsf(5, "n5", "http", 282350, 282360, w, 0, 842589),
		nsf(6, "n5", "http", 283000, 283010, w, 0, 843245),
	}
	a := nsfAudit(290000, nsfSeq(4001, "n5", w, 77804, 250000, 5), nsfSeq(4500, "n5", w, 81825, 285500, 9))
	a.Floors = []LeaseFloor{nsfFloor("n5", w, 9, 831243)}

	// The history as recorded before issue 47 (no names): the timed rule
	// finds what the run reported.
	old := CheckNodeSnowflake(ops, a)
	if old.Valid || old.PastEnd == 0 || !strings.Contains(old.Examples[0].Detail, "lie at or past tick 831243, the floor of the later tenure 81825") {
		t.Fatalf("the timed rule on the issue's shape: %+v", old)
	}

	for i, g := range []uint64{4001, 4001, 4500, 0, 4500, 4500} {
		ops[i].GrantSeq = g
	}
	r := CheckNodeSnowflake(ops, a)
	if !r.Valid || r.Unattributed != 0 || r.Tenures != 2 || r.TenureList[1].Requests != 4 || r.PastEnd != 0 {
		t.Fatalf("named answers: %+v", r)
	}

	// Strictness kept: a request of the earlier tenure (it names it) that
	// lies past the later tenure's floor is still past its end bound.
	late := named(nsf(7, "n5", "http", 282300, 282301, w, 10, 842560), 4001)
	if r := CheckNodeSnowflake(append(slices.Clone(ops), late), a); r.Valid || r.PastEnd != 1 {
		t.Fatalf("an answer of the earlier tenure past the later floor: %+v", r)
	}
}

// TestNodeSnowflake_NamedAttribution_Edges: an answer that names another
// holder's grant is a violation; one naming a grant not read yet, and an
// unnamed one whose neighbours disagree or are missing, are left out.
func TestNodeSnowflake_NamedAttribution_Edges(t *testing.T) {
	a := nsfAudit(30000, nsfSeq(10, "n1", 0, 100, 1, 5), nsfSeq(11, "n2", 1, 101, 1, 5), nsfSeq(20, "n1", 0, 200, 9000, 7))
	ops := []Op{
		named(nsf(1, "n1", "http", 0, 5, 0, 0, 100), 10),
		named(nsf(2, "n1", "http", 10, 11, 0, 0, 101), 11), // n2's grant of worker 1
	}
	if r := CheckNodeSnowflake(ops, a); r.Valid || r.Misnamed != 1 || !strings.Contains(r.Examples[0].Detail, `held by "ticketd/n2"`) {
		t.Fatalf("misnamed lease: %+v", r)
	}
	ops = []Op{
		named(nsf(1, "n1", "http", 0, 5, 0, 0, 100), 10),
		nsf(2, "n1", "resp", 6, 7, 0, 0, 101), // between tenures 100 and 200: left out
		named(nsf(3, "n1", "http", 9500, 9501, 0, 0, 900), 20),
		nsf(4, "n1", "resp", 9600, 9601, 0, 0, 901),            // nothing named after it
		named(nsf(5, "n1", "http", 9700, 9701, 0, 0, 902), 99), // a grant the tail has not read
	}
	if r := CheckNodeSnowflake(ops, a); !r.Valid || r.Unattributed != 3 || r.Tenures != 2 {
		t.Fatalf("edges: %+v", r)
	}
}
