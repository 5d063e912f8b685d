package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/ticketd/ticketd/api"
)

// writeSequencesTable prints sequences for people: the next ID, how many
// are left, what share of the sequence that is and, when rates is not nil,
// the IDs per second the leader handed out over the last --rate-window
// (rates holds a cell per sequence name; see rate.go).
func writeSequencesTable(w io.Writer, seqs []api.Sequence, rates map[string]string) error {
	cols := []column{left("SEQUENCE"), right("NEXT"), right("REMAINING"), right("LEFT")}
	if rates != nil {
		cols = append(cols, right("RATE"))
	}
	t := newTable(append(cols, right("START"), right("MAX"))...)
	for _, s := range seqs {
		next := "exhausted"
		if s.Next != nil {
			next = cellInt(*s.Next)
		}
		span := float64(uint64(s.Max-s.Start) + 1)
		cells := []string{s.Name, next, cellInt(s.Remaining), cellPercentLeft(float64(s.Remaining), span)}
		if rates != nil {
			cells = append(cells, orDash(rates[s.Name]))
		}
		t.row(append(cells, cellInt(s.Start), cellInt(s.Max))...)
	}
	return t.write(w)
}

// writeLeasesTable prints a namespace's worker-id leases: who holds which
// worker id and until when (the leaders' wall-clock stamps, UTC).
func writeLeasesTable(w io.Writer, l api.LeaseList) error {
	t := newTable(right("WORKER"), left("HOLDER"), left("STATE"), left("GRANTED"), left("EXPIRES"), left("RELEASED"), left("ENDED BY"))
	for _, x := range l.Leases {
		t.row(cellInt(x.WorkerID), x.Holder, orDash(x.State), cellTimeMs(x.GrantedMs), cellTimeMs(x.ExpiresMs),
			cellTimeMs(x.ReleasedMs), orDash(x.EndReason))
	}
	return t.write(w)
}

// writeAuditTable prints audit records, blocks and lease grants in one
// table (a block fills FIRST and LAST, a grant WORKER, HOLDER and TOKEN),
// then how to read the next page when this one is full.
func writeAuditTable(w io.Writer, a api.AuditList, limit int) error {
	t := newTable(right("SEQ"), right("INDEX"), right("TERM"), left("TIME"), left("LEADER"), left("KIND"),
		left("OF"), right("FIRST"), right("LAST"), right("WORKER"), left("HOLDER"), right("TOKEN"))
	for _, r := range a.Records {
		of, first, last, worker, token := r.Sequence, "", "", "", ""
		if r.Namespace != "" {
			of, worker, token = r.Namespace, cellInt(r.WorkerID), cellUint(r.Token)
		} else {
			first, last = cellInt(r.First), cellInt(r.Last)
		}
		t.row(cellUint(r.Seq), cellUint(r.Index), cellUint(r.Term), cellTimeMs(r.TimeMs), orDash(r.Leader), r.Kind,
			of, first, last, worker, r.Holder, token)
	}
	var b strings.Builder
	if err := t.write(&b); err != nil {
		return err
	}
	fmt.Fprintf(&b, "\n%d records (the cluster keeps the latest %d)", len(a.Records), a.Retention)
	if len(a.Records) > 0 && len(a.Records) >= limit {
		fmt.Fprintf(&b, "; more may follow: --after-seq %d", a.Records[len(a.Records)-1].Seq)
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}
