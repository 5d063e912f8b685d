package server

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ticketd/ticketd/fsm"
	"github.com/ticketd/ticketd/metrics"
)

// With more sequences than the label bound, the capacity gauge must show
// the ones closest to running out, wherever their names sort: an alert on
// capacity would otherwise never see a sequence named after the first few
// hundred.
func TestCapacityCollector_ManySequences_ReportsThoseClosestToExhaustion(t *testing.T) {
	f := fsm.New()
	var index uint64
	apply := func(data []byte) any {
		index++
		return f.Apply(&raft.Log{Index: index, Term: 1, Type: raft.LogCommand, Data: data})
	}
	const sequences = 1000
	for i := range sequences {
		apply(fsm.EncodeCreateSequence(fsm.CreateSequence{Name: fmt.Sprintf("t-%04d", i), Start: 1, Max: 1000}))
	}
	// The last name by order is nearly used up.
	if _, ok := apply(fsm.EncodeReserveBlock(fsm.ReserveBlock{Name: "t-0999", Count: 990, Min: 1})).(fsm.Block); !ok {
		t.Fatal("reserve failed")
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(newCapacityCollector(f))
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var series []string
	count := -1.0
	for _, fam := range fams {
		for _, m := range fam.GetMetric() {
			switch fam.GetName() {
			case "ticketd_sequence_remaining_ratio":
				series = append(series, fmt.Sprintf("%s=%g", m.GetLabel()[0].GetValue(), m.GetGauge().GetValue()))
			case "ticketd_sequences":
				count = m.GetGauge().GetValue()
			}
		}
	}
	if len(series) > metrics.MaxSequenceLabels {
		t.Fatalf("%d series, bound %d", len(series), metrics.MaxSequenceLabels)
	}
	if !strings.Contains(strings.Join(series, " "), "t-0999=0.01") {
		t.Fatalf("the nearly exhausted sequence t-0999 is not reported; series start %v", series[:5])
	}
	if count != sequences {
		t.Fatalf("ticketd_sequences = %v, want %d", count, sequences)
	}
}
