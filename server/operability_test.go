package server_test

import (
	"bytes"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/auth"
	"github.com/ticketd/ticketd/cluster"
	"github.com/ticketd/ticketd/internal/testcluster"
	"github.com/ticketd/ticketd/internal/testkit"
	"github.com/ticketd/ticketd/internal/tlstest"
	"github.com/ticketd/ticketd/server"
)

const (
	adminToken   = "admin-0123456789abcdef0123456789"
	reserveToken = "reserve-0123456789abcdef0123456789"
	wrongToken   = "wrong-0123456789abcdef0123456789"
)

func testTokens(t *testing.T) *auth.Tokens {
	t.Helper()
	return testcluster.Tokens(t, adminToken, reserveToken)
}

func authCluster(t *testing.T, n int) *testcluster.Cluster {
	tokens := testTokens(t)
	return testcluster.NewWithOptions(t, n, testcluster.Options{
		Token: adminToken,
		Tweak: func(id string, cfg *server.Config) { cfg.Tokens = tokens },
	})
}

// Clients of the auth tests: none sends a token, the others one each.
var (
	anonymous  = testkit.Client{}
	asAdmin    = testkit.Client{Token: adminToken}
	asReserver = testkit.Client{Token: reserveToken}
	asWrong    = testkit.Client{Token: wrongToken}
)

// TestAuth_EveryEndpoint_WithoutWrongAndUnderScopedTokens checks every
// endpoint with no token, a wrong token, a token lacking the scope and the
// right one.
func TestAuth_EveryEndpoint_WithoutWrongAndUnderScopedTokens(t *testing.T) {
	tc := authCluster(t, 1)
	tc.CreateSequence("orders", nil)
	base := tc.URL(tc.Running()[0])
	if r := asAdmin.MustCall(t, "PUT", base+"/v1/namespaces/users", `{}`); r.Status != http.StatusCreated {
		t.Fatalf("create namespace: %d %s", r.Status, r.Body)
	}
	endpoints := []struct {
		method, path, body string
		scope              auth.Scope
	}{
		{"GET", "/v1/cluster", "", auth.ScopeReserve},
		{"GET", "/v1/cluster/nodes", "", auth.ScopeReserve},
		{"GET", "/v1/sequences", "", auth.ScopeReserve},
		{"GET", "/v1/sequences/orders", "", auth.ScopeReserve},
		{"POST", "/v1/sequences/orders/ranges", `{"count":1}`, auth.ScopeReserve},
		{"POST", "/v1/namespaces/users/ids", `{"count":2}`, auth.ScopeReserve},
		{"GET", "/metrics", "", auth.ScopeReserve},
		{"PUT", "/v1/sequences/other", "", auth.ScopeAdmin},
		{"POST", "/v1/cluster/snapshot", "", auth.ScopeAdmin},
		{"POST", "/v1/cluster/members", `{"id":"n9","raft_addr":"127.0.0.1:1","http_addr":"127.0.0.1:2"}`, auth.ScopeAdmin},
		{"PUT", "/v1/cluster/members/n9", `{"id":"n9","raft_addr":"127.0.0.1:1","http_addr":"127.0.0.1:2"}`, auth.ScopeAdmin},
		{"DELETE", "/v1/cluster/members/n9", "", auth.ScopeAdmin},
		{"GET", "/v1/backup", "", auth.ScopeAdmin},
		{"POST", "/v1/restore?advance=1", "x", auth.ScopeAdmin},
	}
	for _, e := range endpoints {
		url := base + e.path
		if r := anonymous.MustCall(t, e.method, url, e.body); r.Status != http.StatusUnauthorized || !strings.Contains(r.Header.Get("WWW-Authenticate"), "Bearer") || !strings.Contains(string(r.Body), api.ProblemUnauthorized) {
			t.Errorf("%s %s without a token: %d %q %s", e.method, e.path, r.Status, r.Header.Get("WWW-Authenticate"), r.Body)
		}
		if r := asWrong.MustCall(t, e.method, url, e.body); r.Status != http.StatusUnauthorized {
			t.Errorf("%s %s with a wrong token: %d, want 401", e.method, e.path, r.Status)
		}
		if e.scope == auth.ScopeAdmin {
			if r := asReserver.MustCall(t, e.method, url, e.body); r.Status != http.StatusForbidden || !strings.Contains(string(r.Body), api.ProblemForbidden) {
				t.Errorf("%s %s with a reserve token: %d %s, want 403", e.method, e.path, r.Status, r.Body)
			}
		}
		right := asAdmin
		if e.scope == auth.ScopeReserve {
			right = asReserver
		}
		if r := right.MustCall(t, e.method, url, e.body); r.Status == http.StatusUnauthorized || r.Status == http.StatusForbidden {
			t.Errorf("%s %s with the right token: %d %s", e.method, e.path, r.Status, r.Body)
		}
	}
	for _, open := range []string{"/livez", "/readyz", "/ui/", "/openapi.json"} {
		if r := anonymous.MustCall(t, "GET", base+open, nil); r.Status != http.StatusOK {
			t.Errorf("%s without a token: %d, want 200", open, r.Status)
		}
	}
}

// With auth on, a 3-node cluster still forms (nodes register with the
// leader using an admin token) and followers forward the caller's token.
func TestAuth_Cluster3_FollowersForwardWithToken(t *testing.T) {
	tc := authCluster(t, 3)
	tc.CreateSequence("orders", nil)
	l := tc.Leader(10 * time.Second)
	for _, n := range tc.Running() {
		r := asReserver.MustCall(t, "POST", tc.URL(n)+"/v1/sequences/orders/ranges", `{"count":5}`)
		if r.Status != http.StatusOK {
			t.Fatalf("reserve via %s (leader %s): %d %s", n.ID, l.ID, r.Status, r.Body)
		}
		if r := asWrong.MustCall(t, "POST", tc.URL(n)+"/v1/sequences/orders/ranges", `{"count":5}`); r.Status != http.StatusUnauthorized {
			t.Fatalf("wrong token via %s: %d", n.ID, r.Status)
		}
	}
	// Each node leases its Snowflake worker id through its own API with
	// the node's admin token.
	if r := asAdmin.MustCall(t, "PUT", tc.URL(l)+"/v1/namespaces/users", `{}`); r.Status != http.StatusCreated {
		t.Fatalf("create namespace: %d %s", r.Status, r.Body)
	}
	for _, n := range tc.Running() {
		if r := asReserver.MustCall(t, "POST", tc.URL(n)+"/v1/namespaces/users/ids", `{"count":5}`); r.Status != http.StatusOK {
			t.Fatalf("Snowflake IDs via %s: %d %s", n.ID, r.Status, r.Body)
		}
	}
	status, err := l.Srv.Node().Status()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range status.Members {
		if m.HTTPAddr == "" {
			t.Fatalf("member %s has no HTTP address: registration with the leader failed under auth", m.ID)
		}
	}
}

func raftTLS(ca *tlstest.CA, c tlstest.Cert) *cluster.RaftTLS {
	return &cluster.RaftTLS{
		Server: &tls.Config{Certificates: []tls.Certificate{c.TLS}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.Pool, MinVersion: tls.VersionTLS12},
		Client: cluster.StaticClient(&tls.Config{Certificates: []tls.Certificate{c.TLS}, RootCAs: ca.Pool, MinVersion: tls.VersionTLS12}),
	}
}

// TestRaftTLS_HostWithoutClusterCA_CannotJoinOrSpeakRaft runs a cluster with
// mutual TLS on the Raft port and shows that neither plain TCP, nor TLS with
// a certificate from another CA, gets through, and that a node whose
// certificate comes from another CA cannot join even with an admin token.
func TestRaftTLS_HostWithoutClusterCA_CannotJoinOrSpeakRaft(t *testing.T) {
	ca := tlstest.NewCA(t, "cluster-ca")
	tc := testcluster.New(t, 3, func(id string, cfg *server.Config) {
		cfg.Cluster.TLS = raftTLS(ca, ca.Issue(t, id))
	})
	tc.CreateSequence("orders", nil)
	l := tc.Leader(10 * time.Second)
	if r, st, err := testcluster.Reserve(tc.Running()[1], "orders", 10); err != nil || st != 200 {
		t.Fatalf("reserve over an mTLS cluster: %d %v %+v", st, err, r)
	}

	// Plain TCP speaking the mux's Raft byte gets nothing back.
	conn, err := net.DialTimeout("tcp", l.RaftAddr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	_, _ = conn.Write([]byte("R\x00garbage"))
	if n, err := conn.Read(make([]byte, 16)); err == nil {
		t.Fatalf("plain TCP got %d bytes from the Raft port", n)
	}
	conn.Close()

	// TLS with a certificate from another CA fails the handshake.
	rogueCA := tlstest.NewCA(t, "rogue-ca")
	rogue := rogueCA.Issue(t, "rogue")
	tconn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", l.RaftAddr, &tls.Config{
		Certificates: []tls.Certificate{rogue.TLS}, RootCAs: ca.Pool, MinVersion: tls.VersionTLS12,
	})
	if err == nil {
		_ = tconn.SetDeadline(time.Now().Add(2 * time.Second))
		_, _ = tconn.Write([]byte("P01234567"))
		if _, rerr := tconn.Read(make([]byte, 16)); rerr == nil {
			t.Fatal("a client certificate from another CA was accepted on the Raft port")
		}
		tconn.Close()
	}

	// A node with the rogue CA asks to join through the API: refused, and
	// the configuration keeps three voters.
	join := api.JoinRequest{ID: "rogue", HTTPAddr: "127.0.0.1:1"}
	rogueNode := tc.AddNodeWith("rogue", nil, func(cfg *server.Config) {
		cfg.Cluster.TLS = raftTLS(rogueCA, rogue)
	})
	join.RaftAddr, join.HTTPAddr = rogueNode.RaftAddr, rogueNode.HTTPAddr
	var prob api.Problem
	st, err := tc.Do(http.MethodPost, tc.URL(l)+"/v1/cluster/members", join, &prob)
	if err != nil || st != http.StatusBadRequest || !strings.Contains(prob.Detail, "unreachable") {
		t.Fatalf("join of a node without the cluster CA: %d %v %+v", st, err, prob)
	}
	status, err := l.Srv.Node().Status()
	if err != nil {
		t.Fatal(err)
	}
	if len(status.Members) != 3 {
		t.Fatalf("members after a refused join: %+v", status.Members)
	}
	if rogueNode.Srv.Node().IsMember() {
		t.Fatal("the rogue node believes it is a member")
	}
	// And the cluster kept serving through all of it.
	for _, n := range tc.Running() {
		if n.ID == "rogue" {
			continue
		}
		if r, st, err := testcluster.Reserve(n, "orders", 10); err != nil || st != 200 {
			t.Fatalf("reserve via %s after the rogue attempts: %d %v %+v", n.ID, st, err, r)
		}
	}
}

// TestAPITLS_ClientCertRequired_ForwardingOverHTTPS serves the API over
// HTTPS with client certificates required.
func TestAPITLS_ClientCertRequired_ForwardingOverHTTPS(t *testing.T) {
	ca := tlstest.NewCA(t, "api-ca")
	clientCert := ca.Issue(t, "client")
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: ca.Pool, Certificates: []tls.Certificate{clientCert.TLS}, MinVersion: tls.VersionTLS12,
	}}}
	tc := testcluster.NewWithOptions(t, 3, testcluster.Options{
		Client: client, Scheme: "https",
		Tweak: func(id string, cfg *server.Config) {
			c := ca.Issue(t, id)
			cfg.APITLS = &tls.Config{Certificates: []tls.Certificate{c.TLS}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.Pool, MinVersion: tls.VersionTLS12}
			cfg.PeerTLS = func() *tls.Config {
				return &tls.Config{Certificates: []tls.Certificate{c.TLS}, RootCAs: ca.Pool, MinVersion: tls.VersionTLS12}
			}
		},
	})
	tc.CreateSequence("orders", nil)
	for _, n := range tc.Running() {
		var r api.Range
		if st, err := tc.Do(http.MethodPost, tc.URL(n)+"/v1/sequences/orders/ranges", api.ReserveRequest{Count: 3}, &r); err != nil || st != 200 {
			t.Fatalf("reserve over HTTPS via %s: %d %v", n.ID, st, err)
		}
	}
	// Server-made Snowflake IDs: each node takes its lease through its own
	// API, over HTTPS with its client certificate.
	createNamespace(t, tc, "users", api.NamespaceRequest{})
	for _, n := range tc.Running() {
		var out api.SnowflakeIDs
		if st, err := tc.Do(http.MethodPost, tc.URL(n)+"/v1/namespaces/users/ids", nil, &out); err != nil || st != 200 || len(out.IDs) != 1 {
			t.Fatalf("Snowflake IDs over HTTPS via %s: %d %v %+v", n.ID, st, err, out)
		}
	}
	noCert := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool, MinVersion: tls.VersionTLS12}}}
	if _, err := noCert.Get(tc.URL(tc.Running()[0]) + "/livez"); err == nil {
		t.Fatal("a client without a certificate was served")
	}
}

var metricLine = regexp.MustCompile(`^([a-z_]+)(\{[^}]*\})? ([0-9.e+-]+|NaN)$`)

func scrape(t *testing.T, tc *testcluster.Cluster, n *testcluster.Node) map[string]float64 {
	t.Helper()
	r := asReserver.MustCall(t, "GET", tc.URL(n)+"/metrics", nil)
	if r.Status != http.StatusOK {
		t.Fatalf("/metrics: %d", r.Status)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(r.Body), "\n") {
		m := metricLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		v, _ := strconv.ParseFloat(m[3], 64)
		out[m[1]+m[2]] = v
	}
	return out
}

func TestMetrics_PresentAndMovingAfterLoad(t *testing.T) {
	tc := authCluster(t, 3)
	tc.CreateSequence("orders", nil)
	l := tc.Leader(10 * time.Second)
	before := scrape(t, tc, l)
	for i := 0; i < 100; i++ {
		if r := asReserver.MustCall(t, "POST", tc.URL(l)+"/v1/sequences/orders/ranges", `{"count":7}`); r.Status != 200 {
			t.Fatalf("reserve: %d %s", r.Status, r.Body)
		}
	}
	asReserver.MustCall(t, "POST", tc.URL(l)+"/v1/sequences/nope/ranges", `{"count":7}`)
	if r := asAdmin.MustCall(t, "POST", tc.URL(l)+"/v1/cluster/snapshot", nil); r.Status != http.StatusNoContent {
		t.Fatalf("snapshot: %d %s", r.Status, r.Body)
	}
	after := scrape(t, tc, l)
	moved := []string{
		`ticketd_reservations_total{outcome="ok",sequence="orders"}`,
		`ticketd_ids_issued_total{sequence="orders"}`,
		`ticketd_reservation_duration_seconds_count{outcome="ok"}`,
		`ticketd_leadership_check_seconds_count`,
		`ticketd_raft_snapshots_total`,
		`ticketd_raft_commit_index`,
		`ticketd_raft_applied_index`,
		`ticketd_http_requests_total{code="200",method="POST",route="/v1/sequences/:name/ranges"}`,
	}
	for _, name := range moved {
		if after[name] <= before[name] {
			t.Errorf("%s did not move: %v -> %v", name, before[name], after[name])
		}
	}
	if got := after[`ticketd_ids_issued_total{sequence="orders"}`] - before[`ticketd_ids_issued_total{sequence="orders"}`]; got != 700 {
		t.Errorf("ids issued moved by %v, want 700", got)
	}
	present := map[string]float64{
		`ticketd_raft_is_leader`:            1,
		`ticketd_raft_has_leader`:           1,
		`ticketd_raft_serving`:              1,
		`ticketd_raft_voters`:               3,
		`ticketd_raft_last_contact_seconds`: 0,
	}
	for name, want := range present {
		if got, ok := after[name]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", name, got, ok, want)
		}
	}
	for _, name := range []string{
		`ticketd_reservations_total{outcome="not_found",sequence="nope"}`,
		`ticketd_blocks_committed_total{sequence="orders"}`,
		`ticketd_block_size_ids_count`,
		`ticketd_raft_term`,
		`ticketd_raft_leadership_changes_total`,
		`ticketd_raft_apply_duration_seconds_count`,
		`ticketd_raft_snapshot_duration_seconds_count`,
		`ticketd_build_info{goversion="` + runtime.Version() + `",version="dev"}`,
		`go_goroutines`,
	} {
		if _, ok := after[name]; !ok {
			t.Errorf("metric %s missing", name)
		}
	}
	// A follower reports the leader and its contact with it.
	for _, n := range tc.Running() {
		if n.ID == l.ID {
			continue
		}
		f := scrape(t, tc, n)
		if f[`ticketd_raft_is_leader`] != 0 || f[`ticketd_raft_has_leader`] != 1 {
			t.Errorf("follower %s: is_leader %v has_leader %v", n.ID, f[`ticketd_raft_is_leader`], f[`ticketd_raft_has_leader`])
		}
	}
}

// TestBackupRestore_FirstRangeAboveEverythingBeforeAndAfterBackup takes a
// backup, keeps reserving, restores into a fresh cluster with --advance, and
// checks the restored cluster's first ranges lie above everything reserved
// before and after the backup.
func TestBackupRestore_FirstRangeAboveEverythingBeforeAndAfterBackup(t *testing.T) {
	old := authCluster(t, 3)
	old.CreateSequence("orders", nil)
	old.CreateSequence("small", map[string]int64{"start": 1, "max": 5000})
	ol := old.Leader(10 * time.Second)
	var highest = map[string]int64{}
	reserveN := func(tc *testcluster.Cluster, n *testcluster.Node, seq string, times int) {
		for i := 0; i < times; i++ {
			var r api.Range
			st, err := tc.Do(http.MethodPost, tc.URL(n)+"/v1/sequences/"+seq+"/ranges", api.ReserveRequest{Count: 10}, &r)
			if err != nil || st != 200 {
				t.Fatalf("reserve %s: %d %v", seq, st, err)
			}
			highest[seq] = max(highest[seq], r.Last)
		}
	}
	reserveN(old, ol, "orders", 20)
	reserveN(old, ol, "small", 3)
	r := asAdmin.MustCall(t, "GET", old.URL(old.Running()[1])+"/v1/backup", nil)
	backup := r.Body
	if r.Status != http.StatusOK || len(backup) == 0 {
		t.Fatalf("backup via a follower: %d, %d bytes", r.Status, len(backup))
	}
	// IDs handed out after the backup: the restore must stay above them too.
	reserveN(old, ol, "orders", 50)
	afterBackup := highest["orders"]

	fresh := authCluster(t, 3)
	fl := fresh.Leader(10 * time.Second)
	url := fresh.URL(fresh.Running()[0]) + "/v1/restore"
	if r := asAdmin.MustCall(t, "POST", url, backup); r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), "advance") {
		t.Fatalf("restore without advance: %d %s", r.Status, r.Body)
	}
	if r := asAdmin.MustCall(t, "POST", url+"?advance=0", backup); r.Status != http.StatusBadRequest {
		t.Fatalf("restore with advance 0: %d", r.Status)
	}
	if r := asAdmin.MustCall(t, "POST", url+"?advance=10", "not a backup"); r.Status != http.StatusBadRequest {
		t.Fatalf("restore of garbage: %d", r.Status)
	}
	const advance = 1_000_000
	if r := asAdmin.MustCall(t, "POST", url+"?advance="+strconv.Itoa(advance), backup); r.Status != http.StatusNoContent {
		t.Fatalf("restore: %d %s", r.Status, r.Body)
	}
	// A second restore would merge into a cluster that has sequences.
	if r := asAdmin.MustCall(t, "POST", url+"?advance=10", backup); r.Status != http.StatusConflict {
		t.Fatalf("second restore: %d %s", r.Status, r.Body)
	}
	for _, n := range fresh.Running() {
		var r api.Range
		st, err := fresh.Do(http.MethodPost, fresh.URL(n)+"/v1/sequences/orders/ranges", api.ReserveRequest{Count: 1}, &r)
		if err != nil || st != 200 {
			t.Fatalf("reserve after restore via %s: %d %v", n.ID, st, err)
		}
		if r.First <= afterBackup {
			t.Fatalf("range %+v after restore is not above %d, reserved after the backup", r, afterBackup)
		}
	}
	// "small" (max 5000) was lifted past its max: exhausted, never wrapped.
	var prob api.Problem
	st, err := fresh.Do(http.MethodPost, fresh.URL(fl)+"/v1/sequences/small/ranges", api.ReserveRequest{Count: 1}, &prob)
	if err != nil || st != http.StatusConflict || prob.Type != api.ProblemExhausted {
		t.Fatalf("small after restore: %d %v %+v", st, err, prob)
	}
	// Every node of the fresh cluster has the restored state.
	for _, n := range fresh.Running() {
		n := n
		testkit.Eventually(t, 10*time.Second, 20*time.Millisecond, n.ID+" to hold the restored sequences", func() bool {
			s, ok := n.Srv.Node().FSM().Sequence("orders")
			return ok && s.Issued > afterBackup
		})
	}
}

// TestLimits_OversizeAndOverload_NodeKeepsServing checks 413 and 429 and
// that the node serves normally afterwards.
func TestLimits_OversizeAndOverload_NodeKeepsServing(t *testing.T) {
	tc := testcluster.New(t, 1, func(id string, cfg *server.Config) { cfg.MaxInflight = 1 })
	tc.CreateSequence("orders", nil)
	n := tc.Running()[0]
	url := tc.URL(n) + "/v1/sequences/orders/ranges"
	big := `{"count":1,"pad":"` + strings.Repeat("x", api.MaxBodyBytes) + `"}`
	if r := anonymous.MustCall(t, "POST", url, big); r.Status != http.StatusRequestEntityTooLarge || !strings.Contains(string(r.Body), api.ProblemTooLarge) {
		t.Fatalf("oversize body: %d %s", r.Status, r.Body)
	}

	// Hold the only in-flight slot with a request whose body never ends,
	// on a connection of its own (a pooled one the 413 above is closing
	// would fail at once, and a pipe body cannot be sent again)...
	type slowRequest struct {
		pw     *io.PipeWriter
		done   chan struct{}
		status int
		err    error
	}
	slowClient := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	startSlow := func() *slowRequest {
		pr, pw := io.Pipe()
		req, _ := http.NewRequest("POST", url, pr)
		req.ContentLength = 100
		sr := &slowRequest{pw: pw, done: make(chan struct{})}
		go func() {
			defer close(sr.done)
			resp, err := slowClient.Do(req)
			if err != nil {
				sr.err = err
				return
			}
			sr.status = resp.StatusCode
			resp.Body.Close()
		}()
		_, _ = pw.Write([]byte(`{"count":`))
		return sr
	}
	slow := startSlow()
	// ...then the next request is shed with 429 and Retry-After. Nothing
	// tells when the slow request's headers reach the server, so a probe
	// can take the slot first and the slow request is the one shed; then
	// it is sent again.
	var r testkit.Response
	testkit.Eventually(t, 5*time.Second, 20*time.Millisecond, "a 429", func() bool {
		select {
		case <-slow.done:
			if slow.status != http.StatusTooManyRequests {
				t.Fatalf("the slow request ended before the 429 was seen: %d %v", slow.status, slow.err)
			}
			_ = slow.pw.Close() // or the transport keeps waiting for the rest of its body
			slow = startSlow()
		default:
		}
		r = anonymous.MustCall(t, "POST", url, `{"count":1}`)
		return r.Status == http.StatusTooManyRequests
	})
	if r.Header.Get("Retry-After") == "" || !strings.Contains(string(r.Body), api.ProblemTooManyRequests) {
		t.Fatalf("429 without Retry-After or problem type: %v %s", r.Header, r.Body)
	}
	_, _ = slow.pw.Write(append([]byte("1}"), bytes.Repeat([]byte(" "), 100-len(`{"count":1}`))...))
	_ = slow.pw.Close()
	<-slow.done
	if slow.err != nil || slow.status != http.StatusOK {
		t.Fatalf("the slow request finished with %d %v", slow.status, slow.err)
	}
	if r, st, err := testcluster.Reserve(n, "orders", 5); err != nil || st != 200 || r.Last-r.First != 4 {
		t.Fatalf("after overload: %d %v %+v", st, err, r)
	}
}
