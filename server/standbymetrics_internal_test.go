package server

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ticketd/ticketd/domain"
)

// gatherStandby scrapes a standbyCollector: one line per series, sorted,
// as `name{label="value",...} value`.
func gatherStandby(t *testing.T, sb *domain.StandbyStatus, fenced bool) string {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(newStandbyCollector(func() (*domain.StandbyStatus, bool) { return sb, fenced }))
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, fam := range fams {
		for _, m := range fam.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			v := m.GetGauge().GetValue()
			if m.GetCounter() != nil {
				v = m.GetCounter().GetValue()
			}
			name := fam.GetName()
			if len(labels) > 0 {
				name += "{" + strings.Join(labels, ",") + "}"
			}
			lines = append(lines, fmt.Sprintf("%s %g", name, v))
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func TestStandbyCollector_NoStandby_OnlyTheFence(t *testing.T) {
	if got, want := gatherStandby(t, nil, false), "ticketd_cluster_fenced 0"; got != want {
		t.Errorf("no standby:\n%s\nwant\n%s", got, want)
	}
	if got, want := gatherStandby(t, nil, true), "ticketd_cluster_fenced 1"; got != want {
		t.Errorf("fenced, the standby's record gone:\n%s\nwant\n%s", got, want)
	}
}

// On the leader every series is there, the lag and the progress too; on a
// follower (no Seen) they are absent, not 0: a follower does not know them.
func TestStandbyCollector_LeaderAndFollowerViews(t *testing.T) {
	sb := &domain.StandbyStatus{ID: "dr", State: "out-of-sync", Bound: 10_000_000, Timeout: 30 * time.Second,
		SinceIndex: 812, Reason: "no progress for 30s", OutOfSyncCount: 3,
		Seen: &domain.StandbySeen{AckIndex: 700, LagEntries: 1234, LastContact: 31 * time.Second, LastProgress: 45 * time.Second}}
	leader := `ticketd_cluster_fenced 0
ticketd_standby_bound_ids 1e+07
ticketd_standby_in_sync 0
ticketd_standby_info{standby="dr",state="out-of-sync"} 1
ticketd_standby_lag_entries 1234
ticketd_standby_last_progress_seconds 45
ticketd_standby_out_of_sync_total 3
ticketd_standby_timeout_seconds 30`
	if got := gatherStandby(t, sb, false); got != leader {
		t.Errorf("leader:\n%s\nwant\n%s", got, leader)
	}

	inSync := *sb
	inSync.State, inSync.Seen = "in-sync", nil
	follower := `ticketd_cluster_fenced 0
ticketd_standby_bound_ids 1e+07
ticketd_standby_in_sync 1
ticketd_standby_info{standby="dr",state="in-sync"} 1
ticketd_standby_out_of_sync_total 3
ticketd_standby_timeout_seconds 30`
	if got := gatherStandby(t, &inSync, false); got != follower {
		t.Errorf("follower:\n%s\nwant\n%s", got, follower)
	}

	// A leader that has not heard progress in its term has no progress
	// age to give (GET /v1/cluster says -1): the series is absent.
	fresh := *sb
	fresh.State = "catching-up"
	fresh.Seen = &domain.StandbySeen{LagEntries: 9, LastContact: -1, LastProgress: -1}
	got := gatherStandby(t, &fresh, true)
	if strings.Contains(got, "last_progress") || !strings.Contains(got, "ticketd_standby_lag_entries 9") ||
		!strings.Contains(got, `state="catching-up"} 1`) || !strings.Contains(got, "ticketd_standby_in_sync 0") ||
		!strings.Contains(got, "ticketd_cluster_fenced 1") {
		t.Errorf("catching up, no progress yet, fenced:\n%s", got)
	}
}
