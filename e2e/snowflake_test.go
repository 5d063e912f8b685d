package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/internal/proc"
)

// Server-made Snowflake IDs (issue #32) on real processes: every node
// answers from its own worker-id lease while the leader is killed, a
// follower is paused past its lease, and one node's wall clock is stepped
// back. The nodes run the faults build for its clock control
// (/unsafe/clock), with no bug planted.

var (
	faultsBinOnce sync.Once
	faultsBin     string
	faultsBinErr  error
)

// faultsBinary builds the faults build of ticketd once per test binary.
func faultsBinary(t *testing.T) string {
	t.Helper()
	binary(t) // skips in -short mode
	faultsBinOnce.Do(func() {
		root, err := proc.ModuleRoot()
		if err != nil {
			faultsBinErr = err
			return
		}
		faultsBin = filepath.Join(filepath.Dir(ticketdBin), "ticketd-faults")
		faultsBinErr = proc.Build(t.Context(), root, faultsBin, "ticketd_faults")
	})
	if faultsBinErr != nil {
		t.Fatalf("build the faults binary: %v", faultsBinErr)
	}
	return faultsBin
}

// sfOp is one request for IDs: where, when sent and answered, and what.
type sfOp struct {
	node       string
	sent, done time.Time
	status     int // 0: no answer (transport error)
	problem    string
	worker     int64
	ids        []int64
}

func postSnowflake(hc *http.Client, n *node, ns string, count int) sfOp {
	op := sfOp{node: n.id, sent: time.Now()}
	defer func() { op.done = time.Now() }()
	resp, err := hc.Post(n.url()+"/v1/namespaces/"+ns+"/ids", "application/json", strings.NewReader(fmt.Sprintf(`{"count":%d}`, count)))
	if err != nil {
		op.done = time.Now()
		return op
	}
	defer resp.Body.Close()
	op.status = resp.StatusCode
	if resp.StatusCode == http.StatusOK {
		var out api.SnowflakeIDs
		if json.NewDecoder(resp.Body).Decode(&out) == nil {
			op.ids, op.worker = out.IDs, out.WorkerID
		} else {
			op.status = -1
		}
	} else {
		var p api.Problem
		_ = json.NewDecoder(resp.Body).Decode(&p)
		op.problem = p.Type
	}
	op.done = time.Now()
	return op
}

func setClockOffset(t *testing.T, n *node, offset time.Duration) {
	t.Helper()
	body := fmt.Sprintf(`{"offset_ms":%d}`, offset.Milliseconds())
	req, _ := http.NewRequest(http.MethodPut, n.url()+"/unsafe/clock", bytes.NewReader([]byte(body)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("set %s's clock offset: %v %v", n.id, err, resp)
	}
	resp.Body.Close()
}

// TestSnowflakeIDs_LeaderKilledFollowerPausedClockSteppedBack_NoIDTwice:
// three nodes, two callers each taking IDs from their node without pause.
// The leader is SIGKILLed and restarted; a follower is SIGSTOPped for more
// than twice its lease's TTL and resumed; the third node's wall clock is
// stepped 3 s back and set right. No ID is served twice; one process's
// answers that do not overlap in time strictly increase; the paused node
// serves nothing under the lease it held when it was stopped; the stepped
// node answers clock-behind while the others serve.
func TestSnowflakeIDs_LeaderKilledFollowerPausedClockSteppedBack_NoIDTwice(t *testing.T) {
	c := newCluster(t)
	c.bin = faultsBinary(t)
	addrs := freeAddrs(t, 6)
	initial := fmt.Sprintf("n1=%s,n2=%s,n3=%s", addrs[1], addrs[3], addrs[5])
	var nodes []*node
	for i := range 3 {
		// The namespace does not exist yet: the generators ask for it
		// in the background until it does.
		nodes = append(nodes, c.newNode(fmt.Sprintf("n%d", i+1), addrs[2*i], addrs[2*i+1], "--initial-cluster", initial, "--snowflake-namespaces", "sf"))
	}
	for _, n := range nodes {
		c.start(n)
	}
	c.waitReady(20*time.Second, nodes...)
	leader := c.leader(10*time.Second, nodes)
	const ttlMs = 2000
	body, _ := json.Marshal(api.NamespaceRequest{LeaseTTLMs: ptr64(ttlMs), RecycleDelayMs: ptr64(20_000)})
	req, _ := http.NewRequest(http.MethodPut, leader.url()+"/v1/namespaces/sf", bytes.NewReader(body))
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("create namespace: %v %v", err, resp)
	}

	var (
		mu   sync.Mutex
		ops  []sfOp
		stop = make(chan struct{})
		wg   sync.WaitGroup
	)
	for _, n := range nodes {
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				hc := &http.Client{Timeout: 2 * time.Second}
				for i := 0; i < 100_000; i++ {
					select {
					case <-stop:
						return
					default:
					}
					op := postSnowflake(hc, n, "sf", 1+rand.IntN(20))
					mu.Lock()
					ops = append(ops, op)
					mu.Unlock()
					if op.status != http.StatusOK {
						time.Sleep(20 * time.Millisecond)
					}
				}
			}()
		}
	}
	stopLoad := sync.OnceFunc(func() { close(stop); wg.Wait() })
	defer stopLoad()
	lastOK := func(n *node) (sfOp, bool) {
		mu.Lock()
		defer mu.Unlock()
		for i := len(ops) - 1; i >= 0; i-- {
			if ops[i].node == n.id && ops[i].status == http.StatusOK {
				return ops[i], true
			}
		}
		return sfOp{}, false
	}
	waitServing := func(n *node, after time.Time) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if op, ok := lastOK(n); ok && op.sent.After(after) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s served nothing sent after %v", n.id, after.Format(time.StampMilli))
			}
		}
	}
	for _, n := range nodes {
		waitServing(n, time.Time{})
	}
	var paused, stepped *node
	for _, n := range nodes {
		switch {
		case n == leader:
		case paused == nil:
			paused = n
		default:
			stepped = n
		}
	}

	// The leader, SIGKILLed: the followers serve on from their leases.
	killedAt := time.Now()
	c.kill9(leader)
	time.Sleep(time.Second)
	c.restart(leader)
	restartedAt := time.Now()
	waitServing(leader, restartedAt)

	// A follower, paused for 2.5 TTLs: its lease ends meanwhile.
	held, _ := lastOK(paused)
	if err := paused.signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stoppedAt := time.Now()
	time.Sleep(5 * ttlMs * time.Millisecond / 2)
	if err := paused.signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	waitServing(paused, stoppedAt)

	// The third node's clock, 3 s back, then set right.
	setClockOffset(t, stepped, -3*time.Second)
	steppedAt := time.Now()
	time.Sleep(time.Second)
	setClockOffset(t, stepped, 0)
	unsteppedAt := time.Now()
	waitServing(stepped, unsteppedAt)
	time.Sleep(500 * time.Millisecond)
	stopLoad()

	// No ID twice.
	seen := map[int64]string{}
	oks, byProblem := 0, map[string]int{}
	for _, op := range ops {
		if op.status != http.StatusOK {
			byProblem[fmt.Sprintf("%d %s", op.status, op.problem)]++
			if op.status != 0 && op.status != http.StatusServiceUnavailable {
				t.Errorf("%s answered %d %s", op.node, op.status, op.problem)
			}
			continue
		}
		oks++
		for _, id := range op.ids {
			if by, dup := seen[id]; dup {
				t.Fatalf("ID %d served twice: by %s and by %s", id, by, op.node)
			}
			seen[id] = op.node
		}
	}
	t.Logf("%d answers with %d IDs; refusals: %v", oks, len(seen), byProblem)

	// One process's answers that do not overlap strictly increase (the
	// killed leader's two runs are two processes).
	for _, n := range nodes {
		var runs [][]sfOp
		var before, after []sfOp
		for _, op := range ops {
			if op.node != n.id || op.status != http.StatusOK {
				continue
			}
			if n == leader && !op.sent.Before(restartedAt) {
				after = append(after, op)
			} else if n != leader || op.done.Before(killedAt) {
				before = append(before, op)
			}
		}
		runs = append(runs, before, after)
		for _, run := range runs {
			if err := checkNonOverlappingIncrease(run); err != nil {
				t.Fatalf("%s: %v", n.id, err)
			}
		}
	}

	// The paused node: nothing it answered to a request sent after it
	// was stopped came from the lease it held then.
	for _, op := range ops {
		if op.node == paused.id && op.status == http.StatusOK && op.sent.After(stoppedAt.Add(50*time.Millisecond)) && op.worker == held.worker {
			t.Fatalf("%s served %v under worker %d, the lease it held when it was stopped", paused.id, op.ids, held.worker)
		}
	}

	// The stepped node refused clock-behind while the others served.
	behind, othersServed := 0, 0
	for _, op := range ops {
		if op.sent.Before(steppedAt) || op.done.After(unsteppedAt) {
			continue
		}
		switch {
		case op.node == stepped.id && op.problem == api.ProblemClockBehind:
			behind++
		case op.node != stepped.id && op.status == http.StatusOK:
			othersServed++
		}
	}
	if behind == 0 || othersServed == 0 {
		t.Fatalf("while %s's clock was 3 s behind: %d clock-behind refusals from it, %d answers from the others", stepped.id, behind, othersServed)
	}
}

// checkNonOverlappingIncrease: for answers a and b of one process, a done
// before b was sent, every ID of b is above every ID of a.
func checkNonOverlappingIncrease(ops []sfOp) error {
	bySent := slices.Clone(ops)
	slices.SortFunc(bySent, func(a, b sfOp) int { return a.sent.Compare(b.sent) })
	byDone := slices.Clone(ops)
	slices.SortFunc(byDone, func(a, b sfOp) int { return a.done.Compare(b.done) })
	var maxDone int64
	var maxOp sfOp
	j := 0
	for _, b := range bySent {
		for ; j < len(byDone) && byDone[j].done.Before(b.sent); j++ {
			if last := byDone[j].ids[len(byDone[j].ids)-1]; last > maxDone {
				maxDone, maxOp = last, byDone[j]
			}
		}
		if b.ids[0] <= maxDone {
			return fmt.Errorf("an answer sent at %v starts at %d, not above %d answered at %v",
				b.sent.Format(time.StampMicro), b.ids[0], maxDone, maxOp.done.Format(time.StampMicro))
		}
	}
	return nil
}

func ptr64(v int64) *int64 { return &v }
