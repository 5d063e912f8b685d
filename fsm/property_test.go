package fsm_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/ticketd/ticketd/fsm"
)

var (
	propSeed  = flag.Uint64("fsm.seed", 0, "seed for TestProperty_* (0: the fixed default seeds)")
	propSteps = flag.Int("fsm.steps", 4000, "log entries per TestProperty_* run")
)

// propSeeds are the fixed seeds every run covers; -fsm.seed=N replays one.
func propSeeds() []uint64 {
	if *propSeed != 0 {
		return []uint64{*propSeed}
	}
	return []uint64{1, 0x5eed, 20240601}
}

// tracked is what the test knows about one sequence from the responses alone.
type tracked struct {
	start, max int64
	issued     int64 // high-water mark the responses imply
	lastBlock  int64 // Last of the latest block, start-1 before any
	blocks     int
}

// gen produces a random but reproducible log over a handful of sequences,
// with bounds chosen so that some sequences run out (small max) and some sit
// at the very top of int64.
type gen struct {
	rng   *rand.Rand
	names []string
	// created remembers the settings each name was first created with, so
	// that a repeat create can use them (idempotent) or not (conflict).
	created map[string][2]int64
	fresh   int // names handed out so far, for fresh sequence names
	index   uint64
	term    uint64
}

func newGen(seed uint64) *gen {
	return &gen{
		rng:     rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		names:   []string{"orders", "tickets", "tiny", "edge", "big", "never-created"},
		created: make(map[string][2]int64),
		term:    1,
	}
}

func (g *gen) bounds() (start, max int64) {
	r := g.rng
	switch r.IntN(5) {
	case 0: // small: runs out after a few blocks
		start = 1 + r.Int64N(1000)
		return start, start + r.Int64N(60)
	case 1: // at the top of int64
		start = math.MaxInt64 - r.Int64N(200)
		return start, math.MaxInt64
	case 2: // unbounded
		return 1 + r.Int64N(1_000_000), math.MaxInt64
	case 3: // a single ID
		start = 1 + r.Int64N(math.MaxInt64-1)
		return start, start
	default:
		start = 1 + r.Int64N(100)
		return start, start + r.Int64N(5000)
	}
}

func (g *gen) next() *raft.Log {
	r := g.rng
	g.index++
	if r.IntN(50) == 0 {
		g.term++
	}
	l := &raft.Log{Index: g.index, Term: g.term, Type: raft.LogCommand}
	name := g.names[r.IntN(len(g.names))]
	switch p := r.IntN(100); {
	case p < 12: // create
		if name == "never-created" || r.IntN(4) == 0 {
			// Retire a name from the handful in play and create a fresh
			// sequence, so that exhausted ones do not take over the run.
			g.fresh++
			i := r.IntN(len(g.names) - 1) // never-created is last; keep it
			g.names[i] = fmt.Sprintf("seq-%d", g.fresh)
			name = g.names[i]
		}
		start, max := g.bounds()
		if prev, ok := g.created[name]; ok && r.IntN(2) == 0 {
			start, max = prev[0], prev[1] // idempotent repeat
		}
		if r.IntN(20) == 0 { // invalid bounds or name
			switch r.IntN(3) {
			case 0:
				start = -r.Int64N(3)
			case 1:
				max = start - 1
			default:
				name = "bad name!"
			}
		} else if _, ok := g.created[name]; !ok {
			g.created[name] = [2]int64{start, max}
		}
		l.Data = fsm.EncodeCreateSequence(fsm.CreateSequence{Name: name, Start: start, Max: max})
	case p < 60: // reserve, one sequence per entry
		c := g.blockRequest(name)
		l.Data = fsm.EncodeReserveBlock(fsm.ReserveBlock{Name: c.Name, Count: c.Count, Min: c.Min})
	case p < 80: // reserve for several sequences in one entry
		var c fsm.ReserveBlocks
		n := 1 + r.IntN(2*len(g.names)) // names repeat within a batch
		if r.IntN(60) == 0 {
			n = 0 // refused whole
		}
		for range n {
			c.Requests = append(c.Requests, g.blockRequest(g.names[r.IntN(len(g.names))]))
		}
		if r.IntN(3) == 0 {
			c.Stamp = fsm.Stamp{NowMs: r.Int64N(1 << 40), Leader: "n1"}
		}
		l.Data = fsm.EncodeReserveBlocks(c)
	case p < 88:
		id := fmt.Sprintf("n%d", r.IntN(5))
		if r.IntN(30) == 0 {
			id = ""
		}
		l.Data = fsm.EncodeSetMember(fsm.SetMember{ID: id, RaftAddr: id + ":7000", HTTPAddr: fmt.Sprintf("%s:%d", id, r.IntN(100))})
	case p < 91:
		l.Data = fsm.EncodeRemoveMember(fsm.RemoveMember{ID: fmt.Sprintf("n%d", r.IntN(6))})
	case p < 94: // raise: below, at, just above or far above the mark, past max, invalid
		at := int64(1)
		if c, ok := g.created[name]; ok {
			switch r.IntN(6) {
			case 0:
				at = c[0] + r.Int64N(max(1, min(c[1]-c[0], 100)))
			case 1:
				at = c[1]
			case 2:
				at = c[1] - r.Int64N(max(1, min(c[1]-c[0], 1000)))
			case 3:
				at = c[0] + (c[1]-c[0])/2
			case 4:
				at = -r.Int64N(2)
			default:
				at = c[1] + 1 - r.Int64N(2) // past max when it fits
				if at < c[1] {
					at = c[1]
				}
			}
		}
		l.Data = fsm.EncodeRaiseSequence(fsm.RaiseSequence{Name: name, AtLeast: at})
	case p < 97: // a type this version does not know, marked ignorable
		l.Data = []byte{byte(fsm.IgnoreUnknownTypeFlag) | byte(18+r.IntN(0x6e)), '{', '}'} // 18..0x7f: not a known type
	default: // entries raft may hand an FSM that are not commands
		l.Type = []raft.LogType{raft.LogNoop, raft.LogBarrier, raft.LogConfiguration}[r.IntN(3)]
		l.Data = []byte{0xff}
	}
	return l
}

// blockRequest is a random block request for name: mostly small counts,
// sometimes large or the whole int64 range, sometimes invalid.
func (g *gen) blockRequest(name string) fsm.BlockRequest {
	r := g.rng
	var count int64
	switch q := r.IntN(20); {
	case q == 0 && r.IntN(5) == 0:
		count = math.MaxInt64
	case q == 1:
		count = 1 + r.Int64N(100_000)
	default:
		count = 1 + r.Int64N(30)
	}
	min := 1 + r.Int64N(min(count, 40))
	if r.IntN(4) == 0 {
		min = count
	}
	if r.IntN(40) == 0 { // invalid
		count, min = r.Int64N(2)-1, r.Int64N(2)
	}
	return fsm.BlockRequest{Name: name, Count: count, Min: min}
}

// normalize makes responses comparable across FSMs: errors are fresh values
// on every node, so compare their text.
func normalize(resp any) any {
	if err, ok := resp.(error); ok {
		return "error: " + err.Error()
	}
	if b, ok := resp.(fsm.BlockBatch); ok {
		out := make([]any, len(b.Outcomes))
		for i, o := range b.Outcomes {
			out[i] = o.Block
			if o.Err != nil {
				out[i] = normalize(o.Err)
			}
		}
		return out
	}
	return resp
}

// checkResponse asserts the invariants of one applied entry against what the
// test has tracked so far, and updates the tracking.
func checkResponse(t *testing.T, l *raft.Log, resp any, f *fsm.FSM, seqs map[string]*tracked) {
	t.Helper()
	if l.Type != raft.LogCommand || l.Data[0]&byte(fsm.IgnoreUnknownTypeFlag) != 0 {
		if resp != nil {
			t.Fatalf("entry %d (%s): response %#v, want nil", l.Index, l.Type, resp)
		}
		return
	}
	if err, ok := resp.(error); ok {
		known := false
		for _, s := range []error{fsm.ErrSequenceNotFound, fsm.ErrSequenceExhausted, fsm.ErrSequenceConflict, fsm.ErrInvalidCommand} {
			known = known || errors.Is(err, s)
		}
		if !known {
			t.Fatalf("entry %d: error %q is not one of the FSM's sentinels", l.Index, err)
		}
	}
	switch fsm.CommandType(l.Data[0]) {
	case fsm.CommandCreateSequence:
		var c fsm.CreateSequence
		mustUnmarshal(t, l.Data[1:], &c)
		tr := seqs[c.Name]
		switch r := resp.(type) {
		case fsm.CreateResult:
			if r.Created != (tr == nil) {
				t.Fatalf("entry %d: create %q Created=%v but the sequence existed=%v", l.Index, c.Name, r.Created, tr != nil)
			}
			if tr == nil {
				if r.Sequence.Issued != c.Start-1 {
					t.Fatalf("entry %d: new sequence %+v, want Issued=Start-1", l.Index, r.Sequence)
				}
				seqs[c.Name] = &tracked{start: c.Start, max: c.Max, issued: c.Start - 1, lastBlock: c.Start - 1}
			} else if r.Sequence.Issued != tr.issued || c.Start != tr.start || c.Max != tr.max {
				t.Fatalf("entry %d: idempotent create returned %+v, tracked %+v", l.Index, r.Sequence, *tr)
			}
		case error:
			switch {
			case errors.Is(r, fsm.ErrSequenceConflict):
				if tr == nil || (c.Start == tr.start && c.Max == tr.max) {
					t.Fatalf("entry %d: conflict for %+v, tracked %+v", l.Index, c, tr)
				}
			case errors.Is(r, fsm.ErrInvalidCommand):
			default:
				t.Fatalf("entry %d: create got %v", l.Index, r)
			}
		default:
			t.Fatalf("entry %d: create got %#v", l.Index, resp)
		}
	case fsm.CommandRaiseSequence:
		var c fsm.RaiseSequence
		mustUnmarshal(t, l.Data[1:], &c)
		tr := seqs[c.Name]
		switch r := resp.(type) {
		case fsm.RaiseResult:
			if tr == nil {
				t.Fatalf("entry %d: raise of %q, never created, got %+v", l.Index, c.Name, r)
			}
			want := max(tr.issued, c.AtLeast)
			if r.Sequence.Issued != want || r.Previous != tr.issued || r.Raised != (c.AtLeast > tr.issued) {
				t.Fatalf("entry %d: raise %+v got %+v, tracked %+v", l.Index, c, r, tr)
			}
			tr.issued = want
			tr.lastBlock = max(tr.lastBlock, want)
		case error:
			switch {
			case errors.Is(r, fsm.ErrSequenceNotFound):
				if tr != nil {
					t.Fatalf("entry %d: raise of existing %q: %v", l.Index, c.Name, r)
				}
			case errors.Is(r, fsm.ErrSequenceExhausted):
				if tr == nil || c.AtLeast <= tr.max {
					t.Fatalf("entry %d: raise %+v refused as past max, tracked %+v", l.Index, c, tr)
				}
			case errors.Is(r, fsm.ErrInvalidCommand):
				if c.AtLeast >= 1 {
					t.Fatalf("entry %d: valid raise %+v refused: %v", l.Index, c, r)
				}
			default:
				t.Fatalf("entry %d: raise got %v", l.Index, r)
			}
		default:
			t.Fatalf("entry %d: raise got %#v", l.Index, resp)
		}
	case fsm.CommandReserveBlock:
		var c fsm.ReserveBlock
		mustUnmarshal(t, l.Data[1:], &c)
		checkBlock(t, l, fsm.BlockRequest{Name: c.Name, Count: c.Count, Min: c.Min}, resp, seqs)
	case fsm.CommandReserveBlocks:
		var c fsm.ReserveBlocks
		mustUnmarshal(t, l.Data[1:], &c)
		b, ok := resp.(fsm.BlockBatch)
		if !ok {
			// Only a batch that is empty or too large is refused whole.
			if !errors.Is(asError(resp), fsm.ErrInvalidCommand) || (len(c.Requests) > 0 && len(c.Requests) <= fsm.MaxBatchBlocks) {
				t.Fatalf("entry %d: batch of %d got %#v", l.Index, len(c.Requests), resp)
			}
			break
		}
		if len(b.Outcomes) != len(c.Requests) {
			t.Fatalf("entry %d: %d outcomes for %d requests", l.Index, len(b.Outcomes), len(c.Requests))
		}
		for i, r := range c.Requests {
			o := b.Outcomes[i]
			if o.Err != nil {
				if o.Block != (fsm.Block{}) {
					t.Fatalf("entry %d request %d: both a block %+v and an error %v", l.Index, i, o.Block, o.Err)
				}
				checkBlock(t, l, r, o.Err, seqs)
				continue
			}
			checkBlock(t, l, r, o.Block, seqs)
		}
	}
	// The whole state agrees with the tracking: marks within bounds, never
	// decreasing, no sequence the responses did not announce.
	if err := f.CheckSequenceIndex(); err != nil {
		t.Fatalf("entry %d: %v", l.Index, err)
	}
	got := f.Sequences()
	if len(got) != len(seqs) {
		t.Fatalf("entry %d: FSM has %d sequences, responses announced %d", l.Index, len(got), len(seqs))
	}
	for _, s := range got {
		tr := seqs[s.Name]
		if tr == nil || s.Start != tr.start || s.Max != tr.max {
			t.Fatalf("entry %d: FSM has %+v, tracked %+v", l.Index, s, tr)
		}
		if s.Issued != tr.issued {
			t.Fatalf("entry %d: %q mark is %d, responses imply %d (a mark moved without a block, or went back)", l.Index, s.Name, s.Issued, tr.issued)
		}
		if s.Issued < s.Start-1 || s.Issued > s.Max {
			t.Fatalf("entry %d: %q mark %d outside [%d, %d]", l.Index, s.Name, s.Issued, s.Start-1, s.Max)
		}
	}
}

// asError is resp as an error, or nil.
func asError(resp any) error {
	err, _ := resp.(error)
	return err
}

// checkBlock checks one block request's answer (a Block or an error) in
// entry l against the tracking, and updates it: a ReserveBlock entry's, or
// one request of a ReserveBlocks entry's.
func checkBlock(t *testing.T, l *raft.Log, c fsm.BlockRequest, resp any, seqs map[string]*tracked) {
	t.Helper()
	tr := seqs[c.Name]
	switch r := resp.(type) {
	case fsm.Block:
		if tr == nil {
			t.Fatalf("entry %d: block %+v from a sequence that was never created", l.Index, r)
		}
		want := min(c.Count, tr.max-tr.issued)
		switch {
		case r.Sequence != c.Name || r.Index != l.Index || r.Term != l.Term:
			t.Fatalf("entry %d term %d: block %+v names the wrong sequence or entry", l.Index, l.Term, r)
		case r.First > r.Last:
			t.Fatalf("entry %d: empty or inverted block %+v", l.Index, r)
		case r.First < tr.start || r.Last > tr.max:
			t.Fatalf("entry %d: block %+v outside [%d, %d]", l.Index, r, tr.start, tr.max)
		case r.First <= tr.lastBlock:
			t.Fatalf("entry %d: block %+v overlaps or precedes the previous block ending at %d", l.Index, r, tr.lastBlock)
		case r.First != tr.issued+1:
			t.Fatalf("entry %d: block %+v does not start just above the mark %d", l.Index, r, tr.issued)
		case r.Len() != want || r.Len() < c.Min:
			t.Fatalf("entry %d: block %+v has %d IDs; want min(count=%d, left=%d)=%d >= min %d", l.Index, r, r.Len(), c.Count, tr.max-tr.issued, want, c.Min)
		}
		tr.issued, tr.lastBlock = r.Last, r.Last
		tr.blocks++
	case error:
		switch {
		case errors.Is(r, fsm.ErrSequenceNotFound):
			if tr != nil {
				t.Fatalf("entry %d: not found for existing %q", l.Index, c.Name)
			}
		case errors.Is(r, fsm.ErrSequenceExhausted):
			if tr == nil || tr.max-tr.issued >= c.Min {
				t.Fatalf("entry %d: exhausted for %+v but tracked %+v", l.Index, c, tr)
			}
		case errors.Is(r, fsm.ErrInvalidCommand):
			if c.Count >= 1 && c.Min >= 1 && c.Min <= c.Count {
				t.Fatalf("entry %d: valid reserve %+v rejected as invalid", l.Index, c)
			}
		default:
			t.Fatalf("entry %d: reserve got %v", l.Index, r)
		}
	default:
		t.Fatalf("entry %d: reserve got %#v", l.Index, resp)
	}
}

// replica is an FSM that follows the reference one entry by entry.
type replica struct {
	name string
	f    *fsm.FSM
}

// pendingSnap is a snapshot taken at entry at but not yet persisted: Apply
// goes on while raft persists it.
type pendingSnap struct {
	snap  raft.FSMSnapshot
	at    int // entries applied when it was taken
	state state
	bytes []byte // of the reference's twin B at the same point
}

// TestProperty_RandomLog_BlocksDisjointDeterministicSnapshotSafe feeds a few
// thousand random entries to a reference FSM and checks, after every entry,
// that blocks of each sequence are disjoint, strictly increasing, within
// [start, max] and that marks never decrease. A twin fed the same log must
// answer and end up the same (determinism), and FSMs restored from snapshots
// taken at random points must, after replaying the entries the snapshot does
// not cover, answer every later entry exactly as the reference does.
func TestProperty_RandomLog_BlocksDisjointDeterministicSnapshotSafe(t *testing.T) {
	for _, seed := range propSeeds() {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Logf("seed %d (replay with: go test ./fsm/ -run 'TestProperty_' -fsm.seed=%d)", seed, seed)
			runProperty(t, seed, *propSteps)
		})
	}
}

func runProperty(t *testing.T, seed uint64, steps int) {
	g := newGen(seed)
	ref := fsm.New()
	replicas := []*replica{{name: "twin", f: fsm.New()}}
	seqs := make(map[string]*tracked)
	var entries []*raft.Log
	var resps []any
	var pending []pendingSnap
	restored := 0

	for i := 0; i < steps; i++ {
		l := g.next()
		entries = append(entries, l)
		resp := ref.Apply(l)
		resps = append(resps, normalize(resp))
		checkResponse(t, l, resp, ref, seqs)
		for _, r := range replicas {
			if got := normalize(r.f.Apply(l)); !reflect.DeepEqual(got, resps[i]) {
				t.Fatalf("seed %d entry %d: %s answered %#v, reference %#v", seed, l.Index, r.name, got, resps[i])
			}
		}

		// Take a snapshot of the reference now, persist it later.
		if g.rng.IntN(150) == 0 {
			snap, err := ref.Snapshot()
			if err != nil {
				t.Fatalf("Snapshot: %v", err)
			}
			// Twins snapshot byte-identically: maps are sorted before output.
			pending = append(pending, pendingSnap{snap: snap, at: i + 1, state: stateOf(ref), bytes: persist(t, replicas[0].f)})
		}
		// Persist a pending snapshot (entries were applied meanwhile),
		// restore it into a fresh FSM, replay the entries after it, and let
		// it follow from here on.
		if len(pending) > 0 && g.rng.IntN(40) == 0 {
			p := pending[0]
			pending = pending[1:]
			b := persistSnap(t, p.snap)
			p.snap.Release()
			if !bytes.Equal(b, p.bytes) {
				t.Fatalf("seed %d: snapshot at entry %d differs between twins or changed while Apply went on", seed, p.at)
			}
			c := restore(t, b)
			assertSameState(t, fmt.Sprintf("seed %d: restored from snapshot at entry %d", seed, p.at), stateOf(c), p.state)
			for j := p.at; j <= i; j++ {
				if got := normalize(c.Apply(entries[j])); !reflect.DeepEqual(got, resps[j]) {
					t.Fatalf("seed %d: restored (snapshot at %d) replaying entry %d answered %#v, reference %#v", seed, p.at, entries[j].Index, got, resps[j])
				}
			}
			assertSameState(t, fmt.Sprintf("seed %d: restored at %d after replay", seed, p.at), stateOf(c), stateOf(ref))
			restored++
			replicas = append(replicas, &replica{name: fmt.Sprintf("restored@%d", p.at), f: c})
			if len(replicas) > 4 {
				replicas = append(replicas[:1], replicas[2:]...) // keep the twin
			}
		}
	}
	for _, p := range pending {
		p.snap.Release()
	}

	want := stateOf(ref)
	for _, r := range replicas {
		assertSameState(t, fmt.Sprintf("seed %d: final state of %s", seed, r.name), stateOf(r.f), want)
		if err := r.f.CheckSequenceIndex(); err != nil {
			t.Fatalf("seed %d: final state of %s: %v", seed, r.name, err)
		}
	}
	// And one last round trip of the final state.
	assertSameState(t, "final snapshot round trip", stateOf(restore(t, persist(t, ref))), want)

	exhausted, blocks := 0, 0
	for _, tr := range seqs {
		blocks += tr.blocks
		if tr.issued == tr.max {
			exhausted++
		}
	}
	t.Logf("seed %d: %d entries, %d sequences (%d exhausted), %d blocks, %d snapshots restored", seed, steps, len(seqs), exhausted, blocks, restored)
	if exhausted == 0 || blocks < steps/10 || restored == 0 {
		t.Fatalf("seed %d: the run did not exercise enough (exhausted=%d blocks=%d restored=%d); tune the generator", seed, exhausted, blocks, restored)
	}
}

func mustUnmarshal(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("test cannot decode its own entry: %v", err)
	}
}
