package server_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/ticketd/ticketd/api"
)

// A node's Snowflake metrics are its generators' own figures: the IDs it
// made in a namespace, 1 and the lease's time left while it serves, 0 and 0
// for a namespace it was asked for and cannot serve (its one worker id held
// by someone else); GET /v1/cluster says the same.
func TestSnowflakeMetrics_IDsMadeServingAndLeaseLeft(t *testing.T) {
	tc := authCluster(t, 1)
	n := tc.Running()[0]
	base := tc.URL(n)
	for name, body := range map[string]string{
		"orders": `{"lease_ttl_ms":30000}`,
		"tight":  `{"timestamp_bits":50,"worker_bits":1,"sequence_bits":12,"max_workers":1,"lease_ttl_ms":600000}`,
	} {
		if r := asAdmin.MustCall(t, http.MethodPut, base+"/v1/namespaces/"+name, body); r.Status != http.StatusCreated {
			t.Fatalf("create namespace %s: %d %s", name, r.Status, r.Body)
		}
	}
	if r := asReserver.MustCall(t, http.MethodPost, base+"/v1/namespaces/tight/leases", `{"holder":"elsewhere"}`); r.Status != http.StatusCreated {
		t.Fatalf("acquire tight's one worker id: %d %s", r.Status, r.Body)
	}
	for _, body := range []string{"", `{"count":100}`, `{"count":1000}`} {
		if r := asReserver.MustCall(t, http.MethodPost, base+"/v1/namespaces/orders/ids", body); r.Status != http.StatusOK {
			t.Fatalf("IDs of orders: %d %s", r.Status, r.Body)
		}
	}
	if r := asReserver.MustCall(t, http.MethodPost, base+"/v1/namespaces/tight/ids", ""); r.Status != http.StatusServiceUnavailable {
		t.Fatalf("IDs of tight: %d %s, want 503", r.Status, r.Body)
	}

	m := scrape(t, tc, n)
	for series, want := range map[string]float64{
		`ticketd_snowflake_ids_total{namespace="orders"}`:              1101,
		`ticketd_snowflake_serving{namespace="orders"}`:                1,
		`ticketd_snowflake_ids_total{namespace="tight"}`:               0,
		`ticketd_snowflake_serving{namespace="tight"}`:                 0,
		`ticketd_snowflake_lease_remaining_seconds{namespace="tight"}`: 0,
	} {
		if got, ok := m[series]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", series, got, ok, want)
		}
	}
	left, ok := m[`ticketd_snowflake_lease_remaining_seconds{namespace="orders"}`]
	if !ok || left <= 0 || left > (30*time.Second).Seconds() {
		t.Errorf("lease of orders: %v s left (present %v), want within the 30 s TTL", left, ok)
	}

	var st api.ClusterStatus
	if status, err := asReserver.Do(http.MethodGet, base+"/v1/cluster", nil, &st); err != nil || status != http.StatusOK {
		t.Fatalf("GET /v1/cluster: %d %v", status, err)
	}
	if len(st.Snowflake) != 2 {
		t.Fatalf("GET /v1/cluster: snowflake %+v, want orders and tight", st.Snowflake)
	}
	o, ti := st.Snowflake[0], st.Snowflake[1]
	if o.Namespace != "orders" || !o.Serving || o.Issued != 1101 || o.WorkerID < 0 || o.LeaseRemainingMs <= 0 {
		t.Errorf("GET /v1/cluster: orders %+v, want serving, 1101 issued, a worker id and time left", o)
	}
	if ti.Namespace != "tight" || ti.Serving || ti.Reason == "" || ti.WorkerID != -1 || ti.LeaseRemainingMs != 0 {
		t.Errorf("GET /v1/cluster: tight %+v, want not serving, why, no worker id", ti)
	}
}
