package main

import (
	"bytes"
	"strings"
	"testing"
)

func leaseLoad(system string, count uint64, conc int, rps, p50, p99 float64) *loadReport {
	return &loadReport{Label: system, System: system, Group: leaseGroup, Count: count,
		Levels: []levelResult{{Concurrency: conc, Requests: 1, ReservationsPerSec: rps, P50Ms: p50, P99Ms: p99}}}
}

// TestLeaseReport_RowsTargetsAndPeerMean: each lease row is judged against
// the mean of its peer's runs; the probe rows are shown, not targets; the
// delayed network names itself in the targets.
func TestLeaseReport_RowsTargetsAndPeerMean(t *testing.T) {
	r := &fullReport{Env: []string{"network: leasebench, each node in a network namespace of its own (…); packets between node addresses held 2ms each way; clients, Echo and redis-server undelayed"}}
	echoOff, echoOn := leaseLoad(lsEcho, 1000, 16, 1250, 1, 2), leaseLoad(lsEcho, 1000, 16, 1000, 1, 2)
	echoOff.Label, echoOn.Label = "echo-off", "echo-on"
	r.Loads = []*loadReport{
		echoOff, echoOn, // each setting beside its own pass's Echo
		leaseLoad(lsProbe, 1000, 16, 625, 4, 9),
		leaseLoad(lsLease, 1000, 16, 950, 1.1, 2.5),
		// Unlabelled peer runs: the mean of all of them (2000).
		leaseLoad(lsRedis, 1, 64, 1900, 0.5, 1),
		leaseLoad(lsRedis, 1, 64, 2100, 0.5, 1),
		leaseLoad(lsRESPProbe, 1, 64, 1000, 5, 10),
		leaseLoad(lsRESPLease, 1, 64, 1700, 0.6, 1.5),
		// Another group's Echo is not a peer here.
		{Label: "echo", System: "echo", Group: "main", Count: 1000, Levels: []levelResult{{Concurrency: 16, ReservationsPerSec: 1}}},
	}
	rows := lsRows(r)
	if len(rows) != 4 {
		t.Fatalf("rows: %d, want 4: %v", len(rows), rows)
	}
	want := [][]string{
		{"HTTP", "ticketd", "1000", "16", "625", "1250", "0.50×", "-"},
		{"HTTP", "ticketd-lease", "1000", "16", "950", "1000", "0.95×", "1.90×"},
		{"RESP", "ticketd-resp", "1", "64", "1000", "2000", "0.50×", "-"},
		{"RESP", "ticketd-resp-lease", "1", "64", "1700", "2000", "0.85×", "1.70×"},
	}
	for i, w := range want {
		if got := rows[i][:len(w)]; strings.Join(got, "|") != strings.Join(w, "|") {
			t.Errorf("row %d: %v, want %v", i, got, w)
		}
	}
	if got := []string{rows[0][len(rows[0])-1], rows[1][len(rows[1])-1], rows[3][len(rows[3])-1]}; strings.Join(got, ",") != "(missed),met,missed" {
		t.Errorf("marks: %v", got)
	}
	ts := leaseTargets(r)
	if len(ts) != 2 || !ts[0].Met || ts[1].Met {
		t.Fatalf("targets: %+v", ts)
	}
	if !strings.Contains(ts[0].What, "2ms between nodes") {
		t.Errorf("target %q does not name the delay", ts[0].What)
	}
	if got := lsSummary(rows); got != "1 of 2 lease rows met ≥ 0.9× their peer in req/s" {
		t.Errorf("summary %q", got)
	}
	var b bytes.Buffer
	printReport(&b, r)
	if !strings.Contains(b.String(), "Leader leases (issue 44)") {
		t.Errorf("printed report has no lease table:\n%s", b.String())
	}
}
