package server_test

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/internal/testcluster"
	"github.com/ticketd/ticketd/internal/testkit"
)

// scrapeOpen is scrape for a cluster without tokens.
func scrapeOpen(t *testing.T, tc *testcluster.Cluster, n *testcluster.Node) map[string]float64 {
	t.Helper()
	r := testkit.Client{}.MustCall(t, http.MethodGet, tc.URL(n)+"/metrics", nil)
	if r.Status != http.StatusOK {
		t.Fatalf("%s/metrics: %d", n.ID, r.Status)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(r.Body), "\n") {
		if m := metricLine.FindStringSubmatch(line); m != nil {
			v, _ := strconv.ParseFloat(m[3], 64)
			out[m[1]+m[2]] = v
		}
	}
	return out
}

// The standby's metrics on a real cluster with a standby follow its state
// as the log records it: in sync, out of sync once its link is cut and the
// primary has entries it lacks (the count goes up), in sync again once
// healed; the lag is the leader's alone.
func TestStandbyMetrics_FollowTheRecordedState(t *testing.T) {
	tc := testcluster.New(t, 1, nil)
	tc.CreateSequence("orders", nil)
	addStandby(t, tc, "dr")
	waitStandbyState(t, tc, api.StandbyInSync, 15*time.Second)
	leader := tc.Leader(5 * time.Second)

	want := func(what string, n *testcluster.Node, series map[string]float64, absent ...string) {
		t.Helper()
		testkit.EventuallyErr(t, 10*time.Second, 50*time.Millisecond, what, func() error {
			m := scrapeOpen(t, tc, n)
			for s, v := range series {
				if got, ok := m[s]; !ok || got != v {
					return fmt.Errorf("%s on %s = %v (present %v), want %v", s, n.ID, got, ok, v)
				}
			}
			for _, s := range absent {
				if _, ok := m[s]; ok {
					return fmt.Errorf("%s present on %s", s, n.ID)
				}
			}
			return nil
		})
	}
	want("in sync on the leader", leader, map[string]float64{
		`ticketd_standby_info{standby="dr",state="in-sync"}`: 1,
		`ticketd_standby_in_sync`:                            1,
		`ticketd_standby_bound_ids`:                          float64(api.DefaultStandbyBound),
		`ticketd_standby_timeout_seconds`:                    standbyTimeout.Seconds(),
		`ticketd_standby_out_of_sync_total`:                  0,
		`ticketd_standby_lag_entries`:                        0,
		`ticketd_cluster_fenced`:                             0,
	})
	// The standby itself is not the leader: no lag of its own to give.
	want("in sync on the standby", tc.Node("dr"), map[string]float64{
		`ticketd_standby_info{standby="dr",state="in-sync"}`: 1,
		`ticketd_standby_in_sync`:                            1,
	}, `ticketd_standby_lag_entries`, `ticketd_standby_last_progress_seconds`)

	tc.Net.Isolate("dr")
	// A standby that holds every entry stays in sync however long it is
	// cut off: a new sequence gives it something to miss.
	if status, err := tc.Do(http.MethodPut, tc.URL(leader)+"/v1/sequences/other", nil, nil); err != nil || status != http.StatusCreated {
		t.Fatalf("create: %d %v", status, err)
	}
	waitStandbyState(t, tc, api.StandbyOutOfSync, 10*time.Second)
	m := scrapeOpen(t, tc, leader)
	if m[`ticketd_standby_info{standby="dr",state="out-of-sync"}`] != 1 || m[`ticketd_standby_in_sync`] != 0 ||
		m[`ticketd_standby_out_of_sync_total`] != 1 || !(m[`ticketd_standby_lag_entries`] >= 1) ||
		!(m[`ticketd_standby_last_progress_seconds`] >= standbyTimeout.Seconds()) {
		t.Errorf("out of sync: leader's standby series %v", standbySeries(m))
	}
	tc.Net.Heal("dr")
	waitStandbyState(t, tc, api.StandbyInSync, 15*time.Second)
	want("in sync again", leader, map[string]float64{
		`ticketd_standby_info{standby="dr",state="in-sync"}`: 1,
		`ticketd_standby_in_sync`:                            1,
		`ticketd_standby_out_of_sync_total`:                  1,
	}, `ticketd_standby_info{standby="dr",state="out-of-sync"}`)
}

func standbySeries(m map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		if strings.HasPrefix(k, "ticketd_standby_") || strings.HasPrefix(k, "ticketd_cluster_fenced") {
			out[k] = v
		}
	}
	return out
}
