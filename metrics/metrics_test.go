package metrics

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// series returns "name{label=value,...} value" for every sample of the
// named metric family.
func series(t *testing.T, m *Metrics, name string) []string {
	t.Helper()
	fams, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, s := range f.GetMetric() {
			var labels []string
			for _, l := range s.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			v := s.GetCounter().GetValue()
			if s.GetHistogram() != nil {
				v = float64(s.GetHistogram().GetSampleCount())
			}
			out = append(out, name+"{"+strings.Join(labels, ",")+"} "+strconv.FormatFloat(v, 'g', -1, 64))
		}
	}
	sort.Strings(out)
	return out
}

func TestObserveHTTP_LabelsAndCounts(t *testing.T) {
	m := New("test")
	r := "/v1/sequences/:name/ranges"
	for range 3 {
		m.ObserveHTTP(r, "POST", 200)
	}
	m.ObserveHTTP(r, "POST", 400)
	m.ObserveHTTP(r, "GET", 200)
	m.ObserveHTTP("/v1/cluster", "POST", 200)
	m.ObserveHTTP(r, "BREW", 418) // a client's method is not a label value
	m.ObserveHTTP(r, "PROPFIND", 418)
	m.ObserveHTTP("unmatched", "DELETE", 404)
	want := []string{
		"ticketd_http_requests_total{code=200,method=GET,route=/v1/sequences/:name/ranges} 1",
		"ticketd_http_requests_total{code=200,method=POST,route=/v1/cluster} 1",
		"ticketd_http_requests_total{code=200,method=POST,route=/v1/sequences/:name/ranges} 3",
		"ticketd_http_requests_total{code=400,method=POST,route=/v1/sequences/:name/ranges} 1",
		"ticketd_http_requests_total{code=404,method=DELETE,route=unmatched} 1",
		"ticketd_http_requests_total{code=418,method=other,route=/v1/sequences/:name/ranges} 2",
	}
	if got := series(t, m, "ticketd_http_requests_total"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestObserveReservation_Counts(t *testing.T) {
	m := New("test")
	m.ObserveReservation("a", "ok", 10, time.Millisecond)
	m.ObserveReservation("a", "ok", 5, time.Millisecond)
	m.ObserveReservation("a", "exhausted", 0, time.Millisecond)
	m.ObserveReservation("b", "ok", 1, time.Millisecond)
	for name, want := range map[string][]string{
		"ticketd_reservations_total": {
			"ticketd_reservations_total{outcome=exhausted,sequence=a} 1",
			"ticketd_reservations_total{outcome=ok,sequence=a} 2",
			"ticketd_reservations_total{outcome=ok,sequence=b} 1",
		},
		"ticketd_ids_issued_total": {
			"ticketd_ids_issued_total{sequence=a} 15",
			"ticketd_ids_issued_total{sequence=b} 1",
		},
		"ticketd_reservation_duration_seconds": {
			"ticketd_reservation_duration_seconds{outcome=exhausted} 1",
			"ticketd_reservation_duration_seconds{outcome=ok} 3",
		},
	} {
		if got := series(t, m, name); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: got\n%s\nwant\n%s", name, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// The per-request bookkeeping of a successful reservation allocates nothing
// once its series exist.
func TestPerRequestMetrics_NoAllocations(t *testing.T) {
	m := New("test")
	route, method := "/v1/sequences/:name/ranges", "POST"
	m.ObserveHTTP(route, method, 200)
	m.ObserveReservation("orders", "ok", 1000, time.Millisecond)
	if n := testing.AllocsPerRun(1000, func() { m.ObserveHTTP(route, method, 200) }); n != 0 {
		t.Errorf("ObserveHTTP: %v allocations per call", n)
	}
	if n := testing.AllocsPerRun(1000, func() { m.ObserveReservation("orders", "ok", 1000, time.Millisecond) }); n != 0 {
		t.Errorf("ObserveReservation: %v allocations per call", n)
	}
}

// Sequence names are user data: with thousands of sequences the memory the
// metrics keep must stay bounded, not only the label values. Every sequence
// past the bound shares the "_other" series and keeps nothing of its own.
func TestObserveReservation_ManySequences_CacheBounded(t *testing.T) {
	m := New("test")
	const sequences = 5000
	for i := range sequences {
		m.ObserveReservation(fmt.Sprintf("seq-%05d", i), "ok", 10, time.Millisecond)
	}
	cached := 0
	m.seqChildren.Range(func(any, any) bool { cached++; return true })
	if cached > MaxSequenceLabels {
		t.Fatalf("%d sequences cached for metrics after %d reservations, want at most %d", cached, sequences, MaxSequenceLabels)
	}
	want := fmt.Sprintf("ticketd_reservations_total{outcome=ok,sequence=%s} %d", OtherSequence, sequences-MaxSequenceLabels)
	if got := series(t, m, "ticketd_reservations_total"); !slices.Contains(got, want) {
		t.Fatalf("no %q among %d series", want, len(got))
	}
}
