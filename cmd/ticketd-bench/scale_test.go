package main

import (
	"slices"
	"strings"
	"testing"
)

func TestScale_ParseNodeArgv_ReadsIDDataDirAndHTTPAddr(t *testing.T) {
	argv := splitCmdline([]byte("/w/bin/ticketd\x00serve\x00--dev\x00--id\x00n2\x00--data-dir=/w/d/n2\x00--http-addr\x00127.0.0.1:18682\x00--raft-addr\x00127.0.0.1:18692\x00--initial-cluster\x00n1=a,n2=b\x00"))
	p, err := parseNodeArgv(argv)
	if err != nil {
		t.Fatal(err)
	}
	if p.id != "n2" || p.dataDir != "/w/d/n2" || p.httpAddr != "127.0.0.1:18682" {
		t.Fatalf("got id %q dir %q http %q", p.id, p.dataDir, p.httpAddr)
	}
	if _, err := parseNodeArgv([]string{"ticketd", "serve", "--id", "n1", "--data-dir", "rel/dir"}); err == nil {
		t.Fatal("a relative data dir was accepted")
	}
	if _, err := parseNodeArgv([]string{"redis-server"}); err == nil {
		t.Fatal("a non-ticketd command line was accepted")
	}
}

func TestScale_NewMemberArgv_DropsBootstrapAndOwnAddresses(t *testing.T) {
	like := []string{"/b/ticketd", "serve", "--dev", "--id", "n2", "--data-dir", "/d/n2", "--http-addr", "127.0.0.1:18682",
		"--raft-addr=127.0.0.1:18692", "--initial-cluster", "n1=x,n2=y", "--bootstrap", "--pprof", "--trailing-logs", "100"}
	got := newMemberArgv(like, "n4", "/d/n4", "127.0.0.1:18684", "127.0.0.1:18694")
	want := []string{"/b/ticketd", "serve", "--dev", "--pprof", "--trailing-logs", "100",
		"--id", "n4", "--data-dir", "/d/n4", "--http-addr", "127.0.0.1:18684", "--raft-addr", "127.0.0.1:18694"}
	if !slices.Equal(got, want) {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
}

func TestScale_ParseVmRSSAndMetrics(t *testing.T) {
	if v, ok := parseVmRSS([]byte("Name:\tticketd\nVmPeak:\t  9 kB\nVmRSS:\t   51200 kB\n")); !ok || v != 51200*1024 {
		t.Fatalf("VmRSS = %d, %v", v, ok)
	}
	if _, ok := parseVmRSS([]byte("Name:\tx\n")); ok {
		t.Fatal("VmRSS found where there is none")
	}
	text := []byte(`# HELP go_memstats_heap_inuse_bytes x
go_memstats_heap_inuse_bytes 1.2e+07
go_memstats_heap_inuse_bytes_total 5
ticketd_raft_snapshot_restores_total 1
ticketd_issuer_sequences_evicted_total{reason="cap"} 3
ticketd_issuer_sequences_evicted_total{reason="idle"} 4
`)
	for name, want := range map[string]float64{
		"go_memstats_heap_inuse_bytes":           1.2e7, // not the _total with the same prefix
		"ticketd_raft_snapshot_restores_total":   1,
		"ticketd_issuer_sequences_evicted_total": 7, // every label set
	} {
		if v, ok := scaleMetricSum(text, name); !ok || v != want {
			t.Errorf("%s = %v, %v; want %v", name, v, ok, want)
		}
	}
	if _, ok := scaleMetricSum(text, "absent_metric"); ok {
		t.Error("absent metric found")
	}
}

func TestScale_StatZombie(t *testing.T) {
	if !scaleStatZombie([]byte("123 (ticketd) Z 1 2 3")) {
		t.Error("Z not dead")
	}
	if scaleStatZombie([]byte("123 (tick (d)) S 1 2 3")) {
		t.Error("S taken as dead")
	}
}

func TestScale_PickNewestSnapshot_ByTermThenIndex(t *testing.T) {
	name, idx, ok := pickNewestSnapshot([]string{"2-900-1700000000000", "3-100-1600000000000", "3-200-1500000000000", "3-999-1800000000000.tmp", "junk"})
	if !ok || name != "3-200-1500000000000" || idx != 200 {
		t.Fatalf("got %q %d %v", name, idx, ok)
	}
	if _, _, ok := pickNewestSnapshot([]string{"x.tmp"}); ok {
		t.Fatal("picked a snapshot from none")
	}
}

func TestScale_PerSequenceAndTable(t *testing.T) {
	before := memReading{Stage: "before", Role: "leader", RSSBytes: 1000, HeapInuse: -1}
	after := memReading{Stage: "after_create", Role: "leader", RSSBytes: 21000, HeapInuse: 500}
	m := perSequence(before, after, 100)
	if m.RSSPerSeq != 200 || m.HeapInusePerSeq != -1 {
		t.Fatalf("got %+v", m)
	}
	reps := []scaleReport{{
		Sequences: 10000, Create: scalePhase{Done: 10000, PerSec: 2500.4, P99Ms: 30},
		PerSequence: []memPerSeq{m, {Stage: "after_create", Role: "follower", RSSPerSeq: 150, HeapInusePerSeq: 90}},
		Snapshots:   []snapResult{{Role: "leader", Seconds: 0.25, StateBytes: 2 << 20}},
		Restarts:    []restartResult{{Signal: "SIGTERM", CaughtUpSeconds: 1.5, ReadySeconds: 1.4, StopSeconds: 0.1}},
		Join:        &joinResult{CaughtUpSeconds: 2, SnapshotInstalled: true},
	}}
	tab := scaleTable(reps)
	for _, want := range []string{"| sequences | 10,000 |", "2,500/s (p99 30.0 ms)", "200 B / 150 B", "– / 90 B",
		"250 ms (2.0 MiB, 210 B/seq)", "1.50 s (ready 1.40 s, stop 100 ms)", "2.00 s (snapshot installed)"} {
		if !strings.Contains(tab, want) {
			t.Errorf("table lacks %q:\n%s", want, tab)
		}
	}
	if got := scaleThousands(1234567); got != "1,234,567" {
		t.Errorf("scaleThousands = %q", got)
	}
}
