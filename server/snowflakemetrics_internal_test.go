package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ticketd/ticketd/domain"
	"github.com/ticketd/ticketd/metrics"
)

// gatherSnowflake scrapes a snowflakeCollector over states: family ->
// namespace -> value.
func gatherSnowflake(t *testing.T, states []domain.NodeSnowflake) map[string]map[string]float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(newSnowflakeCollector(func() []domain.NodeSnowflake { return states }))
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]float64{}
	for _, fam := range fams {
		out[fam.GetName()] = map[string]float64{}
		for _, m := range fam.GetMetric() {
			v := m.GetGauge().GetValue()
			if m.GetCounter() != nil {
				v = m.GetCounter().GetValue()
			}
			out[fam.GetName()][m.GetLabel()[0].GetValue()] = v
		}
	}
	return out
}

func TestSnowflakeCollector_ReportsEachNamespacesLease(t *testing.T) {
	got := gatherSnowflake(t, []domain.NodeSnowflake{
		{Namespace: "orders", Serving: true, WorkerID: 3, LeaseRemaining: 25 * time.Second, Issued: 1200},
		{Namespace: "users", Reason: "no worker-id lease", WorkerID: -1, Issued: 7},
	})
	want := map[string]map[string]float64{
		"ticketd_snowflake_ids_total":               {"orders": 1200, "users": 7},
		"ticketd_snowflake_lease_remaining_seconds": {"orders": 25, "users": 0},
		"ticketd_snowflake_serving":                 {"orders": 1, "users": 0},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
}

// Past the label bound the namespaces share one series, and a namespace
// that cannot serve there still shows: serving 0 and the shortest lease.
func TestSnowflakeCollector_ManyNamespaces_BoundedAndTheWorstOfTheRestShows(t *testing.T) {
	const namespaces = metrics.MaxSequenceLabels + 44
	states := make([]domain.NodeSnowflake, namespaces)
	for i := range states {
		states[i] = domain.NodeSnowflake{Namespace: fmt.Sprintf("ns-%04d", i), Serving: true, LeaseRemaining: 20 * time.Second, Issued: 10}
	}
	last := &states[namespaces-1]
	last.Serving, last.LeaseRemaining = false, 0
	states[namespaces-2].LeaseRemaining = 2 * time.Second
	got := gatherSnowflake(t, states)
	for fam, series := range got {
		if len(series) != metrics.MaxSequenceLabels+1 {
			t.Errorf("%s: %d series, want %d and %s", fam, len(series), metrics.MaxSequenceLabels, metrics.OtherSequence)
		}
	}
	other := metrics.OtherSequence
	if ids := got["ticketd_snowflake_ids_total"][other]; ids != 44*10 {
		t.Errorf("ids_total{%s} = %v, want %d", other, ids, 44*10)
	}
	if s := got["ticketd_snowflake_serving"][other]; s != 0 {
		t.Errorf("serving{%s} = %v, want 0: one namespace past the bound cannot serve", other, s)
	}
	if r := got["ticketd_snowflake_lease_remaining_seconds"][other]; r != 0 {
		t.Errorf("lease_remaining_seconds{%s} = %v, want 0 (the shortest)", other, r)
	}
	if s := got["ticketd_snowflake_serving"]["ns-0000"]; s != 1 {
		t.Errorf("serving{ns-0000} = %v, want 1", s)
	}
}
