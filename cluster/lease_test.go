package cluster

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ticketd/ticketd/fsm"
	"github.com/ticketd/ticketd/internal/testkit"
)

// linkCutter wraps every node's dials so that a test can isolate a node:
// its connections, both ways, are closed and no new one is made.
type linkCutter struct {
	mu       sync.Mutex
	isolated map[string]bool
	conns    map[net.Conn][2]string // from, to
}

func newLinkCutter() *linkCutter {
	return &linkCutter{isolated: map[string]bool{}, conns: map[net.Conn][2]string{}}
}

func (lc *linkCutter) dialFrom(from string) DialFunc {
	return func(address string, timeout time.Duration) (net.Conn, error) {
		lc.mu.Lock()
		cut := lc.isolated[from] || lc.isolated[address]
		lc.mu.Unlock()
		if cut {
			return nil, &net.OpError{Op: "dial", Net: "tcp", Err: os.ErrDeadlineExceeded}
		}
		c, err := defaultDial(address, timeout)
		if err != nil {
			return nil, err
		}
		lc.mu.Lock()
		lc.conns[c] = [2]string{from, address}
		lc.mu.Unlock()
		return c, nil
	}
}

func (lc *linkCutter) isolate(addr string) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	lc.isolated[addr] = true
	for c, ends := range lc.conns {
		if ends[0] == addr || ends[1] == addr {
			_ = c.Close()
			delete(lc.conns, c)
		}
	}
}

func leaseNodes(t *testing.T, d time.Duration, cut *linkCutter) []*Node {
	t.Helper()
	return startNodesWith(t, 3, raceTimings, func(c *Config) {
		c.LeaseReads = true
		c.LeaseDuration = d
		if cut != nil {
			c.Dial = cut.dialFrom(c.RaftAddr)
		}
	})
}

// awaitLease waits for the leader of nodes to hold a lease.
func awaitLease(t *testing.T, nodes []*Node) (*Node, leaseGrant) {
	t.Helper()
	l := leaderOf(t, nodes)
	testkit.Eventually(t, 10*time.Second, 5*time.Millisecond, "the leader to hold a lease", func() bool {
		_, ok := l.leaseTerm()
		return ok
	})
	return l, *l.leaseState.cur.Load()
}

func leaseAnswers(nodes []*Node) uint64 {
	var total uint64
	for _, n := range nodes {
		total += n.promises.answered.Load()
	}
	return total
}

// With a lease, leadership checks cost no round: a thousand of them ask
// the voters nothing beyond the renewals.
func TestLease_ChecksServedFromLease_NoRoundEach(t *testing.T) {
	nodes := leaseNodes(t, 2*time.Second, nil)
	l, g := awaitLease(t, nodes)
	before := leaseAnswers(nodes)
	probesBefore := probesAnswered(nodes)
	for range 1000 {
		term, err := l.VerifyLeader(t.Context())
		if err != nil || term != g.term {
			t.Fatalf("verify: term %d, %v; want the lease's term %d", term, err, g.term)
		}
	}
	// Renewals run every D/3 whatever the load: a few at most in this
	// time, and no plain probe at all.
	if got := leaseAnswers(nodes) - before; got > 10 {
		t.Fatalf("%d lease answers for 1000 checks: the checks ran rounds", got)
	}
	after := probesAnswered(nodes)
	for id := range after {
		if after[id] != probesBefore[id] {
			t.Fatalf("plain probes answered during lease checks: %v -> %v", probesBefore, after)
		}
	}
}

// The leader cut off from the others: no one is elected before its lease
// ends, since a majority of voters promised not to vote, and the old
// leader stops serving from it by then.
func TestLease_IsolatedLeader_NoNewLeaderBeforeLeaseEnds(t *testing.T) {
	cut := newLinkCutter()
	nodes := leaseNodes(t, 2*time.Second, cut)
	l, _ := awaitLease(t, nodes)
	cut.isolate(l.cfg.RaftAddr)
	// The lease the old leader holds once nothing can renew it.
	g := *l.leaseState.cur.Load()
	var others []*Node
	for _, n := range nodes {
		if n != l {
			others = append(others, n)
		}
	}
	var elected time.Duration
	testkit.Eventually(t, 20*time.Second, 2*time.Millisecond, "a new leader", func() bool {
		for _, n := range others {
			if n.raft.State() == raft.Leader {
				elected = bootClock()
				return true
			}
		}
		return false
	})
	if elected < g.expiry {
		t.Fatalf("a new leader was seen %v before the old leader's lease ended", g.expiry-elected)
	}
	if _, ok := l.leaseTerm(); ok {
		t.Fatal("the old leader still serves from its lease after a new leader was elected")
	}
}

// A leadership transfer releases the promises first, so the target wins
// at once (it would otherwise be refused votes for the whole lease, longer
// than raft's transfer timeout), and the old leader keeps no lease.
func TestLease_Transfer_ReleasesThenTransfers(t *testing.T) {
	nodes := leaseNodes(t, 3*time.Second, nil)
	l, _ := awaitLease(t, nodes)
	var target *Node
	for _, n := range nodes {
		if n != l {
			target = n
			break
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	got, err := l.TransferLeadershipTo(ctx, target.cfg.ID)
	if err != nil || got != target.cfg.ID {
		t.Fatalf("transfer: %q, %v", got, err)
	}
	if _, ok := l.leaseTerm(); ok {
		t.Fatal("the old leader kept its lease across the transfer")
	}
	// The new leader gets a lease of its own.
	awaitLease(t, nodes)
}

// A voter promises nothing while a vote it admitted is in flight: that vote
// could be granted after the promise's answer was written.
func TestLease_VoteInFlight_NoPromise(t *testing.T) {
	p, err := newPromises(t.TempDir(), func() uint64 { return 7 }, false)
	if err != nil {
		t.Fatal(err)
	}
	if !p.admitVote() {
		t.Fatal("a vote refused with no promise made")
	}
	if _, ok := p.promise(7, time.Second, 1); ok {
		t.Fatal("promised while a vote was in flight")
	}
	p.voteDone()
	if term, ok := p.promise(7, time.Second, 1); !ok || term != 7 {
		t.Fatalf("promise after the vote was answered: %d, %v", term, ok)
	}
	if p.admitVote() {
		t.Fatal("a vote admitted while a promise holds")
	}
	if _, ok := p.promise(6, time.Second, 1); ok {
		t.Fatal("promised to a leader of an older term")
	}
	p.release(6, 2)
	if !p.blocked() {
		t.Fatal("a release of another term cleared the promise")
	}
	p.release(7, 2)
	if p.blocked() || !p.admitVote() {
		t.Fatal("the promise held after its release")
	}
}

// A restarted voter keeps the promises of the process before it: it sits
// out every vote for the longest lease it ever promised, from its start.
func TestLease_RestartedVoterRefusesVotesForD(t *testing.T) {
	dir := t.TempDir()
	p, err := newPromises(dir, func() uint64 { return 3 }, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.promise(3, 300*time.Millisecond, 1); !ok {
		t.Fatal("no promise")
	}
	if b, err := os.ReadFile(filepath.Join(dir, promiseMarkerFile)); err != nil || len(b) == 0 {
		t.Fatalf("no marker written before the promise: %q, %v", b, err)
	}
	start := time.Now()
	again, err := newPromises(dir, func() uint64 { return 3 }, false)
	if err != nil {
		t.Fatal(err)
	}
	if again.admitVote() {
		t.Fatal("a restarted voter admitted a vote at once")
	}
	for again.blocked() {
		time.Sleep(5 * time.Millisecond)
	}
	if waited := time.Since(start); waited < 300*time.Millisecond {
		t.Fatalf("quarantine ended after %v, before the promised 300ms", waited)
	}
	if !again.admitVote() {
		t.Fatal("a vote refused after the quarantine")
	}
}

// A vote or pre-vote refused for a promise is answered, not failed: raft
// counts a pre-vote error reading "unexpected command" as granted.
func TestLease_PreVoteVetoed_NotCountedGranted(t *testing.T) {
	p, err := newPromises(t.TempDir(), func() uint64 { return 5 }, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.promise(5, time.Minute/10, 1); !ok {
		t.Fatal("no promise")
	}
	w := &leaderWatch{promises: p, stop: make(chan struct{}), localID: "n1", localAddr: "x:1"}
	for _, cmd := range []any{&raft.RequestPreVoteRequest{Term: 6}, &raft.RequestVoteRequest{Term: 6, LeadershipTransfer: true}} {
		ch := make(chan raft.RPCResponse, 1)
		if _, pass := w.guardVote(raft.RPC{Command: cmd, RespChan: ch}); pass {
			t.Fatalf("%T passed the guard while a promise holds", cmd)
		}
		r := <-ch
		if r.Error != nil {
			t.Fatalf("%T refused with an error: %v", cmd, r.Error)
		}
		switch resp := r.Response.(type) {
		case *raft.RequestPreVoteResponse:
			if resp.Granted || resp.Term != 5 {
				t.Fatalf("pre-vote answer %+v", resp)
			}
		case *raft.RequestVoteResponse:
			if resp.Granted || resp.Term != 5 {
				t.Fatalf("vote answer %+v", resp)
			}
		default:
			t.Fatalf("%T answered with %T", cmd, r.Response)
		}
	}
	// And this node asks for no vote of its own meanwhile: the requests
	// never leave (w has no transport: sending would panic).
	var resp raft.RequestPreVoteResponse
	if err := w.RequestPreVote("n2", "x:2", &raft.RequestPreVoteRequest{Term: 6}, &resp); err != nil || resp.Granted {
		t.Fatalf("outbound pre-vote while promised: %+v, %v", resp, err)
	}
	var vresp raft.RequestVoteResponse
	if err := w.RequestVote("n2", "x:2", &raft.RequestVoteRequest{Term: 6}, &vresp); err != nil || vresp.Granted {
		t.Fatalf("outbound vote while promised: %+v, %v", vresp, err)
	}
}

// Promises and releases of a term are ordered by their sequence, not by
// when they arrive: a release that arrives late clears no promise made
// after it, and a promise that arrives after a later release is refused.
func TestLease_LateReleaseOrPromise_OrderedBySequence(t *testing.T) {
	p, err := newPromises(t.TempDir(), func() uint64 { return 4 }, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.promise(4, time.Minute/10, 5); !ok {
		t.Fatal("no promise")
	}
	p.release(4, 3) // sent before the promise of sequence 5, arriving after it
	if !p.blocked() {
		t.Fatal("a release of sequence 3 cleared a promise of sequence 5")
	}
	p.release(4, 6)
	if p.blocked() {
		t.Fatal("a release of sequence 6 left the promise of sequence 5")
	}
	if _, ok := p.promise(4, time.Minute/10, 5); ok {
		t.Fatal("a promise of sequence 5 made after the release of sequence 6")
	}
	if _, ok := p.promise(4, time.Minute/10, 6); !ok {
		t.Fatal("a promise of the release's own sequence was refused")
	}
	// A clean shutdown while a promise holds keeps the marker; after it
	// lapsed the marker goes, and no promise is made after close.
	p.close()
	if _, err := os.Stat(filepath.Join(p.dataDir, promiseMarkerFile)); err != nil {
		t.Fatalf("marker removed while a promise held: %v", err)
	}
	if _, ok := p.promise(4, time.Minute/10, 7); ok {
		t.Fatal("promised after close")
	}
	q, err := newPromises(t.TempDir(), func() uint64 { return 4 }, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := q.promise(4, 10*time.Millisecond, 1); !ok {
		t.Fatal("no promise")
	}
	time.Sleep(20 * time.Millisecond)
	q.close()
	if _, err := os.Stat(filepath.Join(q.dataDir, promiseMarkerFile)); !os.IsNotExist(err) {
		t.Fatalf("marker kept after the promises lapsed: %v", err)
	}
}

func BenchmarkLeaseClock(b *testing.B) {
	b.Run("boottime", func(b *testing.B) {
		for b.Loop() {
			_ = bootClock()
		}
	})
	b.Run("time.Now", func(b *testing.B) {
		for b.Loop() {
			_ = time.Now()
		}
	})
}

// With a voter down, the release cannot reach it, yet the transfer's target
// wins: the leader released its own promise, and the window in which no
// round asks for promises lasts until raft's transfer has had its time.
func TestLease_Transfer_WithAVoterDown(t *testing.T) {
	nodes := leaseNodes(t, 3*time.Second, nil)
	l, _ := awaitLease(t, nodes)
	var others []*Node
	for _, n := range nodes {
		if n != l {
			others = append(others, n)
		}
	}
	if err := others[1].Shutdown(t.Context(), false); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	testkit.EventuallyErr(t, 10*time.Second, 50*time.Millisecond, "the transfer to the live follower", func() error {
		_, err := l.TransferLeadershipTo(ctx, others[0].cfg.ID)
		return err
	})
	if others[0].raft.State() != raft.Leader {
		t.Fatalf("%s is not the leader after the transfer", others[0].cfg.ID)
	}
	if _, ok := l.leaseTerm(); ok {
		t.Fatal("the old leader kept its lease across the transfer")
	}
}

// A leader that removes itself releases its voters' promises first, as a
// transfer does: the others elect a leader without waiting them out.
func TestLease_LeaderRemovesItself_OthersElectBeforePromisesLapse(t *testing.T) {
	const d = 5 * time.Second
	nodes := leaseNodes(t, d, nil)
	l, _ := awaitLease(t, nodes)
	start := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := l.Remove(ctx, l.cfg.ID); err != nil {
		t.Fatalf("remove the leader: %v", err)
	}
	testkit.Eventually(t, 20*time.Second, 5*time.Millisecond, "a new leader", func() bool {
		for _, n := range nodes {
			if n != l && n.raft.State() == raft.Leader {
				return true
			}
		}
		return false
	})
	if took := time.Since(start); took >= d {
		t.Fatalf("the new leader came %v after the removal: the promises of %v were waited out", took, d)
	}
}

// A member held to a level below fsm.LevelLeases (an older binary, which
// drops the lease byte) keeps the whole cluster on the probe: no voter is
// asked to promise, and every check runs a round. Once it restarts
// knowing leases, the leader raises the cluster's level and takes a lease.
func TestLease_MemberBelowLeasesLevel_ProbesUntilItKnowsLeases(t *testing.T) {
	nodes := startNodesWith(t, 3, raceTimings, func(c *Config) {
		c.LeaseReads = true
		c.LeaseDuration = 2 * time.Second
		c.LevelProbeInterval = 100 * time.Millisecond
		if c.ID == "n3" {
			c.FeatureLevel = fsm.LevelLeases - 1
		}
	})
	l := leaderOf(t, nodes)
	testkit.Eventually(t, 10*time.Second, 10*time.Millisecond, "the cluster's level to be the old member's", func() bool {
		return l.ClusterLevel() == fsm.LevelLeases-1
	})
	probesBefore := probesAnswered(nodes)
	for range 20 {
		if _, err := l.VerifyLeader(t.Context()); err != nil {
			t.Fatalf("verify below the leases level: %v", err)
		}
		if _, ok := l.leaseTerm(); ok {
			t.Fatal("a lease in a cluster with a member below the leases level")
		}
	}
	if got := leaseAnswers(nodes); got != 0 {
		t.Fatalf("%d lease answers in a cluster with a member below the leases level", got)
	}
	after := probesAnswered(nodes)
	rounds := uint64(0)
	for id := range after {
		rounds += after[id] - probesBefore[id]
	}
	if rounds < 20 {
		t.Fatalf("%d probes answered for 20 checks without a lease", rounds)
	}
	// The older member cannot be asked: the lease byte is dropped.
	old := nodes[2]
	if old.cfg.ID != "n3" {
		t.Fatalf("nodes[2] is %s", old.cfg.ID)
	}
	ask := func() leaseRequest { return leaseRequest{op: leaseOpPromise, term: 1, d: time.Second, seq: 1} }
	if _, _, err := l.leaseClient.lease(old.cfg.RaftAddr, time.Now().Add(time.Second), ask); err == nil {
		t.Fatal("a node held below the leases level answered the lease service")
	}

	// The member is upgraded: it restarts knowing leases.
	if err := old.Shutdown(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	cfg := old.cfg
	cfg.FeatureLevel = 0
	nodes[2] = reopenNode(t, cfg)
	l = leaderOf(t, nodes)
	testkit.Eventually(t, 15*time.Second, 10*time.Millisecond, "the cluster's level to reach leases", func() bool {
		return l.ClusterLevel() >= fsm.LevelLeases
	})
	awaitLease(t, nodes)
}

// A full-cluster stop right after every voter promised (kill -9, or a
// shutdown while the promises hold) and a restart of all: no node is
// elected until the promises have lapsed, each node counting from its own
// start, so a leader that held the lease and is now gone can never have
// overlapped a new one.
func TestLease_FullClusterRestart_NoLeaderUntilPromisesLapse(t *testing.T) {
	const d = 2 * time.Second
	nodes := leaseNodes(t, d, nil)
	awaitLease(t, nodes)
	var cfgs []Config
	for _, n := range nodes {
		cfgs = append(cfgs, n.cfg)
	}
	// Stopped while their promises hold: the markers stay.
	for _, n := range nodes {
		if err := n.Shutdown(context.Background(), false); err != nil {
			t.Fatal(err)
		}
	}
	// A round asks only as many voters as make a majority with the
	// leader: a majority holds a marker, perhaps not every node.
	marked := 0
	for _, c := range cfgs {
		if _, err := os.Stat(filepath.Join(c.DataDir, promiseMarkerFile)); err == nil {
			marked++
		}
	}
	if marked < 2 {
		t.Fatalf("%d of 3 nodes hold a promise marker after a stop with the lease held", marked)
	}
	restarted := time.Now()
	var again []*Node
	for _, c := range cfgs {
		again = append(again, reopenNode(t, c))
	}
	var elected time.Duration
	testkit.Eventually(t, d+20*time.Second, 2*time.Millisecond, "a leader after the restart", func() bool {
		for _, n := range again {
			if n.raft.State() == raft.Leader {
				elected = time.Since(restarted)
				return true
			}
		}
		return false
	})
	if elected < d {
		t.Fatalf("a leader %v after the full restart, before the promises of %v lapsed", elected, d)
	}
	t.Logf("first leader %v after the restart (promises of %v)", elected, d)
	awaitLease(t, again)
}

// reopenNode opens and starts a node again from cfg, on the address its
// earlier process listened on, and shuts it down when the test ends.
func reopenNode(t *testing.T, cfg Config) *Node {
	t.Helper()
	ln, err := net.Listen("tcp", cfg.RaftAddr)
	if err != nil {
		t.Fatalf("listen again on %s: %v", cfg.RaftAddr, err)
	}
	t.Cleanup(func() { _ = ln.Close() }) // if the node never took it
	cfg.Listener = ln
	return startNode(t, cfg)
}
