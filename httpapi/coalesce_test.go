package httpapi_test

import (
	"bufio"
	"bytes"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/internal/testcluster"
	"github.com/ticketd/ticketd/internal/testkit"
	"github.com/ticketd/ticketd/metrics"
	"github.com/ticketd/ticketd/server"
)

// coalescingCluster is a 3-node cluster with metrics on, its leader and its
// followers.
func coalescingCluster(t *testing.T) (*testcluster.Cluster, *testcluster.Node, []*testcluster.Node) {
	t.Helper()
	tc := testcluster.New(t, 3, func(_ string, cfg *server.Config) {
		cfg.Metrics = metrics.New("test")
		cfg.MetricsPublic = true
	})
	l := tc.Leader(15 * time.Second)
	var followers []*testcluster.Node
	for _, n := range tc.Running() {
		if n != l {
			followers = append(followers, n)
		}
	}
	return tc, l, followers
}

// servedAtLeader is how many reservations of seq the leader served ("ok").
func servedAtLeader(t *testing.T, tc *testcluster.Cluster, l *testcluster.Node, seq string) int {
	t.Helper()
	r := tc.Client().MustCall(t, http.MethodGet, tc.URL(l)+"/metrics", nil)
	want := `ticketd_reservations_total{outcome="ok",sequence="` + seq + `"} `
	sc := bufio.NewScanner(bytes.NewReader(r.Body))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), want); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("metric %q: %v", sc.Text(), err)
			}
			return int(n)
		}
	}
	return 0
}

// Reservations sent to followers at the same time reach the leader together
// (fewer reservations at the leader than callers), and every caller still
// gets its own count of IDs, disjoint from every other caller's and above
// its own previous ones.
func TestForwardedReservations_Coalesced_DisjointAndFewerAtTheLeader(t *testing.T) {
	tc, l, followers := coalescingCluster(t)
	tc.CreateSequence("co", nil)
	cl := tc.Client()
	log := newRangeLog()
	const workers, each = 24, 30
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			via := tc.URL(followers[w%len(followers)])
			count := int64(1 + w%7)
			var last int64
			for range each {
				r := cl.MustCall(t, http.MethodPost, via+"/v1/sequences/co/ranges", `{"count":`+strconv.FormatInt(count, 10)+`}`)
				if r.Status != http.StatusOK {
					t.Errorf("worker %d: %d %s", w, r.Status, r.Body)
					return
				}
				var rg api.Range
				testkit.DecodeStrict(t, r.Body, &rg)
				if rg.Sequence != "co" || rg.First <= last || rg.Last-rg.First+1 != count {
					t.Errorf("worker %d: range %+v after %d, want %d IDs above it", w, rg, last, count)
					return
				}
				last = rg.Last
				log.add(rg)
			}
		}()
	}
	wg.Wait()
	if n := log.checkDisjoint(t); n != workers*each {
		t.Fatalf("%d ranges, want %d", n, workers*each)
	}
	atLeader := servedAtLeader(t, tc, l, "co")
	t.Logf("%d reservations through followers reached the leader as %d", workers*each, atLeader)
	if atLeader == 0 || atLeader >= workers*each {
		t.Fatalf("the leader served %d reservations for %d callers: none were coalesced", atLeader, workers*each)
	}
}

// A batch the leader refuses (here: it would pass the sequence's maximum
// though some of its parts alone would not) sends each caller on its own:
// what fits is served, the rest get the leader's own "exhausted" problem.
func TestForwardedReservations_BatchRefused_EachCallerAnsweredOnItsOwn(t *testing.T) {
	tc, _, followers := coalescingCluster(t)
	tc.CreateSequence("small", map[string]any{"start": 1, "max": 100})
	cl := tc.Client()
	log := newRangeLog()
	const callers, count = 12, 15
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		served    int
		exhausted int
	)
	start := make(chan struct{})
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			r := cl.MustCall(t, http.MethodPost, tc.URL(followers[i%len(followers)])+"/v1/sequences/small/ranges", `{"count":15}`)
			switch r.Status {
			case http.StatusOK:
				var rg api.Range
				testkit.DecodeStrict(t, r.Body, &rg)
				if rg.First < 1 || rg.Last > 100 || rg.Last-rg.First+1 != count {
					t.Errorf("range %+v outside 1..100 or not %d IDs", rg, count)
				}
				log.add(rg)
				mu.Lock()
				served++
				mu.Unlock()
			case http.StatusConflict:
				expectProblem(t, "reserve past the maximum", r, http.StatusConflict, api.ProblemExhausted)
				mu.Lock()
				exhausted++
				mu.Unlock()
			default:
				t.Errorf("reserve: %d %s", r.Status, r.Body)
			}
		}()
	}
	close(start)
	wg.Wait()
	log.checkDisjoint(t)
	if served == 0 || served*count > 100 || served+exhausted != callers {
		t.Fatalf("%d served, %d exhausted of %d callers", served, exhausted, callers)
	}
}

// Through a follower, a bad or impossible reservation gets the problem the
// leader gives for it, word for word.
func TestForwardedReservations_ProblemsAsAtTheLeader(t *testing.T) {
	tc, l, followers := coalescingCluster(t)
	tc.CreateSequence("p", nil)
	cl := tc.Client()
	for _, c := range []struct{ path, body string }{
		{"/v1/sequences/missing/ranges", `{"count":1}`},
		{"/v1/sequences/p/ranges", `{"count":0}`},
		{"/v1/sequences/p/ranges", `{"count":1,"extra":true}`},
		{"/v1/sequences/p/ranges", `{"count":"1"}`},
		{"/v1/sequences/p/ranges", ``},
		{"/v1/sequences/p/ranges", `{"count":1}x`},
		{"/v1/sequences/bad%20name/ranges", `{"count":1}`},
		// The name is checked before the body is read, on a follower too.
		{"/v1/sequences/bad%20name/ranges", `{"count":1,"pad":"` + strings.Repeat("x", api.MaxBodyBytes) + `"}`},
	} {
		atLeader := cl.MustCall(t, http.MethodPost, tc.URL(l)+c.path, c.body)
		viaFollower := cl.MustCall(t, http.MethodPost, tc.URL(followers[0])+c.path, c.body)
		if atLeader.Status != viaFollower.Status || !bytes.Equal(atLeader.Body, viaFollower.Body) {
			t.Errorf("POST %s %q:\nleader   %d %s\nfollower %d %s", c.path, c.body,
				atLeader.Status, atLeader.Body, viaFollower.Status, viaFollower.Body)
		}
		if atLeader.Status/100 != 4 {
			t.Errorf("POST %s %q: %d, want a 4xx", c.path, c.body, atLeader.Status)
		}
	}
}
