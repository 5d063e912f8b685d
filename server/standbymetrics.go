package server

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ticketd/ticketd/cluster"
	"github.com/ticketd/ticketd/domain"
	"github.com/ticketd/ticketd/fsm"
)

// standbyCollector reports, at scrape time, the cluster's disaster-recovery
// standby as this node's log records it (issue #34), what the leader sees
// of its replication, and whether this cluster is fenced. It reads the
// same values as GET /v1/cluster, so a dashboard, an alert and the status
// page never disagree, and the serving path pays nothing for them.
//
// The standby series are absent while no standby is recorded (an alert on
// them then stays silent, as it should); the lag and progress series only
// come from the leader, the one node that sees the standby's replication.
// ticketd_cluster_fenced is always there, 0 on a healthy cluster, so that
// an alert can also see it fall back to 0.
type standbyCollector struct {
	state func() (*domain.StandbyStatus, bool)

	info         *prometheus.Desc
	inSync       *prometheus.Desc
	bound        *prometheus.Desc
	timeout      *prometheus.Desc
	lag          *prometheus.Desc
	lastProgress *prometheus.Desc
	outOfSync    *prometheus.Desc
	fenced       *prometheus.Desc
}

// standbyAndFence reads the standby and the fence of node, for the collector.
func standbyAndFence(node *cluster.Node) func() (*domain.StandbyStatus, bool) {
	return func() (*domain.StandbyStatus, bool) {
		_, fenced := node.FSM().Fenced()
		return node.StandbyStatus(), fenced
	}
}

func newStandbyCollector(state func() (*domain.StandbyStatus, bool)) *standbyCollector {
	return &standbyCollector{
		state: state,
		info: prometheus.NewDesc("ticketd_standby_info",
			"1 for the cluster's disaster-recovery standby, labelled with its id and its state as the log records it (catching-up, in-sync, out-of-sync); absent when there is none.",
			[]string{"standby", "state"}, nil),
		inSync: prometheus.NewDesc("ticketd_standby_in_sync",
			"1 while the standby is recorded in sync (the leader serves nothing it has not stored but the bound), 0 while catching up or out of sync; absent when there is none.",
			nil, nil),
		bound: prometheus.NewDesc("ticketd_standby_bound_ids",
			"The standby's bound: the IDs per sequence the leader may serve past what the standby stored while it is in sync, and what a promotion advances every sequence by.",
			nil, nil),
		timeout: prometheus.NewDesc("ticketd_standby_timeout_seconds",
			"How long the standby may make no progress, with entries it lacks, before the leader records it out of sync and goes on without it.",
			nil, nil),
		lag: prometheus.NewDesc("ticketd_standby_lag_entries",
			"Log entries the leader holds that the standby has not acknowledged storing (leader only).",
			nil, nil),
		lastProgress: prometheus.NewDesc("ticketd_standby_last_progress_seconds",
			"How long ago the standby last acknowledged storing entries, or that it held every entry (leader only; absent until it did in this leader's term).",
			nil, nil),
		outOfSync: prometheus.NewDesc("ticketd_standby_out_of_sync_total",
			"How many times the log recorded the standby out of sync since it joined.",
			nil, nil),
		fenced: prometheus.NewDesc("ticketd_cluster_fenced",
			"1 when this cluster's standby answered that it was promoted: this cluster serves nothing any more (GET /v1/cluster's fence says since when); 0 otherwise.",
			nil, nil),
	}
}

func (c *standbyCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.info, c.inSync, c.bound, c.timeout, c.lag, c.lastProgress, c.outOfSync, c.fenced} {
		ch <- d
	}
}

func (c *standbyCollector) Collect(ch chan<- prometheus.Metric) {
	sb, fenced := c.state()
	ch <- prometheus.MustNewConstMetric(c.fenced, prometheus.GaugeValue, boolGauge(fenced))
	if sb == nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(c.info, prometheus.GaugeValue, 1, sb.ID, sb.State)
	ch <- prometheus.MustNewConstMetric(c.inSync, prometheus.GaugeValue, boolGauge(sb.State == fsm.StandbyStateInSync))
	ch <- prometheus.MustNewConstMetric(c.bound, prometheus.GaugeValue, float64(sb.Bound))
	ch <- prometheus.MustNewConstMetric(c.timeout, prometheus.GaugeValue, sb.Timeout.Seconds())
	ch <- prometheus.MustNewConstMetric(c.outOfSync, prometheus.CounterValue, float64(sb.OutOfSyncCount))
	if s := sb.Seen; s != nil {
		ch <- prometheus.MustNewConstMetric(c.lag, prometheus.GaugeValue, float64(s.LagEntries))
		if s.LastProgress >= 0 {
			ch <- prometheus.MustNewConstMetric(c.lastProgress, prometheus.GaugeValue, s.LastProgress.Seconds())
		}
	}
}

func boolGauge(v bool) float64 {
	if v {
		return 1
	}
	return 0
}
