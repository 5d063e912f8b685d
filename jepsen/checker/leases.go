package checker

import (
	"fmt"
	"sort"
)

// Lease checks. A worker-id lease is a promise of exclusivity: while a
// generator holds worker id w, nobody else issues Snowflake IDs under w, so
// IDs of two generators never collide. Its token fences the holder and only
// grows. An acquire carries a request id, so that a client that lost the
// answer can retry without taking a second worker id.

// violations collects what a checker found: the first maxExamples examples
// and when the earliest violation became visible.
type violations struct {
	first    int64 // -1: none
	examples []Violation
}

func newViolations() *violations { return &violations{first: -1} }

// note records a violation that became visible at seen (ns).
func (vs *violations) note(seen int64, v Violation) {
	if vs.first < 0 || seen < vs.first {
		vs.first = seen
	}
	if len(vs.examples) < maxExamples {
		v.SeenAtMs = ms(seen)
		vs.examples = append(vs.examples, v)
	}
}

// verdict is valid (nothing noted), the examples, and when the first one
// became visible (0 if none).
func (vs *violations) verdict() (bool, []Violation, float64) {
	if vs.first < 0 {
		return true, nil, 0
	}
	return false, vs.examples, ms(vs.first)
}

// grantSlack is the margin, when judging whether a lease was still held,
// for the server's timers (and, in old histories judged by expires_ms, for
// the harness's wall clock against the cluster's: same host, one clock, up
// to the time the answer took to be read).
const grantSlack = 100 // ms

// heldAt reports whether g's lease was certainly still held at at (ns on
// the run's monotonic clock; atWall is the harness's wall clock then, in
// ms), and for how many ms more. A lease lasts its TTL from the request
// that granted it, and that request was sent no earlier than the request
// id's first attempt; so, whatever any server's wall clock reads, it is
// held at least until that attempt's invocation plus the TTL (a new leader
// may only make it last longer). Histories without the TTL fall back to
// the lease's expires_ms on the cluster's clock.
func (g *grant) heldAt(at, atWall int64) (bool, float64) {
	if ttl := g.ref.TTLMs; ttl > 0 {
		left := ms(g.firstInvoke+ttl*1_000_000-at) - grantSlack
		return left > 0, left + grantSlack
	}
	left := g.ref.ExpiresMs - atWall - grantSlack
	return left > 0, float64(left + grantSlack)
}

// LeaseResult: lease acquires were idempotent per request id, and tokens only
// grew in real time.
type LeaseResult struct {
	Valid bool `json:"valid"`
	// Acquires counts the ok acquire answers, Grants the distinct request
	// ids answered ok (one lease each), Resends the deliberate second
	// sends answered ok, Releases the ok releases.
	Acquires int `json:"acquires"`
	Grants   int `json:"grants"`
	Resends  int `json:"resends"`
	Releases int `json:"releases"`
	// NotIdempotent counts ok answers to a request id that name another
	// lease than its first ok answer while that lease was still held;
	// TokenRegressions counts grants whose token is not above a grant that
	// completed before they were invoked.
	NotIdempotent    int `json:"not_idempotent"`
	TokenRegressions int `json:"token_regressions"`
	// DoubleGrants counts grants of a worker id made while another
	// request id certainly still held it (granted before, neither
	// expired nor released yet).
	DoubleGrants int         `json:"double_grants"`
	Examples     []Violation `json:"examples,omitempty"`
	FirstSeenMs  float64     `json:"first_seen_ms,omitempty"`
}

// grant is the lease one request id obtained.
type grant struct {
	key         string // cluster + namespace
	ref         *Op    // its first ok answer
	firstInvoke int64  // the first attempt's invocation
	okComplete  int64  // the first ok answer's completion
	releasedAt  int64  // the first release attempt's invocation, -1: none
}

func wallComplete(o *Op) int64 { return o.WallMs + (o.Complete-o.Invoke+999_999)/1_000_000 }

func clusterName(c string) string {
	if c == "" {
		return "main"
	}
	return c
}

// CheckLeases checks the raw lease acquires of every cluster and namespace:
//
//   - idempotency: every ok answer to one request id names the same worker
//     id and token as its first ok answer, as long as that lease was still
//     held when the later answer was made (it completed within the TTL of
//     the request id's first attempt: see heldAt); the harness never
//     releases a lease before it is done sending its request id;
//   - tokens only grow: a grant whose request id was first sent after
//     another grant of the same namespace had been answered ok has a
//     strictly greater token;
//   - one holder per worker id: a grant of worker id w must not complete
//     while another request id certainly holds w: that one was answered
//     ok before the new request id was first sent, its lease could not
//     have expired when the new grant completed (heldAt), and no release
//     of it that may have taken effect (answered ok, or unknown) had been
//     sent yet: a release refused, or never sent because its node was
//     down, leaves the lease held until its TTL runs out.
//
// No check reads a server's wall clock (except in histories recorded
// before the TTL was): the clock nemesis steps them.
func CheckLeases(ops []Op) LeaseResult {
	r := LeaseResult{Valid: true}
	vs := newViolations()
	note := vs.note
	byReq := map[string][]*Op{}
	var reqs []string
	released := map[string]int64{} // request key -> first release attempt
	for i := range ops {
		o := &ops[i]
		switch {
		case o.F == FRelease:
			if o.Outcome == OK {
				r.Releases++
			}
			if o.Outcome == Fail {
				// Refused (409: the server does not hold it; 401, ...)
				// or never sent (the node was down): it released
				// nothing, and the lease lasts until its TTL runs out.
				// A holder whose region is lost meets exactly this.
				continue
			}
			k := o.Cluster + "\x00" + o.Seq + "\x00" + o.RequestID
			if t, ok := released[k]; !ok || o.Invoke < t {
				released[k] = o.Invoke
			}
		case o.F == FAcquire && o.RequestID != "":
			k := o.Cluster + "\x00" + o.Seq + "\x00" + o.RequestID
			if byReq[k] == nil {
				reqs = append(reqs, k)
			}
			byReq[k] = append(byReq[k], o)
			if o.Outcome == OK && o.Malformed == "" {
				r.Acquires++
				if o.Resend {
					r.Resends++
				}
			}
		}
	}
	sort.Strings(reqs)
	var grants []grant
	for _, k := range reqs {
		att := byReq[k]
		g := grant{firstInvoke: att[0].Invoke}
		var oks []*Op
		for _, o := range att {
			g.firstInvoke = min(g.firstInvoke, o.Invoke)
			if o.Outcome == OK && o.Malformed == "" && o.LeaseWorker != nil {
				oks = append(oks, o)
			}
		}
		if len(oks) == 0 {
			continue
		}
		sort.Slice(oks, func(i, j int) bool { return oks[i].Complete < oks[j].Complete })
		g.ref, g.okComplete, g.key = oks[0], oks[0].Complete, oks[0].Cluster+"\x00"+oks[0].Seq
		g.releasedAt = -1
		if t, ok := released[k]; ok {
			g.releasedAt = t
		}
		grants = append(grants, g)
		for _, o := range oks[1:] {
			if o.worker() == g.ref.worker() && o.Token == g.ref.Token {
				continue
			}
			held, left := g.heldAt(o.Complete, wallComplete(o))
			if !held {
				continue // the first lease may have expired: a new one is allowed
			}
			r.NotIdempotent++
			b := ref(g.ref)
			note(o.Complete, Violation{Seq: o.Seq, A: ref(o), B: &b, Detail: fmt.Sprintf(
				"%s cluster: request id %q was answered worker %d token %d, then (%.0f ms before that lease could expire) worker %d token %d",
				clusterName(o.Cluster), o.RequestID, g.ref.worker(), g.ref.Token, left, o.worker(), o.Token)})
		}
	}
	r.Grants = len(grants)
	byWorker := map[string][]*grant{}
	for i := range grants {
		g := &grants[i]
		k := g.key + "\x00" + fmt.Sprint(g.ref.worker())
		byWorker[k] = append(byWorker[k], g)
	}
	for _, k := range sortedKeys(byWorker) {
		gs := byWorker[k]
		sort.Slice(gs, func(i, j int) bool { return gs[i].okComplete < gs[j].okComplete })
		for j, b := range gs {
			for _, a := range gs[:j] {
				// a held w before b was asked for, could not have expired
				// when b was granted, and had not been released.
				live, left := a.heldAt(b.okComplete, wallComplete(b.ref))
				held := a.okComplete < b.firstInvoke && live && (a.releasedAt < 0 || a.releasedAt > b.okComplete)
				if !held {
					continue
				}
				r.DoubleGrants++
				bb := ref(a.ref)
				note(b.okComplete, Violation{Seq: b.ref.Seq, A: ref(b.ref), B: &bb, Detail: fmt.Sprintf(
					"%s cluster: worker %d was granted to request %q (token %d) while request %q still held it (token %d, %.0f ms before it could expire, not released)",
					clusterName(b.ref.Cluster), b.ref.worker(), b.ref.RequestID, b.ref.Token, a.ref.RequestID, a.ref.Token, left)})
				break
			}
		}
	}
	per := map[string][]grant{}
	for _, g := range grants {
		per[g.key] = append(per[g.key], g)
	}
	for _, key := range sortedKeys(per) {
		gs := per[key]
		byDone := append([]grant(nil), gs...)
		sort.Slice(byDone, func(i, j int) bool { return byDone[i].okComplete < byDone[j].okComplete })
		sort.Slice(gs, func(i, j int) bool { return gs[i].firstInvoke < gs[j].firstInvoke })
		var top *grant // the highest token among grants completed so far
		di := 0
		for i := range gs {
			g := &gs[i]
			for ; di < len(byDone) && byDone[di].okComplete < g.firstInvoke; di++ {
				if top == nil || byDone[di].ref.Token > top.ref.Token {
					top = &byDone[di]
				}
			}
			if top != nil && g.ref.Token <= top.ref.Token {
				r.TokenRegressions++
				b := ref(top.ref)
				note(g.ref.Complete, Violation{Seq: g.ref.Seq, A: ref(g.ref), B: &b, Detail: fmt.Sprintf(
					"%s cluster: lease worker %d token %d (request %q) was first asked for %.3f ms after worker %d got token %d (request %q), yet its token is not greater",
					clusterName(g.ref.Cluster), g.ref.worker(), g.ref.Token, g.ref.RequestID, ms(g.firstInvoke-top.okComplete),
					top.ref.worker(), top.ref.Token, top.ref.RequestID)})
			}
		}
	}
	r.Valid, r.Examples, r.FirstSeenMs = vs.verdict()
	return r
}

// SnowflakeResult: no Snowflake ID was issued twice, each generator's IDs
// increased, and no worker id had two holders at once.
type SnowflakeResult struct {
	Valid      bool  `json:"valid"`
	IDs        int64 `json:"ids"`
	Generators int   `json:"generators"`
	// Tenures are the stretches in which one generator issued under one
	// worker id (a lease, or consecutive leases of the same id).
	Tenures int `json:"tenures"`
	// Leases counts the leases the generators were seen to acquire.
	Leases        int         `json:"leases"`
	Duplicates    int64       `json:"duplicates"`
	NonIncreasing int64       `json:"non_increasing"`
	Overlaps      int         `json:"overlapping_tenures"`
	Examples      []Violation `json:"examples,omitempty"`
	FirstSeenMs   float64     `json:"first_seen_ms,omitempty"`
	// TenureList is every tenure, for the report (at most 200).
	TenureList []Tenure `json:"tenure_list,omitempty"`
}

// Tenure is one generator's use of one worker id: the Snowflake timestamps
// (ms since the namespace's epoch) of its first and last ID, and the real
// time from the first Next to the last.
type Tenure struct {
	Session   string  `json:"session"`
	Worker    int64   `json:"worker"`
	Token     uint64  `json:"token,omitempty"`
	IDs       int64   `json:"ids"`
	FirstTick int64   `json:"first_tick"`
	LastTick  int64   `json:"last_tick"`
	FromMs    float64 `json:"from_ms"`
	ToMs      float64 `json:"to_ms"`
	seen      int64
	opFirst   *Op
	opLast    *Op
}

// CheckSnowflake checks the IDs of the Snowflake generators (snowflake ops
// of the main cluster):
//
//   - uniqueness: all IDs sorted, no two equal;
//   - each generator's IDs strictly increase (the SDK's promise, in the
//     order its Next calls returned them);
//   - exclusivity: a generator's IDs under one worker id form a tenure
//     (consecutive IDs with that worker id); two tenures of one worker id
//     by two generators must not overlap in time. Time is the IDs' own
//     timestamps: the generators run in one process on one clock, so two
//     tenures whose timestamps interleave issued under the same worker id at
//     the same moment, which is what the lease forbids (and what makes
//     duplicates possible).
func CheckSnowflake(ops []Op) SnowflakeResult {
	r := SnowflakeResult{Valid: true}
	vs := newViolations()
	note := vs.note
	bySession := map[string][]*Op{}
	var total int
	for i := range ops {
		o := &ops[i]
		switch {
		case o.Cluster != "":
		case o.F == FSFLease && o.Outcome == OK:
			r.Leases++
		case o.F == FSnowflake && o.Outcome == OK && len(o.IDs) > 0:
			bySession[o.Session] = append(bySession[o.Session], o)
			total += len(o.IDs)
		}
	}
	r.Generators = len(bySession)
	type idAt struct {
		id int64
		op *Op
	}
	all := make([]idAt, 0, total)
	var tenures []*Tenure
	for _, s := range sortedKeys(bySession) {
		bs := bySession[s]
		sort.SliceStable(bs, func(i, j int) bool { return bs[i].Invoke < bs[j].Invoke })
		last, lastOp := int64(-1), (*Op)(nil)
		var cur *Tenure
		for _, o := range bs {
			tsShift := o.SeqBits + o.WorkerBits
			wmask := int64(1)<<o.WorkerBits - 1
			for _, id := range o.IDs {
				all = append(all, idAt{id, o})
				r.IDs++
				if id <= last {
					r.NonIncreasing++
					b := ref(lastOp)
					note(o.Complete, Violation{Seq: o.Seq, A: ref(o), B: &b, Detail: fmt.Sprintf(
						"generator %s returned %d after %d: its IDs must strictly increase", s, id, last)})
				}
				last, lastOp = id, o
				w := (id >> o.SeqBits) & wmask
				tick := id >> tsShift
				if cur == nil || cur.Worker != w {
					cur = &Tenure{Session: s, Worker: w, FirstTick: tick, LastTick: tick, FromMs: ms(o.Invoke), opFirst: o}
					tenures = append(tenures, cur)
				}
				cur.IDs++
				cur.FirstTick, cur.LastTick = min(cur.FirstTick, tick), max(cur.LastTick, tick)
				cur.ToMs, cur.opLast, cur.seen = ms(o.Complete), o, o.Complete
				if o.Token != 0 && cur.Token == 0 {
					cur.Token = o.Token
				}
			}
		}
	}
	r.Tenures = len(tenures)
	sort.Slice(all, func(i, j int) bool { return all[i].id < all[j].id })
	for i := 1; i < len(all); i++ {
		if all[i].id == all[i-1].id {
			r.Duplicates++
			a, b := all[i].op, all[i-1].op
			bb := ref(b)
			note(max(a.Complete, b.Complete), Violation{Seq: a.Seq, A: ref(a), B: &bb, Detail: fmt.Sprintf(
				"Snowflake ID %d issued twice (generators %s and %s)", all[i].id, a.Session, b.Session)})
		}
	}
	byWorker := map[int64][]*Tenure{}
	for _, t := range tenures {
		byWorker[t.Worker] = append(byWorker[t.Worker], t)
	}
	workers := make([]int64, 0, len(byWorker))
	for w := range byWorker {
		workers = append(workers, w)
	}
	sort.Slice(workers, func(i, j int) bool { return workers[i] < workers[j] })
	for _, w := range workers {
		ts := byWorker[w]
		sort.Slice(ts, func(i, j int) bool { return ts[i].FirstTick < ts[j].FirstTick })
		var cover *Tenure // the tenure reaching furthest so far
		for _, t := range ts {
			if cover != nil && t.Session != cover.Session && t.FirstTick <= cover.LastTick {
				r.Overlaps++
				b := ref(cover.opLast)
				note(max(t.seen, cover.seen), Violation{Seq: t.opFirst.Seq, A: ref(t.opFirst), B: &b, Detail: fmt.Sprintf(
					"worker %d was used by %s (token %d, ticks %d..%d, %.0f..%.0f ms) and by %s (token %d, ticks %d..%d, %.0f..%.0f ms) at the same time",
					w, cover.Session, cover.Token, cover.FirstTick, cover.LastTick, cover.FromMs, cover.ToMs,
					t.Session, t.Token, t.FirstTick, t.LastTick, t.FromMs, t.ToMs)})
			}
			if cover == nil || t.LastTick > cover.LastTick {
				cover = t
			}
		}
	}
	for _, t := range tenures {
		if len(r.TenureList) >= 200 {
			break
		}
		r.TenureList = append(r.TenureList, *t)
	}
	r.Valid, r.Examples, r.FirstSeenMs = vs.verdict()
	return r
}
