package checker

import (
	"fmt"
	"sort"
	"strings"
)

// Server-made Snowflake IDs (issue #32): every node makes IDs of a
// namespace from its own worker-id lease, holder "ticketd/<node>", and
// answers POST /v1/namespaces/{name}/ids (and TICKETD.SNOWFLAKE over the
// Redis protocol) from memory. A node's lease of a worker id, one grant with
// its token, is a tenure. What the cluster promises of them:
//
//   - no ID twice, across every node and both protocols;
//   - the IDs of one worker id increase in real time: a request answered
//     before another was sent got lower IDs, whichever nodes and tenures
//     answered them. Within a tenure that is the generator's own order;
//     across tenures it is what the timestamp floor is for (a later
//     tenure's floor lies above everything the earlier ones could issue,
//     and its IDs lie above its floor) and what the lease is for (a node
//     stops before its worker id could go to anyone else);
//   - the IDs of a worker id's later tenure (by token) lie above every ID
//     of its earlier tenures, whatever the time they were asked for: the
//     floor, checked without real time, so that it also catches tenures
//     that ran at the same time;
//   - with the floor a tenure was handed (from the lease listings): its IDs
//     lie above it, and no earlier tenure's ID lies at or above it (that
//     floor is the earlier tenure's end bound, its holder's clock at its
//     last renewal plus the TTL: an ID past it was made after the lease
//     ended);
//   - no request of a tenure is sent after a request of a later tenure of
//     the same worker id was answered: its node served after its lease
//     ended.
//
// An answer carries its node and worker id and, since issue 47, names the
// lease its IDs were made under (lease_grant_seq: the audit sequence number
// of the lease's grant record, a public name where the token is the
// holder's capability). A request is put in the tenure its answer names,
// whatever the time; a RESP request, which names none, in the tenure that
// the same node's named answers of its worker id just before and just
// after it both name (attributeNamed). A request whose grant the harness
// has not read in the audit, or whose neighbours disagree, is left out of
// the tenure checks (Unattributed) and still takes part in the others.
// Histories recorded before answers named their lease are attributed by
// time, as they were then (attributeTimed).

// attributionSlack: see attributeTimed.
const attributionSlack = 3_000_000_000 // ns

// NodeSnowflakeResult is the verdict on the server-made Snowflake IDs.
type NodeSnowflakeResult struct {
	Valid bool `json:"valid"`
	// Requests counts requests by protocol and outcome; Errors the
	// failed and unknown ones by problem type (RESP: error prefix), e.g.
	// clock-behind, no-worker-lease, workers-exhausted under faults.
	Requests map[string]map[string]int `json:"requests,omitempty"`
	Errors   map[string]int            `json:"errors,omitempty"`
	IDs      int64                     `json:"ids"`
	Nodes    int                       `json:"nodes"`
	// Tenures are the node tenures requests were put in; Grants the lease
	// grants of the namespaces the audit showed (any holder); Floors how
	// many tenures' floors the lease listings showed.
	Tenures      int   `json:"tenures"`
	Grants       int   `json:"grants"`
	Floors       int   `json:"floors"`
	Unattributed int64 `json:"unattributed_requests"`
	// RawGrants counts the raw acquires of the nodes' worker ids the
	// harness made (--server-snowflake-lease-workers).
	RawGrants int `json:"raw_grants,omitempty"`
	// The violations, in IDs (Duplicates, BelowEarlierTenure, BelowFloor,
	// PastEnd) or in requests (OutOfOrder, BelowEarlierServed,
	// AfterLease).
	Duplicates         int64 `json:"duplicates"`
	OutOfOrder         int64 `json:"out_of_order"`
	BelowEarlierServed int64 `json:"below_earlier_served"`
	BelowEarlierTenure int64 `json:"below_earlier_tenure"`
	BelowFloor         int64 `json:"below_floor"`
	PastEnd            int64 `json:"past_end"`
	AfterLease         int64 `json:"after_lease"`
	// Misnamed counts answers that named a lease (lease_grant_seq) the
	// audit shows as another holder's, worker id's or namespace's.
	Misnamed    int64       `json:"misnamed_lease,omitempty"`
	Examples    []Violation `json:"examples,omitempty"`
	FirstSeenMs float64     `json:"first_seen_ms,omitempty"`
	// TenureList is every tenure, for the report (at most 200).
	TenureList []NodeTenure `json:"tenure_list,omitempty"`
}

// NodeTenure is one node's use of one lease: its IDs' ticks (since the
// namespace's epoch), the first tick its floor allowed (-1: not known) and
// the real time from its first request's invocation to its last's
// completion.
type NodeTenure struct {
	Namespace string  `json:"namespace"`
	Node      string  `json:"node"`
	Worker    int64   `json:"worker"`
	Token     uint64  `json:"token"`
	Requests  int     `json:"requests"`
	IDs       int64   `json:"ids"`
	FirstTick int64   `json:"first_tick"`
	LastTick  int64   `json:"last_tick"`
	FloorTick int64   `json:"floor_tick"`
	FromMs    float64 `json:"from_ms"`
	ToMs      float64 `json:"to_ms"`
	grantSeen int64
	lastDone  int64
	ops       []*Op
}

// nsReq is one request's IDs with its tenure's token (0: not attributed).
type nsReq struct {
	o      *Op
	token  uint64
	minID  int64
	maxID  int64
	tenure *NodeTenure
	// grant marks a raw acquire of the worker id (answered ok with token):
	// no IDs, only the moment by which the lease of token was granted.
	grant bool
}

func tick(o *Op, id int64) int64 { return id >> (o.SeqBits + o.WorkerBits) }

// CheckNodeSnowflake checks the node-snowflake operations of the main
// cluster against the lease grants of audit a (nil: no tenure checks).
func CheckNodeSnowflake(ops []Op, a *Audit) NodeSnowflakeResult {
	r := NodeSnowflakeResult{Valid: true, Requests: map[string]map[string]int{}, Errors: map[string]int{}}
	vs := newViolations()
	nodes := map[string]bool{}
	byWorker := map[string][]*nsReq{} // namespace/worker
	var reqs []*nsReq
	for i := range ops {
		o := &ops[i]
		if o.F != FNodeSnowflake || o.Cluster != "" {
			continue
		}
		if r.Requests[o.Protocol] == nil {
			r.Requests[o.Protocol] = map[string]int{OK: 0, Fail: 0, Unknown: 0}
		}
		r.Requests[o.Protocol][o.Outcome]++
		if o.Outcome != OK {
			if o.Err != "" {
				r.Errors[o.Err]++
			}
			continue
		}
		if o.Malformed != "" || len(o.IDs) == 0 || o.LeaseWorker == nil {
			continue // CheckWellFormed reports it
		}
		nodes[o.Node] = true
		q := &nsReq{o: o, minID: o.IDs[0], maxID: o.IDs[0]}
		for _, id := range o.IDs {
			q.minID, q.maxID = min(q.minID, id), max(q.maxID, id)
		}
		r.IDs += int64(len(o.IDs))
		reqs = append(reqs, q)
		k := fmt.Sprintf("%s/%d", o.Seq, *o.LeaseWorker)
		byWorker[k] = append(byWorker[k], q)
	}
	r.Nodes = len(nodes)
	// Raw acquires of the same namespaces (other holders taking the worker
	// ids the nodes let go): a node request of an earlier token sent after
	// one completed served after its lease ended.
	for i := range ops {
		o := &ops[i]
		if o.F != FAcquire || o.Cluster != "" || o.Outcome != OK || o.Malformed != "" || o.LeaseWorker == nil {
			continue
		}
		k := fmt.Sprintf("%s/%d", o.Seq, *o.LeaseWorker)
		if _, ok := byWorker[k]; ok {
			byWorker[k] = append(byWorker[k], &nsReq{o: o, token: o.Token, grant: true})
			r.RawGrants++
		}
	}

	// No ID twice, per namespace.
	type idAt struct {
		id int64
		o  *Op
	}
	all := map[string][]idAt{}
	for _, q := range reqs {
		for _, id := range q.o.IDs {
			all[q.o.Seq] = append(all[q.o.Seq], idAt{id, q.o})
		}
	}
	for _, ns := range sortedKeys(all) {
		ids := all[ns]
		sort.Slice(ids, func(i, j int) bool { return ids[i].id < ids[j].id })
		for i := 1; i < len(ids); i++ {
			if ids[i].id == ids[i-1].id {
				r.Duplicates++
				x, y := ids[i].o, ids[i-1].o
				b := ref(y)
				vs.note(max(x.Complete, y.Complete), Violation{Seq: ns, A: ref(x), B: &b, Detail: fmt.Sprintf(
					"ID %d served twice: by %s over %s and by %s over %s", ids[i].id, x.Node, x.Protocol, y.Node, y.Protocol)})
			}
		}
	}

	tenures := r.attribute(reqs, a, vs)

	for _, k := range sortedKeys(byWorker) {
		qs := byWorker[k]
		r.checkRealTime(k, qs, vs)
	}
	r.checkTenures(tenures, a, vs)
	for _, t := range tenures {
		if len(r.TenureList) >= 200 {
			break
		}
		r.TenureList = append(r.TenureList, *t)
	}
	r.Valid, r.Examples, r.FirstSeenMs = vs.verdict()
	return r
}

// auditKey is a holder's grants of one worker id.
type auditKey struct {
	ns, holder string
	worker     int64
}

// attribute puts each request in its node's tenure (see the package doc
// above) and returns the tenures, sorted by namespace, worker and token.
func (r *NodeSnowflakeResult) attribute(reqs []*nsReq, a *Audit, vs *violations) []*NodeTenure {
	if a == nil {
		r.Unattributed = int64(len(reqs))
		return nil
	}
	grants := map[auditKey][]AuditRecord{}
	for _, g := range a.Leases {
		k := auditKey{g.Namespace, g.Holder, g.WorkerID}
		grants[k] = append(grants[k], g)
		r.Grants++
	}
	for k := range grants {
		gs := grants[k]
		sort.Slice(gs, func(i, j int) bool { return gs[i].Token < gs[j].Token })
	}
	byToken := map[string]*NodeTenure{}
	var out []*NodeTenure
	put := func(q *nsReq, g AuditRecord) {
		o := q.o
		tk := fmt.Sprintf("%s/%d", o.Seq, g.Token)
		t := byToken[tk]
		if t == nil {
			t = &NodeTenure{Namespace: o.Seq, Node: o.Node, Worker: g.WorkerID, Token: g.Token, FloorTick: -1,
				FirstTick: tick(o, q.minID), LastTick: tick(o, q.maxID), FromMs: ms(o.Invoke), ToMs: ms(o.Complete), grantSeen: g.SeenNs}
			byToken[tk] = t
			out = append(out, t)
		}
		q.token, q.tenure = g.Token, t
		t.Requests++
		t.IDs += int64(len(o.IDs))
		t.FirstTick, t.LastTick = min(t.FirstTick, tick(o, q.minID)), max(t.LastTick, tick(o, q.maxID))
		t.FromMs, t.ToMs = min(t.FromMs, ms(o.Invoke)), max(t.ToMs, ms(o.Complete))
		t.ops = append(t.ops, o)
		t.lastDone = max(t.lastDone, o.Complete)
	}
	named := false
	for _, q := range reqs {
		named = named || q.o.GrantSeq != 0
	}
	if named {
		r.attributeNamed(reqs, a, put, vs)
	} else {
		r.attributeTimed(reqs, a, grants, put)
	}
	// Floors: a listing's lease is a grant of its worker id and holder
	// stamped with its GrantedMs. The stamps are the FSM's lease clock,
	// which a clock step forward holds still until real time catches up:
	// then a holder's successive grants of a worker id carry the same
	// stamp, and the listing that showed a floor tells which one by when
	// it was read (the grant the audit showed last by then, else the next).
	for _, f := range a.Floors {
		gs := grants[auditKey{f.Namespace, f.Holder, f.WorkerID}]
		var g *AuditRecord
		for i := range gs {
			if gs[i].TimeMs != f.GrantedMs {
				continue
			}
			if gs[i].SeenNs <= f.SeenNs || g == nil {
				g = &gs[i]
			}
			if gs[i].SeenNs > f.SeenNs {
				break
			}
		}
		if g == nil {
			continue
		}
		if t := byToken[fmt.Sprintf("%s/%d", g.Namespace, g.Token)]; t != nil && t.FloorTick < 0 {
			t.FloorTick = f.FloorTick
			r.Floors++
		}
	}
	r.Tenures = len(out)
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		if out[i].Worker != out[j].Worker {
			return out[i].Worker < out[j].Worker
		}
		return out[i].Token < out[j].Token
	})
	return out
}

// attributeNamed puts each request in the tenure its answer names (its
// lease's grant_seq, the audit sequence number of the grant record): no
// time decides. An answer that names a grant the audit tail has not read
// (or lost in a gap) is left unattributed; one that names a grant of
// another holder, worker id or namespace is a violation. A request whose
// answer names none (RESP) is put in a tenure only when the same node's
// named answers of its worker id just before it (completed before it was
// sent) and just after it (sent after it completed) name the same one: a
// node issues under one lease at a time and never takes an ended one up
// again, so it served this one under that lease too.
func (r *NodeSnowflakeResult) attributeNamed(reqs []*nsReq, a *Audit, put func(*nsReq, AuditRecord), vs *violations) {
	bySeq := map[uint64]AuditRecord{}
	for _, g := range a.Leases {
		bySeq[g.Seq] = g
	}
	type lane struct {
		ns, node string
		worker   int64
	}
	namedOf := map[lane][]*nsReq{}
	var unnamed []*nsReq
	for _, q := range reqs {
		o := q.o
		if o.GrantSeq == 0 {
			unnamed = append(unnamed, q)
			continue
		}
		g, ok := bySeq[o.GrantSeq]
		if !ok {
			r.Unattributed++
			continue
		}
		if g.Namespace != o.Seq || g.Holder != "ticketd/"+o.Node || g.WorkerID != *o.LeaseWorker {
			r.Misnamed++
			vs.note(max(o.Complete, g.SeenNs), Violation{Seq: o.Seq, A: ref(o), Detail: fmt.Sprintf(
				"node %s answered IDs of worker %d naming the lease of grant_seq %d, which the audit shows as worker %d of %q held by %q (token %d)",
				o.Node, *o.LeaseWorker, o.GrantSeq, g.WorkerID, g.Namespace, g.Holder, g.Token)})
			continue
		}
		put(q, g)
		l := lane{o.Seq, o.Node, *o.LeaseWorker}
		namedOf[l] = append(namedOf[l], q)
	}
	for _, qs := range namedOf {
		sort.Slice(qs, func(i, j int) bool { return qs[i].o.Complete < qs[j].o.Complete })
	}
	for _, u := range unnamed {
		o := u.o
		qs := namedOf[lane{o.Seq, o.Node, *o.LeaseWorker}]
		var before, after *nsReq
		for _, q := range qs {
			if q.o.Complete < o.Invoke {
				before = q
			}
			if q.o.Invoke > o.Complete && (after == nil || q.o.Invoke < after.o.Invoke) {
				after = q
			}
		}
		if before == nil || after == nil || before.token != after.token {
			r.Unattributed++
			continue
		}
		put(u, bySeq[before.o.GrantSeq])
	}
}

// attributeTimed is the attribution of histories recorded before answers
// named their lease (issue 47): a request is put in the tenure of its node
// and worker id whose grant the harness read in the audit by the request's
// completion plus attributionSlack, once a pass through the audit began
// after the request completed. An audit read late (its node slow to apply,
// or no leader to read from) puts a request in the tenure before its own.
func (r *NodeSnowflakeResult) attributeTimed(reqs []*nsReq, a *Audit, grants map[auditKey][]AuditRecord, put func(*nsReq, AuditRecord)) {
	// The audit was read past t once a pass began after it.
	lastStart := int64(-1)
	for _, p := range a.Polls {
		lastStart = max(lastStart, p.StartNs)
	}
	for _, q := range reqs {
		o := q.o
		gs := grants[auditKey{o.Seq, "ticketd/" + o.Node, *o.LeaseWorker}]
		if len(gs) == 0 || lastStart < o.Complete {
			// No pass has begun since it was answered: the grant it was
			// served under may not have been read yet.
			r.Unattributed++
			continue
		}
		g := gs[0]
		for _, c := range gs {
			if c.SeenNs <= o.Complete+attributionSlack {
				g = c
			}
		}
		put(q, g)
	}
}

// checkRealTime checks one worker id's requests (key: namespace/worker):
// a request sent after another was answered got only higher IDs, and no
// request of a tenure was sent after one of a later tenure was answered.
func (r *NodeSnowflakeResult) checkRealTime(k string, qs []*nsReq, vs *violations) {
	byComplete := append([]*nsReq(nil), qs...)
	sort.Slice(byComplete, func(i, j int) bool { return byComplete[i].o.Complete < byComplete[j].o.Complete })
	byInvoke := append([]*nsReq(nil), qs...)
	sort.Slice(byInvoke, func(i, j int) bool { return byInvoke[i].o.Invoke < byInvoke[j].o.Invoke })
	var top, late *nsReq // the answered request with the highest ID, and with the highest token
	j := 0
	for _, x := range byInvoke {
		for j < len(byComplete) && byComplete[j].o.Complete < x.o.Invoke {
			y := byComplete[j]
			if !y.grant && (top == nil || y.maxID > top.maxID) {
				top = y
			}
			if y.token != 0 && (late == nil || y.token > late.token) {
				late = y
			}
			j++
		}
		if x.grant {
			continue
		}
		if top != nil && x.minID <= top.maxID {
			b := ref(top.o)
			what := "a request answered before it was sent"
			if x.tenure != nil && x.tenure == top.tenure {
				r.OutOfOrder++
				what = "a request of the same tenure answered before it was sent"
			} else {
				r.BelowEarlierServed++
				if top.tenure != nil && x.tenure != nil {
					what = fmt.Sprintf("a request of tenure %d (node %s) answered before it was sent, in tenure %d", top.token, top.o.Node, x.token)
				}
			}
			vs.note(x.o.Complete, Violation{Seq: x.o.Seq, A: ref(x.o), B: &b, Detail: fmt.Sprintf(
				"worker %s: node %s served %d..%d (%s) at or below %d, served by %s over %s in %s", k, x.o.Node, x.minID, x.maxID, x.o.Protocol, top.maxID, top.o.Node, top.o.Protocol, what)})
		}
		if late != nil && x.token != 0 && x.token < late.token {
			r.AfterLease++
			b := ref(late.o)
			by := "node " + late.o.Node + " had served under"
			if late.grant {
				by = "the harness had been granted (request " + late.o.RequestID + ")"
			}
			vs.note(x.o.Complete, Violation{Seq: x.o.Seq, A: ref(x.o), B: &b, Detail: fmt.Sprintf(
				"worker %s: node %s served under its lease of token %d after %s the later lease of token %d: it served after its lease ended",
				k, x.o.Node, x.token, by, late.token)})
		}
	}
}

// checkTenures checks each worker id's tenures in token order: each one's
// IDs above every earlier one's and above its own floor, and no earlier
// one's at or above a later one's floor.
func (r *NodeSnowflakeResult) checkTenures(ts []*NodeTenure, a *Audit, vs *violations) {
	for i := 0; i < len(ts); {
		j := i
		for j < len(ts) && ts[j].Namespace == ts[i].Namespace && ts[j].Worker == ts[i].Worker {
			j++
		}
		group := ts[i:j]
		var high *NodeTenure // the earlier tenure with the highest tick
		for k, t := range group {
			seen := func(o *Op, other *NodeTenure) int64 {
				s := max(o.Complete, t.grantSeen)
				if other != nil {
					s = max(s, other.grantSeen, other.lastDone)
				}
				return s
			}
			if high != nil && t.FirstTick <= high.LastTick {
				for _, o := range t.ops {
					n := countTicks(o, func(tk int64) bool { return tk <= high.LastTick })
					if n == 0 {
						continue
					}
					r.BelowEarlierTenure += n
					vs.note(seen(o, high), Violation{Seq: o.Seq, A: ref(o), B: ptrRef(high.ops[len(high.ops)-1]), Detail: fmt.Sprintf(
						"worker %d: %d IDs of node %s's tenure %d have timestamps at or below tick %d of the earlier tenure %d (node %s): the floor did not keep them apart",
						t.Worker, n, t.Node, t.Token, high.LastTick, high.Token, high.Node)})
				}
			}
			if t.FloorTick > 0 {
				for _, o := range t.ops {
					if n := countTicks(o, func(tk int64) bool { return tk < t.FloorTick }); n > 0 {
						r.BelowFloor += n
						vs.note(seen(o, nil), Violation{Seq: o.Seq, A: ref(o), Detail: fmt.Sprintf(
							"worker %d: %d IDs of node %s's tenure %d lie below its timestamp floor (first tick allowed %d)", t.Worker, n, t.Node, t.Token, t.FloorTick)})
					}
				}
				for _, e := range group[:k] {
					for _, o := range e.ops {
						if n := countTicks(o, func(tk int64) bool { return tk >= t.FloorTick }); n > 0 {
							r.PastEnd += n
							vs.note(seen(o, t), Violation{Seq: o.Seq, A: ref(o), B: ptrRef(t.ops[0]), Detail: fmt.Sprintf(
								"worker %d: %d IDs of node %s's tenure %d lie at or past tick %d, the floor of the later tenure %d (node %s): its lease's end bound; served after its lease ended",
								t.Worker, n, e.Node, e.Token, t.FloorTick, t.Token, t.Node)})
						}
					}
				}
			}
			if high == nil || t.LastTick > high.LastTick {
				high = t
			}
		}
		i = j
	}
}

func ptrRef(o *Op) *OpRef {
	b := ref(o)
	return &b
}

func countTicks(o *Op, bad func(int64) bool) int64 {
	var n int64
	for _, id := range o.IDs {
		if bad(tick(o, id)) {
			n++
		}
	}
	return n
}

// Summary is the result in one line.
func (r NodeSnowflakeResult) Summary() string {
	var req []string
	for _, p := range sortedKeys(r.Requests) {
		m := r.Requests[p]
		req = append(req, fmt.Sprintf("%s %d ok/%d fail/%d unknown", p, m[OK], m[Fail], m[Unknown]))
	}
	var errs []string
	for _, e := range sortedKeys(r.Errors) {
		errs = append(errs, fmt.Sprintf("%s %d", e, r.Errors[e]))
	}
	return fmt.Sprintf("%d IDs from %d nodes (%s; errors: %s), %d tenures of %d grants, %d floors known, %d requests unattributed; %d IDs twice, %d requests out of order in a tenure, %d below IDs served before they were sent, %d IDs below an earlier tenure's, %d below their floor, %d past their lease's end bound, %d requests after a later tenure served, %d answers naming a lease not theirs",
		r.IDs, r.Nodes, strings.Join(req, ", "), orNone(strings.Join(errs, ", ")), r.Tenures, r.Grants, r.Floors, r.Unattributed,
		r.Duplicates, r.OutOfOrder, r.BelowEarlierServed, r.BelowEarlierTenure, r.BelowFloor, r.PastEnd, r.AfterLease, r.Misnamed)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
