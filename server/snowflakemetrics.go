package server

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ticketd/ticketd/domain"
	"github.com/ticketd/ticketd/metrics"
)

// snowflakeCollector reports, at scrape time, this node's Snowflake service
// (issue #32) per namespace: the IDs it made, whether it can serve, and how
// long its worker-id lease lasts without another renewal. It reads the
// service's own states rather than counting on the request path, so the
// figures are the generator's and the path pays nothing for them.
//
// Namespace names are user data: the first metrics.MaxSequenceLabels by
// name get series of their own, every later one is folded into
// metrics.OtherSequence, as the other per-name metrics are. The fold keeps
// what an alert needs: the IDs summed, and the worst of the rest (not
// serving if any is not, the shortest lease left).
type snowflakeCollector struct {
	states    func() []domain.NodeSnowflake
	ids       *prometheus.Desc
	remaining *prometheus.Desc
	serving   *prometheus.Desc
}

func newSnowflakeCollector(states func() []domain.NodeSnowflake) *snowflakeCollector {
	return &snowflakeCollector{
		states: states,
		ids: prometheus.NewDesc("ticketd_snowflake_ids_total",
			"Snowflake IDs this node's own generator made in a namespace (POST /v1/namespaces/{name}/ids, TICKETD.SNOWFLAKE) since the node started.", []string{"namespace"}, nil),
		remaining: prometheus.NewDesc("ticketd_snowflake_lease_remaining_seconds",
			"How long this node's worker-id lease in a namespace lasts without another renewal, by its monotonic clock (0: no valid lease).", []string{"namespace"}, nil),
		serving: prometheus.NewDesc("ticketd_snowflake_serving",
			"1 while this node can make Snowflake IDs of a namespace (a valid lease, its clock not behind), 0 otherwise; GET /v1/cluster says why not.", []string{"namespace"}, nil),
	}
}

func (c *snowflakeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.ids
	ch <- c.remaining
	ch <- c.serving
}

func (c *snowflakeCollector) Collect(ch chan<- prometheus.Metric) {
	states := c.states()
	for i, st := range states {
		if i >= metrics.MaxSequenceLabels {
			c.collectOther(ch, states[i:])
			return
		}
		c.collect(ch, st)
	}
}

// collectOther reports the namespaces past the label bound as one.
func (c *snowflakeCollector) collectOther(ch chan<- prometheus.Metric, rest []domain.NodeSnowflake) {
	other := domain.NodeSnowflake{Namespace: metrics.OtherSequence, Serving: true, LeaseRemaining: rest[0].LeaseRemaining}
	for _, st := range rest {
		other.Issued += st.Issued
		other.Serving = other.Serving && st.Serving
		other.LeaseRemaining = min(other.LeaseRemaining, st.LeaseRemaining)
	}
	c.collect(ch, other)
}

func (c *snowflakeCollector) collect(ch chan<- prometheus.Metric, st domain.NodeSnowflake) {
	serving := 0.0
	if st.Serving {
		serving = 1
	}
	ch <- prometheus.MustNewConstMetric(c.ids, prometheus.CounterValue, float64(st.Issued), st.Namespace)
	ch <- prometheus.MustNewConstMetric(c.remaining, prometheus.GaugeValue, st.LeaseRemaining.Seconds(), st.Namespace)
	ch <- prometheus.MustNewConstMetric(c.serving, prometheus.GaugeValue, serving, st.Namespace)
}
