package e2e

import (
	"context"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/client"
)

// TestBinary_LeaderSIGKILL_NoIDReissued_MeasuresFailover kills the leader
// process with SIGKILL three times under load through every node, measures
// how long the cluster takes to serve again, and checks that no ID was
// handed out twice, that reservations sent after a kill lie above every
// reservation acknowledged before it, and that a restarted node serves.
func TestBinary_LeaderSIGKILL_NoIDReissued_MeasuresFailover(t *testing.T) {
	c := newCluster(t)
	nodes := c.startStatic(3)
	createSequence(t, nodes[0], "orders")

	l := startLoad(t, nodes, "orders", 4, 10)
	h := l.h
	h.waitFor(t, 10*time.Second, "load flowing", func() bool { return h.len() >= 50 })

	type kill struct {
		victim       string
		at, reaped   time.Time
		failover     time.Duration
		firstVia     string
		newLeader    string
		restartReady time.Duration
	}
	var kills []kill
	for round := 1; round <= 3; round++ {
		old := c.leader(10*time.Second, nodes)
		k := kill{victim: old.id, at: time.Now()}
		c.kill9(old)
		k.reaped = time.Now()

		var first op
		h.waitFor(t, 15*time.Second, "a reservation after the leader was killed", func() bool {
			var ok bool
			first, ok = h.firstStartedAfter(k.reaped)
			return ok
		})
		k.failover, k.firstVia = first.ack.Sub(k.at), first.via
		k.newLeader = c.leader(10*time.Second, nodes).id
		t.Logf("round %d: failover: leader %s SIGKILL -> next success %v (via %s; new leader %s)",
			round, k.victim, k.failover.Round(time.Millisecond), k.firstVia, k.newLeader)

		time.Sleep(time.Second) // keep loading through the new leader

		restartAt := time.Now()
		c.restart(old)
		c.waitReady(20*time.Second, nodes...)
		k.restartReady = time.Since(restartAt)
		for i := 0; i < 5; i++ {
			start := time.Now()
			r := reserveVia(t, old, "orders", 3)
			h.add(op{via: old.id + " (restarted)", start: start, ack: time.Now(), r: r})
		}
		t.Logf("round %d: %s restarted, ready and serving after %v", round, old.id, k.restartReady.Round(time.Millisecond))
		kills = append(kills, k)
	}
	l.halt()

	h.check(t)
	ops := h.snapshot()
	for i, k := range kills {
		before := maxLastAckedBefore(ops, k.at)
		after := 0
		for _, o := range ops {
			if o.start.After(k.reaped) {
				after++
				if o.r.First <= before {
					t.Fatalf("kill %d (%s): range %+v sent after the kill is not above %d, acknowledged before it", i+1, k.victim, o.r, before)
				}
			}
		}
		if after == 0 {
			t.Fatalf("kill %d: no reservation acknowledged after it", i+1)
		}
	}

	var fo []time.Duration
	for _, k := range kills {
		fo = append(fo, k.failover)
	}
	slices.Sort(fo)
	t.Logf("failover (leader SIGKILL -> next success) over %d kills: min %v, median %v, max %v",
		len(fo), fo[0].Round(time.Millisecond), fo[len(fo)/2].Round(time.Millisecond), fo[len(fo)-1].Round(time.Millisecond))
	t.Logf("%d ranges acknowledged, all disjoint and in real-time order; failed attempts: %s", len(ops), h.failSummary())
}

// TestBinary_AllNodesKill9_RestartInRandomOrder_MarksNeverMoveBack kills
// every process with SIGKILL under load, restarts them in a random order with
// the very same flags (--initial-cluster included: a second bootstrap must
// not happen), and checks that the sequence's high-water mark and the first
// new range lie above everything acknowledged before the kill. Twice.
func TestBinary_AllNodesKill9_RestartInRandomOrder_MarksNeverMoveBack(t *testing.T) {
	c := newCluster(t)
	nodes := c.startStatic(3)
	createSequence(t, nodes[0], "orders")
	var endpoints []string
	for _, n := range nodes {
		endpoints = append(endpoints, n.url())
	}
	cl, err := client.New(endpoints, client.WithTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}

	var all []op
	for cycle := 1; cycle <= 2; cycle++ {
		l := startLoad(t, nodes, "orders", 4, 7)
		l.h.waitFor(t, 10*time.Second, "load flowing", func() bool { return l.h.len() >= 200 })
		c.kill9(nodes...) // all three signalled at once, under load
		l.halt()
		l.h.check(t)
		ops := l.h.snapshot()
		all = append(all, ops...)
		var before int64
		for _, o := range all {
			before = max(before, o.r.Last)
		}

		order := rand.Perm(len(nodes))
		var ids []string
		for _, i := range order {
			ids = append(ids, nodes[i].id)
		}
		t.Logf("cycle %d: %d ranges acknowledged (highest ID %d); killed all; restarting in order %v", cycle, len(ops), before, ids)
		for _, i := range order {
			c.restart(nodes[i])
		}
		c.waitReady(20*time.Second, nodes...)

		for _, n := range nodes {
			var seq api.Sequence
			if code, err := kit.Do(http.MethodGet, n.url()+"/v1/sequences/orders", nil, &seq); err != nil || code != http.StatusOK {
				t.Fatalf("GET /v1/sequences/orders via %s: %d %v", n.id, code, err)
			}
			if seq.Next == nil || *seq.Next <= before {
				t.Fatalf("cycle %d: after restart %s says next = %v, want > %d (the high-water mark moved back)", cycle, n.id, seq.Next, before)
			}
		}
		first := reserveVia(t, nodes[order[0]], "orders", 7)
		if first.First <= before {
			t.Fatalf("cycle %d: first range after restarting all %+v is not above %d", cycle, first, before)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		r, err := cl.Reserve(ctx, "orders", 7)
		cancel()
		if err != nil {
			t.Fatalf("cycle %d: reserve through the client SDK: %v", cycle, err)
		}
		if r.First <= first.Last {
			t.Fatalf("cycle %d: range %+v after %+v is not above it", cycle, r, first)
		}
		all = append(all, op{via: nodes[order[0]].id, r: first}, op{via: "sdk", r: api.Range{Sequence: "orders", First: r.First, Last: r.Last}})
		t.Logf("cycle %d: first range after restart %d..%d (gap %d above the old highest)", cycle, first.First, first.Last, first.First-before-1)
	}
	if err := checkDisjoint(all); err != nil {
		t.Fatal(err)
	}
}

// TestBinary_SIGTERM_LeaderHandsOver stops the leader with SIGTERM under
// load: the process exits 0 within a few seconds, its /readyz turns 503 (or
// its port closes) and never back, another node leads, reservations keep
// working and stay disjoint, and restarting it with the same flags resumes
// its data dir.
func TestBinary_SIGTERM_LeaderHandsOver(t *testing.T) {
	c := newCluster(t)
	nodes := c.startStatic(3)
	createSequence(t, nodes[0], "orders")
	l := startLoad(t, nodes, "orders", 3, 10)
	h := l.h
	h.waitFor(t, 10*time.Second, "load flowing", func() bool { return h.len() >= 50 })

	old := c.leader(10*time.Second, nodes)

	// Watch the leader's /readyz from before the signal until it exits.
	type probe struct {
		at   time.Time
		code int // 0: connection failed
	}
	var (
		probes   []probe
		probeMu  sync.Mutex
		probeWG  sync.WaitGroup
		stopProb = make(chan struct{})
	)
	pc := &http.Client{Timeout: 500 * time.Millisecond}
	probeWG.Add(1)
	go func() {
		defer probeWG.Done()
		for i := 0; i < 10_000; i++ {
			code := 0
			if resp, err := pc.Get(old.url() + "/readyz"); err == nil {
				code = resp.StatusCode
				_ = resp.Body.Close()
			}
			probeMu.Lock()
			probes = append(probes, probe{time.Now(), code})
			probeMu.Unlock()
			select {
			case <-stopProb:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()

	sentAt := time.Now()
	code, took := c.sigterm(old, 8*time.Second)
	close(stopProb)
	probeWG.Wait()
	if code != 0 {
		t.Fatalf("%s exited %d after SIGTERM, want 0", old.id, code)
	}
	t.Logf("%s (leader) exited 0 %v after SIGTERM", old.id, took.Round(time.Millisecond))
	if log := old.lastLog(); strings.Contains(log, "leadership transfer failed") {
		t.Errorf("%s did not hand leadership over on SIGTERM (its log says the transfer failed)", old.id)
	}

	// /readyz: once it answered 503 after the signal it never answered 200
	// again, and after the exit the port is closed.
	var first503 time.Time
	for _, p := range probes {
		if p.at.Before(sentAt) {
			continue
		}
		if p.code == http.StatusServiceUnavailable && first503.IsZero() {
			first503 = p.at
		}
		if p.code == http.StatusOK && !first503.IsZero() {
			t.Fatalf("%s: /readyz answered 200 again %v after SIGTERM, after it had answered 503", old.id, p.at.Sub(sentAt))
		}
	}
	if code, err := kit.Do(http.MethodGet, old.url()+"/readyz", nil, nil); err == nil || code != 0 {
		t.Fatalf("%s: the API port still answered (%d) after the process exited", old.id, code)
	}
	if first503.IsZero() {
		t.Logf("%s: /readyz: no 503 seen before the port closed (the exit took %v)", old.id, took.Round(time.Millisecond))
	} else {
		t.Logf("%s: /readyz: 503 %v after SIGTERM, then the port closed", old.id, first503.Sub(sentAt).Round(time.Millisecond))
	}

	nl := c.leader(10*time.Second, nodes, old)
	var first op
	h.waitFor(t, 10*time.Second, "a reservation after SIGTERM", func() bool {
		var ok bool
		first, ok = h.firstStartedAfter(sentAt.Add(took))
		return ok
	})
	t.Logf("handover: %s is leader; first reservation sent after the exit acknowledged %v after SIGTERM",
		nl.id, first.ack.Sub(sentAt).Round(time.Millisecond))
	time.Sleep(500 * time.Millisecond) // keep loading through the new leader

	c.restart(old)
	c.waitReady(20*time.Second, nodes...)
	l.halt()
	before := maxLastAckedBefore(h.snapshot(), time.Now())
	start := time.Now()
	r := reserveVia(t, old, "orders", 5)
	h.add(op{via: old.id + " (restarted)", start: start, ack: time.Now(), r: r})
	if r.First <= before {
		t.Fatalf("range %+v through the restarted %s is not above %d", r, old.id, before)
	}
	h.check(t)
	ops := h.snapshot()
	t.Logf("%d ranges acknowledged, disjoint and in real-time order; failed attempts: %s", len(ops), h.failSummary())
}
