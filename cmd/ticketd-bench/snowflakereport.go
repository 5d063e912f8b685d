package main

// Server-made Snowflake IDs in the report (issue #32): bench.sh's runs of
// group "snowflake", each row one system beside its peer measured in the
// same run, at the same IDs per request and clients:
//
//   - HTTP, one node ÷ the bare Echo handler's same route (baseline);
//   - HTTP, requests spread over all three nodes ÷ one node;
//   - Redis protocol (TICKETD.SNOWFLAKE), one node ÷ redis-server's INCRBY
//     with persistence off;
//   - Redis protocol, spread over all three nodes ÷ one node.
//
// The target of every row is ≥ 0.9× its peer in requests per second.

import (
	"fmt"
	"slices"
)

const (
	// snowflakeGroup is the group of bench.sh's Snowflake runs.
	snowflakeGroup = "snowflake"
	// snowflakeTarget: each row's requests/s over its peer's.
	snowflakeTarget = 0.9
)

// Systems of the Snowflake runs (bench.sh's --system).
const (
	sfEcho       = "echo-snowflake"
	sfOne        = "ticketd-snowflake"
	sfSpread     = "ticketd-snowflake-spread"
	sfRESPOne    = "ticketd-snowflake-resp"
	sfRESPSpread = "ticketd-snowflake-resp-spread"
	sfRedis      = "redis-incr"
)

// sfComparisons are the rows of the table, subject beside peer.
var sfComparisons = []struct {
	front, subject, peer, what string
}{
	{"HTTP", sfOne, sfEcho, "one node ÷ bare Echo"},
	{"HTTP", sfSpread, sfOne, "3 nodes spread ÷ one node"},
	{"RESP", sfRESPOne, sfRedis, "one node ÷ redis-server INCRBY (no persistence)"},
	{"RESP", sfRESPSpread, sfRESPOne, "3 nodes spread ÷ one node"},
}

// sfPair is one row: subject and peer at one count and concurrency.
type sfPair struct {
	Front, What       string
	Count             uint64
	Clients           int
	Subject, Peer     *levelResult
	SubjectSys, PeerS string
}

func sfAxes(r *fullReport) (counts []uint64, concs []int) {
	for _, l := range r.Loads {
		if l.Group != snowflakeGroup {
			continue
		}
		if !slices.Contains(counts, l.Count) {
			counts = append(counts, l.Count)
		}
		for _, lv := range l.Levels {
			if !slices.Contains(concs, lv.Concurrency) {
				concs = append(concs, lv.Concurrency)
			}
		}
	}
	slices.Sort(counts)
	slices.Sort(concs)
	return counts, concs
}

func sfPairs(r *fullReport) []sfPair {
	counts, concs := sfAxes(r)
	var out []sfPair
	for _, c := range sfComparisons {
		for _, count := range counts {
			for _, conc := range concs {
				s, okS := r.find(snowflakeGroup, c.subject, 0, count, conc)
				p, okP := r.find(snowflakeGroup, c.peer, 0, count, conc)
				if !okS || !okP {
					continue
				}
				out = append(out, sfPair{Front: c.front, What: c.what, Count: count, Clients: conc,
					Subject: s, Peer: p, SubjectSys: c.subject, PeerS: c.peer})
			}
		}
	}
	return out
}

func (p sfPair) met() bool {
	return p.Peer.ReservationsPerSec > 0 && p.Subject.ReservationsPerSec/p.Peer.ReservationsPerSec >= snowflakeTarget
}

// snowflakeTargets: every row ≥ 0.9× its peer in requests/s.
func snowflakeTargets(r *fullReport) []targetCheck {
	var out []targetCheck
	for _, p := range sfPairs(r) {
		if p.Peer.ReservationsPerSec <= 0 {
			continue
		}
		v := p.Subject.ReservationsPerSec / p.Peer.ReservationsPerSec
		out = append(out, targetCheck{
			What:   fmt.Sprintf("Snowflake %s %s, count=%d c=%d, req/s", p.Front, p.What, p.Count, p.Clients),
			Value:  v,
			Target: fmt.Sprintf(">= %.1f", snowflakeTarget),
			Met:    v >= snowflakeTarget,
		})
	}
	return out
}

var sfHeader = []string{"front", "comparison", "IDs/req", "clients",
	"req/s", "peer req/s", "req/s ÷",
	"p50 ms", "peer p50 ms", "p99 ms", "peer p99 ms",
	"server CPU µs/req / peer's", "errors", "≥ 0.9×"}

func sfRows(r *fullReport) [][]string {
	var rows [][]string
	for _, p := range sfPairs(r) {
		s, q := p.Subject, p.Peer
		errs := fmtErrors(s.Errors)
		if pe := fmtErrors(q.Errors); pe != "0" {
			errs += " / peer " + pe
		}
		rows = append(rows, []string{p.Front, p.What, fmt.Sprint(p.Count), fmt.Sprint(p.Clients),
			num(s.ReservationsPerSec), num(q.ReservationsPerSec), ratio(s.ReservationsPerSec, q.ReservationsPerSec),
			msStr(s.P50Ms), msStr(q.P50Ms), msStr(s.P99Ms), msStr(q.P99Ms),
			fmt.Sprintf("%.1f / %.1f", s.ServerCPUPerResUs, q.ServerCPUPerResUs), errs, metOrMissed(p.met())})
	}
	return rows
}

// sfScaling states throughput against nodes on paper, from the one-node
// runs' server CPU per request: nothing is forwarded or replicated per
// request, so a node on cores of its own serves about cores ÷ (CPU per
// request), and N such nodes N times that. On this machine the nodes and
// the load generator share the same cores, so the spread rows cannot show
// it.
func sfScaling(r *fullReport) []string {
	counts, concs := sfAxes(r)
	var out []string
	for _, sys := range []string{sfOne, sfRESPOne} {
		for _, count := range counts {
			for _, conc := range concs {
				l, ok := r.find(snowflakeGroup, sys, 0, count, conc)
				if !ok || l.ServerCPUPerResUs <= 0 {
					continue
				}
				perCore := 1e6 / l.ServerCPUPerResUs
				line := fmt.Sprintf("%s, %d IDs/req, %d clients: %.1f µs CPU per request on the serving node -> about %s req/s per core of a node, %s req/s from 3 nodes of one core each",
					sys, count, conc, l.ServerCPUPerResUs, num(perCore), num(3*perCore))
				if e, ok := r.find(snowflakeGroup, sfEcho, 0, count, conc); ok && sys == sfOne && e.ServerCPUPerResUs > 0 {
					line += fmt.Sprintf(" (bare Echo: %.1f µs, %s req/s per core)", e.ServerCPUPerResUs, num(1e6/e.ServerCPUPerResUs))
				}
				out = append(out, line)
			}
		}
	}
	return out
}

const sfTitle = "Snowflake IDs made by the nodes (issue 32): each row ÷ its peer, same run"

const sfExplain = "ticketd: 3 nodes (fsync on, --dev); one node: every request to node n1 (whichever its role: nothing is forwarded), its CPU alone; spread: worker i to node i%3, the CPU of all three. " +
	"HTTP: POST /v1/namespaces/<ns>/ids {\"count\":N}; bare Echo: ticketd-bench's baseline answering the same route and JSON from a counter (no lease, no clock, no middleware). " +
	"RESP: TICKETD.SNOWFLAKE <ns> N; redis-server with --save '' --appendonly no, INCRBY <key> N (INCR's work for N=1). " +
	"Closed loop, one request in flight per client, after a warm-up; every ID answered is checked unique within its run (snowflake.go). Target: ≥ 0.9× the peer in req/s, each row."

func sfSummary(rows [][]string) string {
	met := 0
	for _, row := range rows {
		if row[len(row)-1] == "met" {
			met++
		}
	}
	return fmt.Sprintf("%d of %d rows met ≥ %.1f× their peer in req/s", met, len(rows), snowflakeTarget)
}
