package main

// Leader leases in the report (issue 44): bench.sh's runs of group
// "lease" (its ticketd_leases section), one fresh 3-node cluster per
// setting, with the probe path (--lease-reads off) and with leases, each
// row beside its peer measured in the same run at the same range size and
// clients:
//
//   - HTTP through the leader ÷ the bare Echo handler (baseline);
//   - the Redis-protocol front's INCRBY <seq> N through the leader ÷
//     redis-server's INCRBY with persistence off.
//
// The peers run beside each setting's cluster: Echo just before and just
// after each of the cluster's HTTP loads (labels echo-<setting>-before and
// -after, averaged: their mean brackets the cluster's run in time), Redis
// in ABBA order (redis-incr-<setting>-n<N>). Each row is set beside its
// own setting's peer: on this shared machine the capacity drifts by 20%
// within a minute, and a peer measured once, before the cluster started,
// was up to 25% off the one beside it.
// (Files without such labels fall back to the mean of every peer run.)
// lease ÷ probe is therefore the ratio of the two rows' ratios to their
// peers, which cancels that drift; the raw req/s are in the table too. The
// target is the lease rows at ≥ 0.9× their peer in requests per second;
// the probe rows are there to show the gain, and p50 and p99 of both
// beside the peer's. Under scripts/lease-bench.sh the same section runs with each
// node in a network namespace of its own and a delay between node
// addresses; env.txt's "network:" line says which, and the title repeats it.

import (
	"fmt"
	"slices"
	"strings"
)

const (
	// leaseGroup is the group of bench.sh's lease runs.
	leaseGroup = "lease"
	// leaseTarget: a lease row's requests/s over its peer's.
	leaseTarget = 0.9
)

// Systems of the lease runs (bench.sh's --system).
const (
	lsEcho      = "echo"
	lsProbe     = "ticketd-probe"
	lsLease     = "ticketd-lease"
	lsRedis     = "redis-incr"
	lsRESPProbe = "ticketd-resp-probe"
	lsRESPLease = "ticketd-resp-lease"
)

// lsComparisons are the rows of the table, in order: subject beside peer,
// in bench.sh's pass of setting; probe, when set, is the same front with
// --lease-reads off (the gain).
var lsComparisons = []struct {
	front, subject, row, peer, setting, probe string
}{
	{"HTTP", lsProbe, "ticketd", lsEcho, "off", ""},
	{"HTTP", lsLease, "ticketd-lease", lsEcho, "on", lsProbe},
	{"RESP", lsRESPProbe, "ticketd-resp", lsRedis, "off", ""},
	{"RESP", lsRESPLease, "ticketd-resp-lease", lsRedis, "on", lsRESPProbe},
}

// lsPair is one row of the table.
type lsPair struct {
	Front, Row    string
	Lease         bool
	Count         uint64
	Clients       int
	Subject, Peer *levelResult
	// Probe and ProbePeer are the probe row and its peer (nil on the probe
	// rows).
	Probe, ProbePeer *levelResult
	PeerRuns         int
}

// findMean is the mean of every level of system at count and concurrency
// in group whose label starts with label (rates, latencies and CPU per
// request averaged, errors summed), and how many runs it averages.
func (r *fullReport) findMean(group, system, label string, count uint64, conc int) (*levelResult, int) {
	var sum levelResult
	n := 0
	for _, l := range r.Loads {
		if l.Group != group || l.System != system || l.Count != count || !strings.HasPrefix(l.Label, label) {
			continue
		}
		for i := range l.Levels {
			lv := &l.Levels[i]
			if lv.Concurrency != conc {
				continue
			}
			n++
			sum.Concurrency = conc
			sum.Requests += lv.Requests
			sum.ReservationsPerSec += lv.ReservationsPerSec
			sum.IDsPerSec += lv.IDsPerSec
			sum.P50Ms += lv.P50Ms
			sum.P99Ms += lv.P99Ms
			sum.ServerCPUPerResUs += lv.ServerCPUPerResUs
			for k, v := range lv.Errors {
				if sum.Errors == nil {
					sum.Errors = map[string]int{}
				}
				sum.Errors[k] += v
			}
		}
	}
	if n == 0 {
		return nil, 0
	}
	f := float64(n)
	sum.ReservationsPerSec /= f
	sum.IDsPerSec /= f
	sum.P50Ms /= f
	sum.P99Ms /= f
	sum.ServerCPUPerResUs /= f
	return &sum, n
}

// lsAxes are the range sizes and client levels of front's systems.
func lsAxes(r *fullReport, systems ...string) (counts []uint64, concs []int) {
	return r.axesOf(func(l *loadReport) bool { return l.Group == leaseGroup && slices.Contains(systems, l.System) })
}

func lsPairs(r *fullReport) []lsPair {
	var out []lsPair
	for _, front := range []string{"HTTP", "RESP"} {
		var subjects []string
		for _, c := range lsComparisons {
			if c.front == front {
				subjects = append(subjects, c.subject)
			}
		}
		counts, concs := lsAxes(r, subjects...)
		for _, count := range counts {
			for _, conc := range concs {
				for _, c := range lsComparisons {
					if c.front != front {
						continue
					}
					s, _ := r.findMean(leaseGroup, c.subject, "", count, conc)
					p, runs := r.lsPeer(c.peer, c.setting, count, conc)
					if s == nil || p == nil {
						continue
					}
					pair := lsPair{Front: front, Row: c.row, Lease: c.probe != "", Count: count, Clients: conc,
						Subject: s, Peer: p, PeerRuns: runs}
					if c.probe != "" {
						pair.Probe, _ = r.findMean(leaseGroup, c.probe, "", count, conc)
						pair.ProbePeer, _ = r.lsPeer(c.peer, "off", count, conc)
					}
					out = append(out, pair)
				}
			}
		}
	}
	return out
}

// lsPeer is the peer's runs in the pass of setting (label
// <peer>-<setting>...), or else all of them.
func (r *fullReport) lsPeer(peer, setting string, count uint64, conc int) (*levelResult, int) {
	if p, n := r.findMean(leaseGroup, peer, peer+"-"+setting, count, conc); p != nil {
		return p, n
	}
	return r.findMean(leaseGroup, peer, "", count, conc)
}

// gain is lease over probe, each first divided by its own pass's peer.
func (p lsPair) gain() string {
	if p.Probe == nil || p.ProbePeer == nil || p.ProbePeer.ReservationsPerSec <= 0 || p.Probe.ReservationsPerSec <= 0 {
		return "-"
	}
	return ratio(p.ratio(), p.Probe.ReservationsPerSec/p.ProbePeer.ReservationsPerSec)
}

func (p lsPair) ratio() float64 {
	if p.Peer.ReservationsPerSec <= 0 {
		return 0
	}
	return p.Subject.ReservationsPerSec / p.Peer.ReservationsPerSec
}

func (p lsPair) met() bool { return p.Peer.ReservationsPerSec > 0 && p.ratio() >= leaseTarget }

// leaseTargets: every lease row at ≥ 0.9× its peer in requests/s.
func leaseTargets(r *fullReport) []targetCheck {
	var out []targetCheck
	net := leaseNetwork(r)
	for _, p := range lsPairs(r) {
		if !p.Lease || p.Peer.ReservationsPerSec <= 0 {
			continue
		}
		peer := "bare Echo"
		if p.Front == "RESP" {
			peer = "redis-server (no persistence)"
		}
		out = append(out, targetCheck{
			What:   fmt.Sprintf("%s / %s, req/s, count=%d c=%d%s", p.Row, peer, p.Count, p.Clients, net),
			Value:  p.ratio(),
			Target: fmt.Sprintf(">= %.1f", leaseTarget),
			Met:    p.met(),
		})
	}
	return out
}

// leaseNetwork is ", <network>" when env.txt says the nodes were not on
// loopback (scripts/lease-bench.sh's delayed runs), else "".
func leaseNetwork(r *fullReport) string {
	for _, e := range r.Env {
		if v, ok := strings.CutPrefix(e, "network: "); ok && v != "loopback" {
			if i := strings.Index(v, "held "); i >= 0 {
				d, _, _ := strings.Cut(v[i+len("held "):], " ")
				return ", " + d + " between nodes"
			}
			return ", netns"
		}
	}
	return ""
}

var lsHeader = []string{"front", "row", "IDs/req", "clients",
	"req/s", "peer req/s", "÷ peer", "lease ÷ probe",
	"p50 ms", "p99 ms", "peer p50 ms", "peer p99 ms",
	"server CPU µs/req", "errors", "≥ 0.9×"}

func lsRows(r *fullReport) [][]string {
	var rows [][]string
	for _, p := range lsPairs(r) {
		s, q := p.Subject, p.Peer
		gain := p.gain()
		errs := fmtErrors(s.Errors)
		if pe := fmtErrors(q.Errors); pe != "0" {
			errs += " / peer " + pe
		}
		mark := metOrMissed(p.met())
		if !p.Lease {
			mark = "(" + mark + ")" // the probe path: shown, not a target
		}
		rows = append(rows, []string{p.Front, p.Row, fmt.Sprint(p.Count), fmt.Sprint(p.Clients),
			num(s.ReservationsPerSec), num(q.ReservationsPerSec), ratio(s.ReservationsPerSec, q.ReservationsPerSec), gain,
			msStr(s.P50Ms), msStr(s.P99Ms), msStr(q.P50Ms), msStr(q.P99Ms),
			fmt.Sprintf("%.1f", s.ServerCPUPerResUs), errs, mark})
	}
	return rows
}

func lsTitle(r *fullReport) string {
	net := "loopback"
	for _, e := range r.Env {
		if v, ok := strings.CutPrefix(e, "network: "); ok {
			net = v
		}
	}
	return "Leader leases (issue 44), --lease-reads off (ticketd) and on (-lease), each row ÷ its peer, same run; network: " + net
}

const lsExplain = "ticketd: a fresh 3-node cluster per setting (fsync on, --dev), every request to the leader; server CPU is all three nodes'. " +
	"HTTP: POST /v1/sequences/<seq>/ranges {\"count\":N}; peer: the bare Echo handler (ticketd-bench baseline), beside the same setting's cluster, loaded just before and just after each of its loads (the peer is their mean). " +
	"RESP: INCRBY <seq> N on the leader's Redis-protocol port; peer: redis-server --save '' --appendonly no, INCRBY <key> N, run beside the same setting's cluster in ABBA order. " +
	"Each row is set beside its own setting's peer (the machine drifts between the passes). " +
	"Closed loop, one request in flight per client, after a warm-up; every range checked for overlaps. " +
	"Target: the lease rows at ≥ 0.9× the peer in req/s; the probe rows' mark is in parentheses (not a target). lease ÷ probe: the gain of --lease-reads, the lease row's ÷ peer over the probe row's."

func lsSummary(rows [][]string) string {
	met, n := 0, 0
	for _, row := range rows {
		switch row[len(row)-1] {
		case "met":
			met++
			n++
		case "missed":
			n++
		}
	}
	return fmt.Sprintf("%d of %d lease rows met ≥ %.1f× their peer in req/s", met, n, leaseTarget)
}
