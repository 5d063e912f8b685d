package ui_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/internal/testcluster"
	"github.com/ticketd/ticketd/internal/testkit"
	"github.com/ticketd/ticketd/server"
)

const (
	adminToken   = "admin-token-of-the-status-page-test"
	reserveToken = "reserve-token-of-the-status-page-test"
	wrongToken   = "not-a-token-of-this-cluster"

	// bigStart is 2^53+1: the first integer a JavaScript Number cannot
	// hold (it reads 9007199254740992), so the page shows it exactly only
	// if it parses IDs as it should.
	bigStart int64 = 9007199254740993

	// evilHolder is a lease holder that is markup: the page must show it
	// as text.
	evilHolder = `<img src=x id=injected onerror="document.title='owned'">web-1/4242`
)

// chromiumPath finds the browser: TICKETD_CHROMIUM when set (then the test
// must run, and fails if the browser cannot start), else chromium or
// chromium-browser on PATH, else the test is skipped.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("TICKETD_CHROMIUM"); p != "" {
		if _, err := exec.LookPath(p); err != nil {
			t.Fatalf("TICKETD_CHROMIUM=%s: %v", p, err)
		}
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no chromium or chromium-browser on PATH and TICKETD_CHROMIUM unset: scripts/browser-deps.sh installs Debian's chromium and prints its path")
	return ""
}

// pageState is what the test reads of the page, through the ids and data-
// attributes the page keeps for it.
type pageState struct {
	Phase      string `json:"phase"`
	Refreshes  int    `json:"refreshes"`
	Leader     string `json:"leader"`
	LeaderText string `json:"leaderText"`
	AuthError  string `json:"authError"`
	Members    []struct {
		ID        string   `json:"id"`
		Reachable string   `json:"reachable"`
		State     string   `json:"state"`
		Version   string   `json:"version"`
		Level     string   `json:"level"`
		Tags      []string `json:"tags"`
	} `json:"members"`
	ClusterLevel     string `json:"clusterLevel"`
	ClusterLevelNote string `json:"clusterLevelNote"`
	Banners          []struct {
		ID   string `json:"id"`
		Node string `json:"node"`
		Text string `json:"text"`
	} `json:"banners"`
	Sequences []struct {
		Name string `json:"name"`
		Next string `json:"next"`
		Rate string `json:"rate"`
		Text string `json:"text"`
	} `json:"sequences"`
	Holders []string `json:"holders"`
	// Snowflake is each member's Snowflake leases as its row shows them.
	Snowflake []struct {
		Node      string `json:"node"`
		Namespace string `json:"ns"`
		Serving   string `json:"serving"`
		Text      string `json:"text"`
	} `json:"snowflake"`
	Changes []struct {
		Term   string `json:"term"`
		Leader string `json:"leader"`
	} `json:"changes"`
	// The disaster-recovery standby's section: shown at all, its row, and
	// the promotions' rows (each the promoted standby's id).
	StandbyShown bool `json:"standbyShown"`
	Standby      []struct {
		ID    string `json:"id"`
		State string `json:"state"`
		Lag   string `json:"lag"`
		Text  string `json:"text"`
	} `json:"standby"`
	Promotions []string `json:"promotions"`
	Injected   int      `json:"injected"`
	Title      string   `json:"title"`
}

const readPage = `(() => {
	const q = (s) => [...document.querySelectorAll(s)];
	const authError = document.getElementById("auth-error");
	return {
		phase: document.body.dataset.phase || "",
		refreshes: Number(document.getElementById("updated").dataset.refreshes || 0),
		leader: document.getElementById("leader").dataset.leader || "",
		leaderText: document.getElementById("leader").textContent,
		authError: authError.hidden ? "" : authError.textContent,
		members: q("#members tbody tr[data-node]").map((r) => ({id: r.dataset.node, reachable: r.dataset.reachable, state: r.dataset.state,
			version: r.dataset.version || "", level: r.dataset.level || "", tags: [...r.querySelectorAll(".tag")].map((t) => t.textContent)})),
		clusterLevel: document.getElementById("cluster-level").dataset.level || "",
		clusterLevelNote: document.getElementById("cluster-level-note").textContent,
		banners: q("#banners [data-banner]").map((b) => ({id: b.dataset.banner, node: b.dataset.node || "", text: b.textContent})),
		sequences: q("#sequences tbody tr[data-sequence]").map((r) => ({name: r.dataset.sequence, next: r.dataset.next, rate: r.dataset.rate, text: r.textContent})),
		holders: q("#namespaces td.holder").map((td) => td.textContent),
		snowflake: q("#members td.snowflake [data-namespace]").map((d) => ({node: d.closest("tr").dataset.node, ns: d.dataset.namespace,
			serving: d.dataset.serving, text: d.textContent})),
		changes: q("#leader-changes tbody tr[data-term]").map((r) => ({term: r.dataset.term, leader: r.dataset.leader})),
		standbyShown: !document.getElementById("standby-section").hidden,
		standby: q("#standby tbody tr[data-standby]").map((r) => ({id: r.dataset.standby, state: r.dataset.state, lag: r.dataset.lag, text: r.textContent})),
		promotions: q("#promotions tbody tr[data-promoted]").map((r) => r.dataset.promoted),
		injected: q("#injected, #namespaces img").length,
		title: document.title,
	};
})()`

func (s pageState) member(id string) (reachable, state string, ok bool) {
	for _, m := range s.Members {
		if m.ID == id {
			return m.Reachable, m.State, true
		}
	}
	return "", "", false
}

func (s pageState) banner(id, node string) bool {
	for _, b := range s.Banners {
		if b.ID == id && (node == "" || b.Node == node) {
			return true
		}
	}
	return false
}

func (s pageState) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "phase=%q refreshes=%d leader=%q auth_error=%q members=[", s.Phase, s.Refreshes, s.Leader, s.AuthError)
	for _, m := range s.Members {
		fmt.Fprintf(&b, " %s:%s/%s/%s/level=%s", m.ID, m.State, m.Reachable, m.Version, m.Level)
	}
	fmt.Fprintf(&b, " ] cluster_level=%q (%q)", s.ClusterLevel, s.ClusterLevelNote)
	b.WriteString(" banners=[")
	for _, x := range s.Banners {
		fmt.Fprintf(&b, " %s(%s): %q", x.ID, x.Node, x.Text)
	}
	b.WriteString(" ] sequences=[")
	for _, x := range s.Sequences {
		fmt.Fprintf(&b, " %s next=%s rate=%s", x.Name, x.Next, x.Rate)
	}
	fmt.Fprintf(&b, " ] holders=%q changes=%v", s.Holders, s.Changes)
	return b.String()
}

// tab is the browser tab the test drives; every action on it is bounded.
type tab struct {
	t   *testing.T
	ctx context.Context
}

func (p tab) do(what string, timeout time.Duration, actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, timeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		p.t.Fatalf("%s: %v", what, err)
	}
}

func (p tab) read() (pageState, error) {
	ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate[pageState](readPage))
}

func evalString(p tab, js string) string {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
	if err != nil {
		p.t.Fatalf("evaluate %s: %v", js, err)
	}
	return s
}

// waitFor polls the page until cond accepts what it shows, and fails the
// test with the page's last state if timeout passes first.
func (p tab) waitFor(what string, timeout time.Duration, cond func(pageState) error) pageState {
	p.t.Helper()
	var last pageState
	testkit.EventuallyErr(p.t, timeout, 100*time.Millisecond, what, func() error {
		s, err := p.read()
		if err != nil {
			return err
		}
		last = s
		if err := cond(s); err != nil {
			return fmt.Errorf("%w; the page shows %s", err, s)
		}
		return nil
	})
	return last
}

func (p tab) enterToken(token string) {
	p.t.Helper()
	p.do("enter the token", 10*time.Second,
		chromedp.WaitVisible(chromedp.CSS("#token-input")),
		chromedp.SendKeys(chromedp.CSS("#token-input"), token),
		chromedp.Click(chromedp.CSS("#token-submit")))
}

// consoleLog collects the page's uncaught exceptions and the browser's
// reports of what the Content-Security-Policy blocked.
type consoleLog struct {
	mu  sync.Mutex
	bad []string
}

// watchConsole reads the console of the tab of ctx until ctx ends.
func watchConsole(ctx context.Context) *consoleLog {
	c := &consoleLog{}
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.IsException() || strings.Contains(m.Text, "Content Security Policy") || strings.Contains(m.Text, "Refused to") {
				c.mu.Lock()
				c.bad = append(c.bad, m.String())
				c.mu.Unlock()
			}
		}
	}()
	return c
}

func (c *consoleLog) problems() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.bad...)
}

// TestStatusPage_Browser_ShowsClusterFollowsFailoverRefusesWrongToken opens
// the status page of a real 3-node cluster with authentication on in
// headless Chromium: a wrong token gets a plain refusal; the right one shows
// the three members, the leader, a sequence's exact 64-bit next ID, its rate,
// a lease holder written as markup shown as text; when the leader is killed
// the page names the new leader and shows the old one unreachable within a
// few seconds; and with a single member left it says there is no leader. With TICKETD_SCREENSHOT=<file.png> it also writes a
// full-page screenshot (TICKETD_SCREENSHOT_WIDTH px wide, 1280 by default)
// after 90 s of load, so that the chart has lines.
func TestStatusPage_Browser_ShowsClusterFollowsFailoverRefusesWrongToken(t *testing.T) {
	chromium := chromiumPath(t)
	shotPath := os.Getenv("TICKETD_SCREENSHOT")
	shotWidth := int64(1280)
	if w := os.Getenv("TICKETD_SCREENSHOT_WIDTH"); w != "" {
		n, err := strconv.ParseInt(w, 10, 64)
		if err != nil || n < 200 {
			t.Fatalf("TICKETD_SCREENSHOT_WIDTH=%q: want a width in pixels", w)
		}
		shotWidth = n
	}
	began := time.Now()

	tokens := testcluster.Tokens(t, adminToken, reserveToken)
	tc := testcluster.NewWithOptions(t, 3, testcluster.Options{
		Token: adminToken,
		Tweak: func(id string, cfg *server.Config) {
			cfg.Tokens = tokens
			// Blocks of about a second of this test's light load, so that
			// each sequence's next moves often and its rate shows within
			// seconds (production load gets such blocks by its rate).
			cfg.Issuer.RequestsPerBlock = 8
		},
	})
	leader := tc.Leader(10 * time.Second)
	var pageNode *testcluster.Node
	for _, n := range tc.Running() {
		if n.ID != leader.ID {
			pageNode = n // a follower, so that it outlives the leader
			break
		}
	}
	asAdmin := tc.Client()
	asReserver := testkit.Client{Token: reserveToken, Timeout: 3 * time.Second}
	base := tc.URL(pageNode)

	tc.CreateSequence("orders", nil)
	tc.CreateSequence("invoices", nil)
	start := bigStart
	tc.CreateSequence("big", api.CreateSequenceRequest{Start: &start})
	if status, err := asAdmin.Do(http.MethodPut, base+"/v1/namespaces/users", nil, nil); err != nil || status != http.StatusCreated {
		t.Fatalf("create namespace: %d %v", status, err)
	}
	var leases []api.Lease
	for _, holder := range []string{evilHolder, "api-7/311"} {
		var l api.Lease
		if status, err := asReserver.Do(http.MethodPost, base+"/v1/namespaces/users/leases", api.LeaseRequest{Holder: holder}, &l); err != nil || status != http.StatusCreated {
			t.Fatalf("acquire a lease for %q: %d %v", holder, status, err)
		}
		leases = append(leases, l)
	}

	// Snowflake IDs made by the page's node: it serves users, and cannot
	// serve tight, whose one worker id another holder has for 10 minutes.
	if status, err := asReserver.Do(http.MethodPost, base+"/v1/namespaces/users/ids", api.SnowflakeIDsRequest{}, nil); err != nil || status != http.StatusOK {
		t.Fatalf("Snowflake IDs of users from %s: %d %v", pageNode.ID, status, err)
	}
	tight := []byte(`{"timestamp_bits":50,"worker_bits":1,"sequence_bits":12,"max_workers":1,"lease_ttl_ms":600000}`)
	if status, err := asAdmin.Do(http.MethodPut, base+"/v1/namespaces/tight", json.RawMessage(tight), nil); err != nil || status != http.StatusCreated {
		t.Fatalf("create namespace tight: %d %v", status, err)
	}
	if status, err := asReserver.Do(http.MethodPost, base+"/v1/namespaces/tight/leases", api.LeaseRequest{Holder: "elsewhere"}, nil); err != nil || status != http.StatusCreated {
		t.Fatalf("acquire tight's one worker id: %d %v", status, err)
	}
	// The node's first request of a namespace waits up to 3 s for a lease.
	patient := testkit.Client{Token: reserveToken, Timeout: 10 * time.Second}
	if status, err := patient.Do(http.MethodPost, base+"/v1/namespaces/tight/ids", api.SnowflakeIDsRequest{}, nil); err != nil || status != http.StatusServiceUnavailable {
		t.Fatalf("Snowflake IDs of tight from %s: %d %v, want 503", pageNode.ID, status, err)
	}

	// Load through the page's node (it forwards to the leader), until the
	// test ends; failures during the failover are expected.
	loadCtx, stopLoad := context.WithCancel(context.Background())
	var load sync.WaitGroup
	for _, l := range []struct {
		seq   string
		count int64
		every time.Duration
	}{{"orders", 40, 50 * time.Millisecond}, {"invoices", 9, 80 * time.Millisecond}} {
		load.Add(1)
		go func() {
			defer load.Done()
			tick := time.NewTicker(l.every)
			defer tick.Stop()
			for {
				select {
				case <-loadCtx.Done():
					return
				case <-tick.C:
					_, _ = asReserver.Call(http.MethodPost, base+"/v1/sequences/"+l.seq+"/ranges", api.ReserveRequest{Count: l.count})
				}
			}
		}()
	}
	load.Add(1)
	go func() { // the holders renew their leases, as the SDK does every TTL/3
		defer load.Done()
		tick := time.NewTicker(5 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-loadCtx.Done():
				return
			case <-tick.C:
				for _, l := range leases {
					_, _ = asReserver.Call(http.MethodPut, fmt.Sprintf("%s/v1/namespaces/users/leases/%d", base, l.WorkerID), api.LeaseTokenRequest{Token: l.Token})
				}
			}
		}
	}()
	t.Cleanup(func() { stopLoad(); load.Wait() })

	// The browser: its life is bound to allocCtx, which the cleanup ends
	// (waiting for the process) before the temp profile is removed.
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(int(shotWidth), 900),
		chromedp.Flag("disable-gpu", true),
	)
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium's sandbox refuses to run as root
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	browserCtx, cancelBrowser := chromedp.NewContext(allocCtx)
	t.Cleanup(cancelBrowser)
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(browserCtx) }() // starts the browser, not bound by a timeout
	select {
	case err := <-started:
		if err != nil {
			t.Fatalf("start %s: %v", chromium, err)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("%s did not start within 60 s", chromium)
	}
	page := tab{t: t, ctx: browserCtx}
	console := watchConsole(browserCtx)
	page.do("set the viewport", 10*time.Second, chromedp.EmulateViewport(shotWidth, 900))
	page.do("open the page", 20*time.Second, chromedp.Navigate(base+"/ui/"))

	// No token yet: the page asks for one, and says nothing was refused.
	page.waitFor("the page to ask for a token", 10*time.Second, func(s pageState) error {
		if s.Phase != "token" || s.AuthError != "" {
			return errors.New("no plain request for a token")
		}
		return nil
	})

	// A wrong token: a plain refusal.
	page.enterToken(wrongToken)
	page.waitFor("the refusal of a wrong token", 10*time.Second, func(s pageState) error {
		if !strings.HasPrefix(s.AuthError, "The token was refused (401): ") || s.Phase != "token" {
			return errors.New(`no "The token was refused (401): ..." message`)
		}
		return nil
	})

	// The right token: three members, the leader named, the data exact.
	page.enterToken(reserveToken)
	page.waitFor("three members and the leader "+leader.ID, 15*time.Second, func(s pageState) error {
		if len(s.Members) != 3 {
			return fmt.Errorf("%d members, want 3", len(s.Members))
		}
		for _, m := range s.Members {
			if m.Reachable != "true" {
				return fmt.Errorf("member %s not shown reachable", m.ID)
			}
		}
		if s.Leader != leader.ID || !strings.Contains(s.LeaderText, leader.ID) {
			return fmt.Errorf("leader shown %q (%q), want %s", s.Leader, s.LeaderText, leader.ID)
		}
		if _, st, _ := s.member(leader.ID); st != "Leader" {
			return fmt.Errorf("member %s shown as %q, want Leader", leader.ID, st)
		}
		if s.banner("no-leader", "") || s.banner("unreachable", "") {
			return errors.New("a healthy cluster shows a no-leader or unreachable banner")
		}
		return nil
	})
	page.waitFor("the page's node serving users and standing out for tight", 15*time.Second, func(s pageState) error {
		serving := map[string]string{}
		for _, sf := range s.Snowflake {
			if sf.Node == pageNode.ID {
				serving[sf.Namespace] = sf.Serving
			}
		}
		if serving["users"] != "true" || serving["tight"] != "false" {
			return fmt.Errorf("Snowflake leases shown %+v, want %s serving users and not tight", s.Snowflake, pageNode.ID)
		}
		if !s.banner("snowflake", pageNode.ID) {
			return fmt.Errorf("no snowflake banner for %s", pageNode.ID)
		}
		return nil
	})
	page.waitFor("the sequences, their exact next IDs, a rate, and the leases as text", 20*time.Second, func(s pageState) error {
		next := map[string]string{}
		rate := map[string]string{}
		for _, q := range s.Sequences {
			next[q.Name], rate[q.Name] = q.Next, q.Rate
		}
		if next["big"] != strconv.FormatInt(bigStart, 10) {
			return fmt.Errorf("big's next shown as %q, want %d exactly", next["big"], bigStart)
		}
		if r, _ := strconv.ParseFloat(rate["orders"], 64); !(r > 0) {
			return fmt.Errorf("orders' rate %q, want above 0 under load", rate["orders"])
		}
		found := false
		for _, h := range s.Holders {
			found = found || h == evilHolder
		}
		if !found {
			return fmt.Errorf("lease holder %q not shown verbatim", evilHolder)
		}
		if s.Injected != 0 || s.Title == "owned" {
			return errors.New("a lease holder was inserted as markup")
		}
		return nil
	})
	if got := evalString(page, `sessionStorage.getItem("ticketd.token") + "|" + localStorage.length + "|" + document.cookie`); got != reserveToken+"|0|" {
		t.Errorf("token storage: got %q, want it in sessionStorage only", got)
	}

	// Versions and levels: every member runs this binary, so each shows the
	// same release and level, the cluster's level card says every member
	// is at it, and there is no upgrading banner.
	page.waitFor("every member's version and level, the same, and no upgrading banner", 10*time.Second, func(s pageState) error {
		if s.banner("upgrading", "") {
			return errors.New("an upgrading banner while every member runs the same binary")
		}
		for _, m := range s.Members {
			if m.Version != s.Members[0].Version || m.Level != s.Members[0].Level {
				return fmt.Errorf("member %s shows %q level %q, %s shows %q level %q", m.ID, m.Version, m.Level, s.Members[0].ID, s.Members[0].Version, s.Members[0].Level)
			}
		}
		if s.ClusterLevel == "" || !strings.HasPrefix(s.ClusterLevelNote, "every member at ") {
			return fmt.Errorf("cluster level card %q (%q), want a level and every member at it", s.ClusterLevel, s.ClusterLevelNote)
		}
		return nil
	})
	// A rolling upgrade halfway: the page is made to read, for one member,
	// the answer of a binary from before feature levels (no version, no
	// level: what such a binary sends) and, for the others, a new binary's
	// in a cluster still at level 1. This test has no older binary to run,
	// so the page's fetch rewrites the gathered answer; the rest is real.
	oldID := tc.Running()[0].ID
	evalString(page, `(() => {
		const real = window.fetch;
		window.fetch = async (path, opts) => {
			const resp = await real(path, opts);
			if (!String(path).endsWith("/v1/cluster/nodes") || !resp.ok) {
				return resp;
			}
			const body = await resp.json();
			for (const n of body.nodes) {
				if (!n.status) continue;
				if (n.id === `+strconv.Quote(oldID)+`) {
					delete n.status.version; delete n.status.feature_level; delete n.status.feature; delete n.status.cluster_feature_level;
				} else {
					n.status.version = "v9.9.9-new"; n.status.feature_level = 3; n.status.cluster_feature_level = 1;
				}
			}
			window.ticketdRealFetch = real;
			return new Response(JSON.stringify(body), {status: resp.status, headers: resp.headers});
		};
		return "rewriting";
	})()`)
	page.waitFor("the upgrading banner naming "+oldID+", its level shown as none and the others' as 3", 10*time.Second, func(s pageState) error {
		var text string
		for _, b := range s.Banners {
			if b.ID == "upgrading" {
				text = b.Text
			}
		}
		if !strings.Contains(text, oldID+" (an older binary: level 1)") || !strings.Contains(text, "cluster's feature level is 1; members know up to 3") ||
			!strings.Contains(text, "409 cluster-upgrading") {
			return fmt.Errorf("upgrading banner %q, want it to name %s as an older binary, the levels 1 and 3 and the 409", text, oldID)
		}
		for _, m := range s.Members {
			want, wantVersion := "3", "v9.9.9-new"
			if m.ID == oldID {
				want, wantVersion = "", ""
			}
			if m.Level != want || m.Version != wantVersion {
				return fmt.Errorf("member %s shows %q level %q, want %q level %q", m.ID, m.Version, m.Level, wantVersion, want)
			}
		}
		if s.ClusterLevel != "1" || s.ClusterLevelNote != "of 3: upgrading" {
			return fmt.Errorf("cluster level card %q (%q), want 1 (of 3: upgrading)", s.ClusterLevel, s.ClusterLevelNote)
		}
		return nil
	})
	evalString(page, `(() => { window.fetch = window.ticketdRealFetch; return "real"; })()`)
	page.waitFor("the upgrading banner gone with the real answers", 10*time.Second, func(s pageState) error {
		if s.banner("upgrading", "") {
			return errors.New("the upgrading banner stays")
		}
		return nil
	})

	standbyOnPage(page, leader.ID)

	// The leader dies: the page names the new one and shows the old one
	// unreachable, within a few seconds.
	if shotPath != "" {
		time.Sleep(90 * time.Second) // load, so that the chart has lines
	}
	killed := time.Now()
	tc.Kill(leader.ID)
	s := page.waitFor("a new leader and "+leader.ID+" unreachable", 10*time.Second, func(s pageState) error {
		if s.Leader == "" || s.Leader == leader.ID {
			return fmt.Errorf("leader shown %q, want one other than %s", s.Leader, leader.ID)
		}
		if reachable, _, ok := s.member(leader.ID); !ok || reachable != "false" {
			return fmt.Errorf("%s not shown unreachable", leader.ID)
		}
		if !s.banner("unreachable", leader.ID) {
			return fmt.Errorf("no unreachable banner for %s", leader.ID)
		}
		return nil
	})
	t.Logf("the page showed the new leader %s %v after the kill", s.Leader, time.Since(killed).Round(100*time.Millisecond))
	newLeader := tc.Leader(10 * time.Second)
	page.waitFor("the page's leader to be the serving leader "+newLeader.ID+", in the leadership changes", 10*time.Second, func(s pageState) error {
		if s.Leader != newLeader.ID {
			return fmt.Errorf("leader shown %q, want %s", s.Leader, newLeader.ID)
		}
		if len(s.Changes) == 0 || s.Changes[0].Leader != newLeader.ID {
			return fmt.Errorf("newest leadership change %v, want one to %s", s.Changes, newLeader.ID)
		}
		return nil
	})

	if shotPath != "" {
		time.Sleep(5 * time.Second) // the chart's lines go on past the failover
		ctx, cancel := context.WithTimeout(browserCtx, 20*time.Second)
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		cancel()
		if err != nil {
			t.Fatalf("screenshot: %v", err)
		}
		if err := os.WriteFile(shotPath, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s (%d bytes, %d px wide)", shotPath, len(png), shotWidth)
	}
	// Two of three members gone: no leader, and the page says so.
	for _, n := range tc.Running() {
		if n.ID != pageNode.ID {
			tc.Kill(n.ID)
		}
	}
	page.waitFor("the no-leader banner", 10*time.Second, func(s pageState) error {
		if s.Leader != "" || s.LeaderText != "none" || !s.banner("no-leader", "") {
			return errors.New("no plain sign that there is no leader")
		}
		return nil
	})

	if bad := console.problems(); len(bad) > 0 {
		t.Errorf("the page threw or broke its Content-Security-Policy:\n%s", strings.Join(bad, "\n"))
	}
	t.Logf("test took %v", time.Since(began).Round(100*time.Millisecond))
}

// standbyOnPage: the disaster-recovery standby (issue #34) as the page shows
// it. This test's cluster has no standby (a real one is in the server's
// tests), so the page's fetch adds to the gathered answer what a cluster
// with one sends: the standby's record on every member, the leader's view
// of its replication on the leader's, the standby itself as a non-voting
// member; then a fence and a promotion. The page must show the standby's
// row, its member tagged "standby", a banner while it is out of sync, the
// fence's banner before any other, and nothing of it all once the answers
// are real again.
func standbyOnPage(page tab, leaderID string) {
	page.t.Helper()
	evalString(page, `(() => {
		const real = window.fetch;
		window.ticketdRealFetch = real;
		window.fetch = async (path, opts) => {
			const resp = await real(path, opts);
			if (!String(path).endsWith("/v1/cluster/nodes") || !resp.ok) {
				return resp;
			}
			const body = await resp.json();
			const record = {id: "dr", state: "out-of-sync", bound: 10000000, timeout_ms: 10000, since_index: 812,
				since: "2026-11-27T06:00:00Z", reason: "no progress for 10s with entries it lacks", out_of_sync_count: 2};
			let template = null;
			for (const n of body.nodes) {
				if (!n.status) continue;
				template = template || n;
				n.status.standby = Object.assign({}, record);
				if (n.id === `+strconv.Quote(leaderID)+`) {
					n.status.standby.seen = {ack_index: 700, lag_entries: 5212, last_contact_ms: 10400, last_progress_ms: 31200};
				}
				if (window.ticketdFenced) {
					n.status.fence = {standby: "dr", index: 901, at: "2026-11-27T06:05:00Z", reason: "ticketd-promoted: dr"};
					n.status.promotions = [{standby: "old-dr", at_index: 40, advance: 1000000000000, state: "out-of-sync", token_floor: 12}];
				}
			}
			const dr = JSON.parse(JSON.stringify(template));
			dr.id = "dr"; dr.voter = false; dr.http_addr = "";
			dr.status.node = "dr"; dr.status.this_node_standby = true; delete dr.status.standby.seen; dr.status.state = "Follower";
			body.nodes.push(dr);
			return new Response(JSON.stringify(body), {status: resp.status, headers: resp.headers});
		};
		return "rewriting";
	})()`)
	page.waitFor("the standby's row, its member tagged standby, and its out-of-sync banner", 10*time.Second, func(s pageState) error {
		if !s.StandbyShown || len(s.Standby) != 1 {
			return fmt.Errorf("standby section shown %v with rows %+v, want dr's", s.StandbyShown, s.Standby)
		}
		sb := s.Standby[0]
		if sb.ID != "dr" || sb.State != "out-of-sync" || sb.Lag != "5212" || !strings.Contains(sb.Text, "10,000,000") ||
			!strings.Contains(sb.Text, "index 812") || !strings.Contains(sb.Text, "31 s ago") || !strings.Contains(sb.Text, "no progress for 10s") {
			return fmt.Errorf("standby row %+v, want dr out of sync, its bound, since index 812, the leader's lag and progress, the reason", sb)
		}
		tagged := false
		for _, m := range s.Members {
			tagged = tagged || m.ID == "dr" && slices.Contains(m.Tags, "standby")
		}
		if !tagged {
			return errors.New("member dr not tagged standby")
		}
		var text string
		for _, b := range s.Banners {
			if b.ID == "standby" && b.Node == "dr" {
				text = b.Text
			}
		}
		if !strings.Contains(text, "dr is out of sync since index 812") || !strings.Contains(text, "--advance") {
			return fmt.Errorf("standby banner %q, want it to say dr is out of sync and a promotion needs --advance", text)
		}
		if s.banner("fenced", "") || len(s.Promotions) != 0 {
			return errors.New("a fence or a promotion shown before there is one")
		}
		return nil
	})
	evalString(page, `(() => { window.ticketdFenced = true; return "fenced"; })()`)
	page.waitFor("the fence's banner first, and the promotion", 10*time.Second, func(s pageState) error {
		if len(s.Banners) == 0 || s.Banners[0].ID != "fenced" {
			return fmt.Errorf("banners %+v, want the fence's first", s.Banners)
		}
		if t := s.Banners[0].Text; !strings.HasPrefix(t, "FENCED: standby dr was promoted (recorded at index 901") || !strings.Contains(t, "serves nothing") {
			return fmt.Errorf("fence banner %q", t)
		}
		if len(s.Promotions) != 1 || s.Promotions[0] != "old-dr" {
			return fmt.Errorf("promotions %v, want old-dr", s.Promotions)
		}
		return nil
	})
	evalString(page, `(() => { window.fetch = window.ticketdRealFetch; window.ticketdFenced = false; return "real"; })()`)
	page.waitFor("no standby, fence or promotion with the real answers", 10*time.Second, func(s pageState) error {
		if s.StandbyShown || s.banner("standby", "") || s.banner("fenced", "") {
			return errors.New("the standby's section or banners stay")
		}
		for _, m := range s.Members {
			if m.ID == "dr" {
				return errors.New("member dr stays")
			}
		}
		return nil
	})
}
