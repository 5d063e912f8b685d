package server_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/fsm"
	"github.com/ticketd/ticketd/internal/testcluster"
	"github.com/ticketd/ticketd/internal/testkit"
)

// Shard-embedding namespaces (issue #16) on a real 3-node cluster.

func acquireShard(t *testing.T, tc *testcluster.Cluster, n *testcluster.Node, ns, holder, requestID string, shard int64) (api.Lease, api.Problem, int) {
	t.Helper()
	body := api.LeaseRequest{Holder: holder, RequestID: requestID, WorkerID: &shard, ClientTimeMs: time.Now().UnixMilli()}
	r, err := tc.Client().Call(http.MethodPost, tc.URL(n)+"/v1/namespaces/"+ns+"/leases", body)
	if err != nil {
		t.Fatalf("acquire shard %d: %v", shard, err)
	}
	var l api.Lease
	var prob api.Problem
	out := any(&prob)
	if r.Status == http.StatusCreated {
		out = &l
	}
	if err := json.Unmarshal(r.Body, out); err != nil {
		t.Fatalf("acquire shard %d: %d %s: %v", shard, r.Status, r.Body, err)
	}
	return l, prob, r.Status
}

// TestShard_ChosenLease_RefusedWhileHeldOrResting_GrantedAfterRecycle: a
// lease on shard 17 of an "instagram" namespace is refused with 409
// worker-unavailable, naming the holder, through a follower and the leader
// while another holder has it, and while it rests after the release; the
// next holder gets it once the recycle delay has passed, with a larger
// token and the first holder's bound as its floor; the retry of a granted
// acquire gets it back; and an ID composed under the lease decodes to
// shard 17 and its holder through any node.
func TestShard_ChosenLease_RefusedWhileHeldOrResting_GrantedAfterRecycle(t *testing.T) {
	tc := testcluster.New(t, 3, nil)
	var ns api.NamespaceCreated
	req := api.NamespaceRequest{Preset: api.PresetInstagram, LeaseTTLMs: i64p(1000), RecycleDelayMs: i64p(1500)}
	if st, err := tc.Do(http.MethodPut, tc.URL(tc.Running()[0])+"/v1/namespaces/posts", req, &ns); err != nil || st != http.StatusCreated {
		t.Fatalf("create: %d %v", st, err)
	}
	if ns.WorkerRole != api.WorkerRoleShard || ns.TimestampBits != 40 || ns.WorkerBits != 13 || ns.SequenceBits != 10 || ns.TickMs != 1 ||
		ns.MaxWorkers != 8192 || ns.EpochMs != api.InstagramEpochMs || ns.HorizonYears != api.DefaultHorizonYears || len(ns.Warnings) != 0 {
		t.Fatalf("instagram namespace: %+v", ns)
	}
	leader := tc.Leader(10 * time.Second)
	var follower *testcluster.Node
	for _, n := range tc.Running() {
		if n != leader {
			follower = n
		}
	}

	a, prob, st := acquireShard(t, tc, follower, "posts", "db-a", "req-a", 17)
	if st != http.StatusCreated || a.WorkerID != 17 || a.Token == 0 {
		t.Fatalf("acquire shard 17: %d %+v %+v", st, a, prob)
	}
	if again, _, st := acquireShard(t, tc, leader, "posts", "db-a", "req-a", 17); st != http.StatusCreated || again.Token != a.Token {
		t.Fatalf("retry of the granted acquire: %d %+v, want token %d", st, again, a.Token)
	}
	for _, n := range []*testcluster.Node{follower, leader} {
		_, prob, st := acquireShard(t, tc, n, "posts", "db-b", "req-b", 17)
		if st != http.StatusConflict || prob.Type != api.ProblemWorkerUnavailable || prob.Holder != "db-a" || prob.State != "held" ||
			prob.WorkerID == nil || *prob.WorkerID != 17 || prob.EarliestFreeMs < a.ExpiresMs {
			t.Fatalf("shard 17 held, via %s: %d %+v", n.ID, st, prob)
		}
	}
	// No shard chosen, or one out of range: 400.
	if _, st := acquire(t, tc, follower, "posts", "db-c"); st != http.StatusBadRequest {
		t.Fatalf("an acquire that chooses no shard: %d", st)
	}
	if _, _, st := acquireShard(t, tc, leader, "posts", "db-c", "", 8192); st != http.StatusBadRequest {
		t.Fatalf("shard 8192 of 8192: %d", st)
	}

	url := tc.URL(leader) + "/v1/namespaces/posts/leases/17"
	if st, err := tc.Do(http.MethodDelete, url, api.LeaseTokenRequest{Token: a.Token}, nil); err != nil || st != http.StatusOK {
		t.Fatalf("release: %d %v", st, err)
	}
	released := time.Now()
	_, prob, st = acquireShard(t, tc, follower, "posts", "db-b", "req-b", 17)
	if st != http.StatusConflict || prob.Type != api.ProblemWorkerUnavailable || prob.State != "ended" || prob.EndReason != "released" || prob.Holder != "db-a" {
		t.Fatalf("shard 17 resting: %d %+v", st, prob)
	}
	var b api.Lease
	testkit.Eventually(t, 15*time.Second, 50*time.Millisecond, "shard 17 granted to the next holder after the recycle delay", func() bool {
		var st int
		b, prob, st = acquireShard(t, tc, follower, "posts", "db-b", "req-b", 17)
		if st != http.StatusCreated && (st != http.StatusConflict || prob.Type != api.ProblemWorkerUnavailable) {
			t.Fatalf("while waiting for shard 17: %d %+v", st, prob)
		}
		return st == http.StatusCreated
	})
	waited := time.Since(released)
	if waited < 1500*time.Millisecond {
		t.Fatalf("shard 17 granted again %v after its release, before the recycle delay of 1.5 s", waited)
	}
	t.Logf("shard 17 went to the next holder %v after its release (recycle delay 1.5 s)", waited.Round(time.Millisecond))
	if b.WorkerID != 17 || b.Holder != "db-b" || b.Token <= a.Token || b.TimestampFloorMs < a.ExpiresMs-a.TTLMs {
		t.Fatalf("second grant %+v after %+v", b, a)
	}

	// An ID under b's lease decodes to shard 17 and db-b, on every node.
	layout := fsm.Namespace{EpochMs: b.Layout.EpochMs, TimestampBits: b.Layout.TimestampBits, WorkerBits: b.Layout.WorkerBits, SequenceBits: b.Layout.SequenceBits, TickMs: b.Layout.TickMs}
	id := layout.Compose(b.GrantedMs+5, 17, 1023)
	for _, n := range tc.Running() {
		var si api.SnowflakeInspection
		if st, err := tc.Do(http.MethodGet, tc.URL(n)+"/v1/inspect/snowflake/posts/"+strconv.FormatInt(id, 10), nil, &si); err != nil || st != http.StatusOK {
			t.Fatalf("inspect via %s: %d %v", n.ID, st, err)
		}
		if si.Shard == nil || *si.Shard != 17 || si.WorkerID != 17 || si.WorkerRole != api.WorkerRoleShard || si.Sequence != 1023 || si.Holder != "db-b" || !si.Found {
			t.Fatalf("inspection via %s: %+v", n.ID, si)
		}
	}
	var check api.AuditCheck
	if st, err := tc.Do(http.MethodGet, tc.URL(leader)+"/v1/audit/check", nil, &check); err != nil || st != http.StatusOK || len(check.Violations) != 0 || check.LeasesChecked != 2 {
		t.Fatalf("audit check: %d %v %+v", st, err, check)
	}
}

// TestShard_NamespacePresetAndHorizon_OverHTTP: a preset contradicted by an
// explicit field is 400 naming the conflict; a layout that runs out within
// its horizon is created with a warning, and again (200) with the same
// warning; the same bits without the shard role are another namespace
// (409).
func TestShard_NamespacePresetAndHorizon_OverHTTP(t *testing.T) {
	tc := testcluster.New(t, 1, nil)
	n := tc.Running()[0]
	u8 := func(v uint8) *uint8 { return &v }
	var prob api.Problem
	st, err := tc.Do(http.MethodPut, tc.URL(n)+"/v1/namespaces/x", api.NamespaceRequest{Preset: api.PresetInstagram, TimestampBits: u8(41), SequenceBits: u8(9)}, &prob)
	if err != nil || st != http.StatusBadRequest || prob.Type != api.ProblemBadRequest ||
		!containsAll(prob.Detail, "timestamp_bits 41 (the preset's is 40)", "sequence_bits 9 (the preset's is 10)") {
		t.Fatalf("a contradicted preset: %d %v %+v", st, err, prob)
	}
	for i, want := range []int{http.StatusCreated, http.StatusOK} {
		var ns api.NamespaceCreated
		st, err := tc.Do(http.MethodPut, tc.URL(n)+"/v1/namespaces/events", api.NamespaceRequest{HorizonYears: i64p(100)}, &ns)
		if err != nil || st != want || ns.HorizonYears != 100 || len(ns.Warnings) != 1 || !containsAll(ns.Warnings[0], "within its horizon of 100 years") {
			t.Fatalf("PUT %d of a layout that runs out within its horizon: %d %v %+v", i, st, err, ns)
		}
	}
	// The horizon is part of the settings; the default stated or left out
	// is the same.
	if st, _ := tc.Do(http.MethodPut, tc.URL(n)+"/v1/namespaces/events", api.NamespaceRequest{}, nil); st != http.StatusConflict {
		t.Fatalf("the same layout with another horizon: %d", st)
	}
	createNamespace(t, tc, "plain", api.NamespaceRequest{})
	var ns api.NamespaceCreated
	if st, _ := tc.Do(http.MethodPut, tc.URL(n)+"/v1/namespaces/plain", api.NamespaceRequest{HorizonYears: i64p(api.DefaultHorizonYears)}, &ns); st != http.StatusOK || ns.WorkerRole != api.WorkerRoleWorker {
		t.Fatalf("the default horizon stated: %d %+v", st, ns)
	}
	createNamespace(t, tc, "posts", api.NamespaceRequest{Preset: api.PresetInstagram})
	same := api.NamespaceRequest{EpochMs: i64p(api.InstagramEpochMs), TimestampBits: u8(40), WorkerBits: u8(13), SequenceBits: u8(10)}
	if st, _ := tc.Do(http.MethodPut, tc.URL(n)+"/v1/namespaces/posts", same, nil); st != http.StatusConflict {
		t.Fatalf("the preset's bits without the shard role: %d, want 409", st)
	}
	same.WorkerRole = api.WorkerRoleShard
	if st, _ := tc.Do(http.MethodPut, tc.URL(n)+"/v1/namespaces/posts", same, nil); st != http.StatusOK {
		t.Fatalf("the preset spelt out: %d, want 200", st)
	}
}

func i64p(v int64) *int64 { return &v }

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// The wire's names and defaults of issue #16 are the state machine's: the
// server passes roles and horizons through without translating them.
func TestShard_WireConstantsAreTheStateMachines(t *testing.T) {
	if api.WorkerRoleShard != fsm.WorkerRoleShard || api.DefaultHorizonYears != fsm.DefaultHorizonYears {
		t.Fatalf("api %q/%d, fsm %q/%d", api.WorkerRoleShard, api.DefaultHorizonYears, fsm.WorkerRoleShard, fsm.DefaultHorizonYears)
	}
}
