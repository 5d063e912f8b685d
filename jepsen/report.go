//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"html"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"

	"github.com/ticketd/ticketd/jepsen/checker"
)

// renderReport writes report.html: one self-contained page (inline CSS and
// SVG, no scripts, nothing fetched) with the verdict, every figure, and two
// charts over time with the nemesis windows shaded.
func renderReport(r *runResults, h *checker.History) string {
	var b strings.Builder
	e := html.EscapeString
	verdict, color := "VALID", "#1b7f3b"
	reasons := r.InvalidReasons
	if u := r.Run.Upgrade; u != nil {
		for _, p := range u.Problems {
			reasons = append(slices.Clone(reasons), "upgrade: "+p)
		}
	}
	if !r.Valid || len(reasons) > 0 {
		verdict, color = "INVALID", "#b3261e"
	}
	fmt.Fprintf(&b, `<!doctype html><html><head><meta charset="utf-8"><title>ticketd jepsen %s</title><style>
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1200px}
h1{font-size:22px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ddd;padding:3px 8px;text-align:right}
th{background:#f4f4f4}td.l,th.l{text-align:left}.bad{color:#b3261e;font-weight:600}.ok{color:#1b7f3b}
pre{background:#f7f7f7;padding:8px;overflow:auto;font-size:12px;max-height:300px}
.banner{padding:10px 16px;color:#fff;font-size:20px;font-weight:700;background:%s;display:inline-block;border-radius:4px}
svg text{font:11px system-ui,sans-serif}
</style></head><body>`, e(r.Run.Started.Format("2006-01-02 15:04:05")), color)
	fmt.Fprintf(&b, `<h1>ticketd fault-injection run</h1><div class="banner">%s</div>`, verdict)
	if len(reasons) > 0 {
		b.WriteString("<ul>")
		for _, why := range reasons {
			fmt.Fprintf(&b, `<li class="bad">%s</li>`, e(why))
		}
		b.WriteString("</ul>")
	}
	if r.FirstViolationMs > 0 {
		fmt.Fprintf(&b, `<p class="bad">First violation visible in the history at %.1f s.</p>`, r.FirstViolationMs/1000)
	}

	b.WriteString(`<h2>Run</h2><table>`)
	row := func(k, v string) { fmt.Fprintf(&b, `<tr><th class="l">%s</th><td class="l">%s</td></tr>`, e(k), e(v)) }
	row("mode", r.Run.Mode+": "+r.Run.Backend)
	row("nodes", fmt.Sprint(r.Run.Nodes))
	row("seed", fmt.Sprint(r.Run.Seed))
	row("time limit / workload / total", fmt.Sprintf("%s / %.0f s / %.0f s", r.Run.TimeLimit, r.Run.WorkloadSeconds, r.Run.TotalSeconds))
	row("planted faults", orDash(r.Run.Faults))
	row("node flags", strings.Join(r.Run.NodeFlags, " "))
	row("schedule", r.Run.Schedule+": "+strings.Join(r.Run.Nemeses, ", "))
	if len(r.Run.Skipped) > 0 {
		var s []string
		for k, v := range r.Run.Skipped {
			s = append(s, k+" ("+v+")")
		}
		sort.Strings(s)
		row("skipped nemeses", strings.Join(s, "; "))
	}
	if len(r.Run.NotRun) > 0 {
		row("selected but never ran", strings.Join(r.Run.NotRun, ", "))
	}
	row("final heal", r.Run.FinalHeal)
	if s := r.Run.Snapshots; s != nil {
		row("raft snapshots (from node logs)", fmt.Sprintf("%d taken, %d sent to a follower, %d installed from a leader", s["taken"], s["sent"], s["installed"]))
	}
	if r.Run.StoppedOnViolation {
		row("stopped on violation", fmt.Sprintf("at %.1f s: %s", r.Run.DetectedAtMs/1000, r.Run.Detection))
	}
	for _, n := range r.Run.Notes {
		row("note", n)
	}
	b.WriteString(`</table>`)

	b.WriteString(`<h2>Checks</h2><table><tr><th class="l">check</th><th>result</th><th class="l">figures</th></tr>`)
	check := func(name string, ok bool, figs string) {
		cls, word := "ok", "valid"
		if !ok {
			cls, word = "bad", "INVALID"
		}
		fmt.Fprintf(&b, `<tr><td class="l">%s</td><td class="%s">%s</td><td class="l">%s</td></tr>`, e(name), cls, word, e(figs))
	}
	check("well-formed answers", r.WellFormed.Valid, fmt.Sprintf("%d malformed", r.WellFormed.Malformed))
	check("uniqueness", r.Uniqueness.Valid, fmt.Sprintf("%d acknowledged ranges, %d IDs; %d overlapping ranges, %d IDs handed out twice",
		r.Uniqueness.Ranges, r.Uniqueness.IDs, r.Uniqueness.OverlappingRanges, r.Uniqueness.DuplicatedIDs))
	lostFig := fmt.Sprintf("%d lost ranges (%d IDs); final next %s", r.Lost.LostRanges, r.Lost.LostIDs, finalNexts(r.Lost.FinalNext))
	if !r.Lost.Checked {
		lostFig = "NOT CHECKED: no final read of " + strings.Join(r.Lost.Unread, ", ")
	}
	check("no acknowledged range lost", r.Lost.Valid, lostFig)
	check("linearizable (exact sorted check)", r.Linearizable.Valid, fmt.Sprintf("%d ranges below a range acknowledged before they were invoked", r.Linearizable.Violations))
	check("linearizable reads", r.Reads.Valid, fmt.Sprintf("%d reads; %d stale, %d non-monotonic", r.Reads.Reads, r.Reads.Stale, r.Reads.NonMonotonic))
	check("nothing at or below a raise", r.Raises.Valid, fmt.Sprintf("%d raises; %d (reservation or read, earlier raise) pairs checked, %d below", r.Raises.Raises, r.Raises.Checked, r.Raises.Below))
	u := r.UnknownRaises
	check("nothing at or below a raise of unknown outcome seen applied", u.Valid, fmt.Sprintf("%d unknown raises, %d applied per the audit; %d (raise, first read above it) pairs checked, %d unchecked; %d reservations held to %d pinned raises, %d below",
		u.Unknown, u.Applied, u.Checked, u.Unchecked, u.Held, u.Pinned, u.Below))
	if p := r.Porcupine; p != nil {
		check("porcupine (windows)", p.Valid, fmt.Sprintf("%d windows of %d ops (%d ops): %d ok, %d illegal, %d undecided in time; %s",
			p.Windows, p.WindowSize, p.Ops, p.Ok, p.Illegal, p.Unknown, p.Elapsed))
	}
	l, sf, m := r.Leases, r.Snowflake, r.Migration
	check("Snowflake IDs", sf.Valid, fmt.Sprintf("%d IDs from %d generators, %d tenures, %d leases seen; %d issued twice, %d not increasing, %d overlapping tenures of one worker id",
		sf.IDs, sf.Generators, sf.Tenures, sf.Leases, sf.Duplicates, sf.NonIncreasing, sf.Overlaps))
	if ns := r.NodeSnowflake; ns.IDs > 0 || len(ns.Requests) > 0 || !ns.Valid {
		check("server-made Snowflake IDs (HTTP and Redis protocol, by tenure)", ns.Valid, ns.Summary())
	}
	check("leases (idempotent acquire, growing tokens, one holder)", l.Valid, fmt.Sprintf("%d grants (%d ok answers, %d deliberate resends), %d releases; %d answers naming another lease for one request id, %d tokens not above an earlier grant, %d worker ids granted while held",
		l.Grants, l.Acquires, l.Resends, l.Releases, l.NotIdempotent, l.TokenRegressions, l.DoubleGrants))
	check("migration (backup, restore into a new cluster)", m.Valid, fmt.Sprintf("%d backups, %d of %d restores accepted; restored clusters: %d ranges (%d IDs), %d lease grants; %d IDs issued by both clusters, %d twice by a restored one, %d ranges not lifted, %d restores accepted onto a non-empty cluster, %d tokens not above the main cluster's",
		m.Migrations, m.Restores, len(m.Attempts), m.Ranges, m.IDs, m.Leases, m.CrossDuplicates, m.Duplicates, m.NotLifted, m.SecondAccepted, m.TokensNotAbove))
	b.WriteString(`</table>`)
	if len(m.Attempts) > 0 || len(r.Run.Migrations) > 0 {
		b.WriteString(`<h3>Restores</h3><table><tr><th class="l">cluster</th><th>at (s)</th><th class="l">restore</th><th>advance</th><th class="l">outcome</th><th>status</th><th class="l">error</th></tr>`)
		for _, a := range m.Attempts {
			kind := "first"
			if a.Second {
				kind = "second (cluster not empty: must be refused)"
			}
			cls := ""
			if a.Second && a.Accepted {
				cls = ` class="bad"`
			}
			fmt.Fprintf(&b, `<tr><td class="l">%s</td><td>%.1f</td><td class="l">%s</td><td>%d</td><td class="l"%s>%s</td><td>%d</td><td class="l">%s</td></tr>`,
				e(a.Cluster), a.AtMs/1000, e(kind), a.Advance, cls, e(a.Outcome), a.Status, e(a.Err))
		}
		b.WriteString(`</table><ul>`)
		for _, mg := range r.Run.Migrations {
			fmt.Fprintf(&b, `<li>%s: backup of %d bytes; restored: %v; second restore: %s %s</li>`, e(mg.Name), mg.BackupSize, mg.Restored, e(orDash(mg.SecondRestore)), e(mg.Note))
		}
		b.WriteString(`</ul>`)
	}
	if p := r.Porcupine; p != nil && len(p.Visualized) > 0 {
		b.WriteString(`<p>Porcupine visualizations of illegal windows: `)
		for _, v := range p.Visualized {
			fmt.Fprintf(&b, `<a href="%s">%s</a> `, e(v), e(v))
		}
		fmt.Fprintf(&b, `</p><p>%s</p>`, e(p.FirstIllegal))
	}
	var examples []checker.Violation
	examples = append(examples, r.WellFormed.Examples...)
	examples = append(examples, r.Uniqueness.Examples...)
	examples = append(examples, r.Lost.Examples...)
	examples = append(examples, r.Linearizable.Examples...)
	examples = append(examples, r.Reads.Examples...)
	examples = append(examples, r.Raises.Examples...)
	examples = append(examples, r.UnknownRaises.Examples...)
	examples = append(examples, l.Examples...)
	examples = append(examples, sf.Examples...)
	examples = append(examples, m.Examples...)
	if len(examples) > 0 {
		j, _ := json.MarshalIndent(examples, "", "  ")
		fmt.Fprintf(&b, `<h3>Example violations</h3><pre>%s</pre>`, e(string(j)))
	}

	if u := r.Run.Upgrade; u != nil {
		fmt.Fprintf(&b, `<h2>Upgrade</h2><p>From the older release to the binary under test, one node at a time (see jepsen/README.md, "Upgrades"); <code>results.json</code> has the details under <code>run.upgrade</code>.</p><pre>%s</pre>`, e(strings.Join(u.summary(), "\n")))
	}
	if s := manySummary(r); s != "" {
		fmt.Fprintf(&b, `<h2>Many-sequences workload</h2><p>%s. Every operation on a sequence drawn at random, through a random node; checked per sequence like every other sequence (above).</p>`, e(s))
	}

	b.WriteString(`<h2>Operations</h2><table><tr><th class="l">operation</th><th>ok</th><th>fail</th><th>unknown</th></tr>`)
	for _, f := range sortedMapKeys(r.Counts) {
		m := r.Counts[f]
		fmt.Fprintf(&b, `<tr><td class="l">%s</td><td>%d</td><td>%d</td><td>%d</td></tr>`, e(f), m[checker.OK], m[checker.Fail], m[checker.Unknown])
	}
	fmt.Fprintf(&b, `</table><p>%d operations, %d IDs issued in acknowledged ranges and Next results of the main cluster, %d by restored clusters, %d Snowflake IDs; sequences and namespaces: %s. A snowflake operation is a burst of Next calls; <i>@B1</i> marks operations on a restored cluster.</p>`,
		r.Ops, r.IDsIssued, m.IDs, sf.IDs, e(sequenceList(r.Sequences)))

	if len(sf.TenureList) > 0 {
		fmt.Fprintf(&b, `<h2>Snowflake worker ids</h2><p>Each row one generator's use of one worker id (consecutive IDs carrying it): the timestamps of its first and last ID (ticks of the namespace since its epoch) and the real time of the first and last burst. %d tenures`, sf.Tenures)
		if sf.Tenures > len(sf.TenureList) {
			fmt.Fprintf(&b, `, the first %d shown`, len(sf.TenureList))
		}
		b.WriteString(`.</p><table><tr><th class="l">generator</th><th>worker</th><th>token</th><th>IDs</th><th>first tick</th><th>last tick</th><th>from (s)</th><th>to (s)</th></tr>`)
		for _, t := range sf.TenureList {
			fmt.Fprintf(&b, `<tr><td class="l">%s</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%.1f</td><td>%.1f</td></tr>`,
				e(t.Session), t.Worker, t.Token, t.IDs, t.FirstTick, t.LastTick, t.FromMs/1000, t.ToMs/1000)
		}
		b.WriteString(`</table>`)
	}

	if ns := r.NodeSnowflake; len(ns.TenureList) > 0 {
		fmt.Fprintf(&b, `<h2>Server-made Snowflake: tenures</h2><p>Each row one node's lease of one worker id (one grant of the audit): its requests and IDs, the ticks of its lowest and highest ID and the first tick its floor allowed (−1: not seen in a listing), and the real time from its first request's invocation to its last's completion. %d tenures`, ns.Tenures)
		if ns.Tenures > len(ns.TenureList) {
			fmt.Fprintf(&b, `, the first %d shown`, len(ns.TenureList))
		}
		b.WriteString(`.</p><table><tr><th class="l">node</th><th>worker</th><th>token</th><th>requests</th><th>IDs</th><th>floor tick</th><th>first tick</th><th>last tick</th><th>from (s)</th><th>to (s)</th></tr>`)
		for _, t := range ns.TenureList {
			fmt.Fprintf(&b, `<tr><td class="l">%s</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%.1f</td><td>%.1f</td></tr>`,
				e(t.Node), t.Worker, t.Token, t.Requests, t.IDs, t.FloorTick, t.FirstTick, t.LastTick, t.FromMs/1000, t.ToMs/1000)
		}
		b.WriteString(`</table>`)
	}

	b.WriteString(`<h2>Latency (ms)</h2><table><tr><th class="l">operation</th><th class="l">outcome</th><th>n</th><th>p50</th><th>p90</th><th>p99</th><th>p99.9</th><th>max</th></tr>`)
	for _, f := range sortedMapKeys(r.Latency) {
		for _, oc := range []string{checker.OK, checker.Fail, checker.Unknown} {
			q, ok := r.Latency[f][oc]
			if !ok {
				continue
			}
			fmt.Fprintf(&b, `<tr><td class="l">%s</td><td class="l">%s</td><td>%d</td><td>%.2f</td><td>%.2f</td><td>%.2f</td><td>%.2f</td><td>%.1f</td></tr>`,
				e(f), oc, q.N, q.P50, q.P90, q.P99, q.P999, q.Max)
		}
	}
	b.WriteString(`</table>`)

	fmt.Fprintf(&b, `<h2>Availability</h2><p>Longest stretch without a successful reservation: %.0f ms (from %.1f s).</p>`,
		r.Availability.LongestGapMs, r.Availability.LongestGapFromMs/1000)
	b.WriteString(`<table><tr><th class="l">nemesis</th><th>runs</th><th>max gap (ms)</th><th>mean gap</th><th>max heal→first success (ms)</th><th>mean</th><th>no success after heal</th><th>cluster not healthy in time</th></tr>`)
	for _, k := range sortedMapKeys(r.Availability.ByKind) {
		a := r.Availability.ByKind[k]
		fmt.Fprintf(&b, `<tr><td class="l">%s</td><td>%d</td><td>%.0f</td><td>%.0f</td><td>%.0f</td><td>%.0f</td><td>%d</td><td>%d</td></tr>`,
			e(k), a.Runs, a.MaxGapMs, a.MeanGapMs, a.MaxRecoveryMs, a.MeanRecoveryMs, a.Unrecovered, a.ClusterUnrecovered)
	}
	b.WriteString(`</table>`)

	b.WriteString(`<h2>Latency over time</h2><p>Each dot one operation (sampled when there are many), at its completion; log scale. Shaded: nemesis windows (dark: injected, light: healing until the cluster was healthy).</p>`)
	b.WriteString(latencyChart(h))
	b.WriteString(kindLegend(h))
	b.WriteString(`<h2>Throughput by outcome</h2><p>Completed operations per second.</p>`)
	b.WriteString(throughputChart(h))

	b.WriteString(`<h2>Nemesis timeline</h2><table><tr><th class="l">kind</th><th>start (s)</th><th>healed (s)</th><th>healthy (s)</th><th class="l">targets</th><th class="l">what happened</th></tr>`)
	for _, n := range h.Nemeses {
		rec := "-"
		if n.Recovered > 0 {
			rec = fmt.Sprintf("%.1f", float64(n.Recovered)/1e9)
		}
		what := n.Desc
		if n.Err != "" {
			what += " ERROR: " + n.Err
		}
		fmt.Fprintf(&b, `<tr><td class="l">%s</td><td>%.1f</td><td>%.1f</td><td>%s</td><td class="l">%s</td><td class="l">%s</td></tr>`,
			e(n.Kind), float64(n.Start)/1e9, float64(n.Healed)/1e9, rec, e(strings.Join(n.Targets, " ")), e(what))
	}
	b.WriteString(`</table>`)
	var ready strings.Builder
	for _, n := range h.Nemeses {
		if len(n.Readiness) == 0 {
			continue
		}
		fmt.Fprintf(&ready, "%s on %s, at %.1f s (healed +%.1f s):\n", n.Kind, strings.Join(n.Targets, " "), float64(n.Start)/1e9, float64(n.Healed-n.Start)/1e9)
		for _, line := range readinessTimeline(n) {
			ready.WriteString("  " + line + "\n")
		}
	}
	if ready.Len() > 0 {
		b.WriteString(`<h2>Readiness during storage faults</h2><p>Every node's <code>/readyz</code>, polled every 200 ms from the injection until every node was ready again after the heal (and 2 s more); times from the injection. 0: no answer.</p><pre>`)
		b.WriteString(e(ready.String()))
		b.WriteString(`</pre>`)
	}
	b.WriteString(`<h2>Files</h2><p><a href="history.jsonl">history.jsonl</a> · <a href="results.json">results.json</a> · <a href="run.log">run.log</a> · <a href="logs/">node logs</a></p></body></html>`)
	return b.String()
}

// sequenceList names the sequences, the many-sequences workload's as one
// span with their number.
func sequenceList(seqs []string) string {
	var out []string
	var many []string
	for _, s := range seqs {
		if strings.HasPrefix(s, "jep-many-") {
			many = append(many, s)
		} else {
			out = append(out, s)
		}
	}
	if len(many) > 0 {
		out = append(out, fmt.Sprintf("%s..%s (%d sequences)", many[0], many[len(many)-1], len(many)))
	}
	return strings.Join(out, ", ")
}

// finalNexts lists the final next of each sequence, the first dozen only
// (results.json has them all).
func finalNexts(m map[string]int64) string {
	keys := sortedMapKeys(m)
	// The many-sequences workload's last: the others are few and named.
	sort.SliceStable(keys, func(i, j int) bool {
		return !strings.HasPrefix(keys[i], "jep-many-") && strings.HasPrefix(keys[j], "jep-many-")
	})
	var parts []string
	for i, k := range keys {
		if i == 12 {
			parts = append(parts, fmt.Sprintf("and %d more in results.json", len(keys)-12))
			break
		}
		parts = append(parts, fmt.Sprintf("%s:%d", k, m[k]))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func sortedMapKeys[V any](m map[string]V) []string {
	var k []string
	for x := range m {
		k = append(k, x)
	}
	sort.Strings(k)
	return k
}

const (
	chartW, chartH = 1100, 300
	padL, padR     = 60, 10
	padT, padB     = 20, 30
)

var outcomeColor = map[string]string{checker.OK: "#2a9d8f", checker.Fail: "#d62828", checker.Unknown: "#f59e0b"}

func span(h *checker.History) float64 {
	end := float64(h.Meta.WorkloadEnd) / 1e9
	for _, o := range h.Ops {
		end = max(end, float64(o.Complete)/1e9)
	}
	return max(end, 1)
}

var palette = []string{"#6366f1", "#ec4899", "#14b8a6", "#f97316", "#8b5cf6", "#0ea5e9", "#84cc16", "#ef4444",
	"#a16207", "#0f766e", "#be185d", "#4338ca", "#15803d", "#b91c1c", "#7c3aed", "#0369a1", "#c2410c"}

// kindColors gives every nemesis kind of the history its own color, in
// order of first appearance.
func kindColors(h *checker.History) (map[string]string, []string) {
	colors := map[string]string{}
	var order []string
	for _, n := range h.Nemeses {
		if _, ok := colors[n.Kind]; !ok {
			colors[n.Kind] = palette[len(colors)%len(palette)]
			order = append(order, n.Kind)
		}
	}
	return colors, order
}

// kindLegend lists the colors of the nemesis kinds, for charts too dense
// to label every window.
func kindLegend(h *checker.History) string {
	colors, order := kindColors(h)
	var b strings.Builder
	b.WriteString(`<p style="font-size:12px">`)
	for _, k := range order {
		fmt.Fprintf(&b, `<span style="display:inline-block;width:10px;height:10px;background:%s;opacity:.5"></span> %s &nbsp; `, colors[k], html.EscapeString(k))
	}
	b.WriteString(`</p>`)
	return b.String()
}

// shading draws the nemesis windows, with their names where there is room.
func shading(h *checker.History, x func(float64) float64) string {
	var b strings.Builder
	kinds, _ := kindColors(h)
	lastLabel := -1e9
	for _, n := range h.Nemeses {
		c := kinds[n.Kind]
		s, hl := x(float64(n.Start)/1e9), x(float64(n.Healed)/1e9)
		fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s" opacity="0.18"><title>%s</title></rect>`,
			s, padT, max(hl-s, 1), chartH-padT-padB, c, html.EscapeString(n.Kind+" "+strings.Join(n.Targets, " ")))
		if n.Recovered > n.Healed {
			r := x(float64(n.Recovered) / 1e9)
			fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s" opacity="0.07"/>`, hl, padT, max(r-hl, 0.5), chartH-padT-padB, c)
		}
		if s-lastLabel >= 14 {
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" fill="%s" transform="rotate(-90 %.1f %d)" text-anchor="end">%s</text>`,
				s+9, padT+2, c, s+9, padT+2, html.EscapeString(n.Kind))
			lastLabel = s
		}
	}
	return b.String()
}

func timeAxis(b *strings.Builder, x func(float64) float64, end float64) {
	step := niceStep(end / 10)
	for t := 0.0; t <= end; t += step {
		fmt.Fprintf(b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#eee"/><text x="%.1f" y="%d" text-anchor="middle">%gs</text>`,
			x(t), x(t), padT, chartH-padB, x(t), chartH-padB+14, t)
	}
}

func niceStep(raw float64) float64 {
	if raw <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

func latencyChart(h *checker.History) string {
	end := span(h)
	x := func(t float64) float64 { return padL + t/end*float64(chartW-padL-padR) }
	lo, hi := -2.0, 4.0 // 0.01 ms .. 10 s
	y := func(ms float64) float64 {
		l := math.Log10(max(ms, 0.01))
		return float64(chartH-padB) - (min(l, hi)-lo)/(hi-lo)*float64(chartH-padT-padB)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d">`, chartW, chartH, chartW, chartH)
	timeAxis(&b, x, end)
	for l := lo; l <= hi; l++ {
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#eee"/><text x="%d" y="%.1f" text-anchor="end">%g ms</text>`,
			padL, chartW-padR, y(math.Pow(10, l)), y(math.Pow(10, l)), padL-4, y(math.Pow(10, l))+4, math.Pow(10, l))
	}
	b.WriteString(shading(h, x))
	// Sample: at most 15000 ok and 8000 other points, failures drawn last.
	rnd := rand.New(rand.NewPCG(1, 2))
	var okIdx, badIdx []int
	for i, o := range h.Ops {
		if o.Final {
			continue
		}
		if o.Outcome == checker.OK {
			okIdx = append(okIdx, i)
		} else {
			badIdx = append(badIdx, i)
		}
	}
	sample := func(idx []int, n int) []int {
		if len(idx) <= n {
			return idx
		}
		rnd.Shuffle(len(idx), func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
		return idx[:n]
	}
	for _, i := range append(sample(okIdx, 15000), sample(badIdx, 8000)...) {
		o := h.Ops[i]
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="1.3" fill="%s" opacity="0.6"/>`,
			x(float64(o.Complete)/1e9), y(float64(o.Complete-o.Invoke)/1e6), outcomeColor[o.Outcome])
	}
	legend(&b)
	b.WriteString(`</svg>`)
	return b.String()
}

func legend(b *strings.Builder) {
	for i, oc := range []string{checker.OK, checker.Fail, checker.Unknown} {
		fmt.Fprintf(b, `<rect x="%d" y="4" width="10" height="10" fill="%s"/><text x="%d" y="13">%s</text>`, chartW-230+i*75, outcomeColor[oc], chartW-216+i*75, oc)
	}
}

func throughputChart(h *checker.History) string {
	end := span(h)
	n := int(math.Ceil(end))
	counts := map[string][]int{checker.OK: make([]int, n+1), checker.Fail: make([]int, n+1), checker.Unknown: make([]int, n+1)}
	peak := 1
	for _, o := range h.Ops {
		if o.Final {
			continue
		}
		s := int(o.Complete / 1e9)
		if c, ok := counts[o.Outcome]; ok && s <= n {
			c[s]++
			peak = max(peak, c[s])
		}
	}
	x := func(t float64) float64 { return padL + t/end*float64(chartW-padL-padR) }
	top := niceStep(float64(peak) / 4)
	ymax := math.Ceil(float64(peak)/top) * top
	y := func(v float64) float64 { return float64(chartH-padB) - v/ymax*float64(chartH-padT-padB) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d">`, chartW, chartH, chartW, chartH)
	timeAxis(&b, x, end)
	for v := 0.0; v <= ymax; v += top {
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#eee"/><text x="%d" y="%.1f" text-anchor="end">%g/s</text>`,
			padL, chartW-padR, y(v), y(v), padL-4, y(v)+4, v)
	}
	b.WriteString(shading(h, x))
	for _, oc := range []string{checker.OK, checker.Unknown, checker.Fail} {
		var pts []string
		for s, c := range counts[oc] {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(float64(s)+0.5), y(float64(c))))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.3" points="%s"/>`, outcomeColor[oc], strings.Join(pts, " "))
	}
	legend(&b)
	b.WriteString(`</svg>`)
	return b.String()
}

// readinessTimeline is one line per node of a storage fault's readiness:
// when it went other than 200 (with the first words of the reason) and
// when it answered 200 again, from the injection, and how long after the
// heal.
func readinessTimeline(n checker.Nemesis) []string {
	var order []string
	by := map[string][]checker.ReadyChange{}
	for _, c := range n.Readiness {
		if _, ok := by[c.Node]; !ok {
			order = append(order, c.Node)
		}
		by[c.Node] = append(by[c.Node], c)
	}
	rel := func(t int64) string { return fmt.Sprintf("+%.1fs", float64(t-n.Start)/1e9) }
	var out []string
	for _, id := range order {
		cs := by[id]
		var parts []string
		for i, c := range cs {
			if i == 0 && c.Code == 200 {
				continue
			}
			switch {
			case c.Code == 200:
				parts = append(parts, fmt.Sprintf("200 at %s (heal %+.1fs)", rel(c.At), float64(c.At-n.Healed)/1e9))
			default:
				parts = append(parts, fmt.Sprintf("%d at %s %q", c.Code, rel(c.At), firstWords(c.Detail, 90)))
			}
		}
		line := id + ": "
		switch {
		case len(parts) == 0:
			line += "ready throughout"
		default:
			line += strings.Join(parts, " -> ")
			if last := cs[len(cs)-1]; last.Code != 200 {
				line += " -> NOT READY AGAIN by the end of the watch"
			}
		}
		out = append(out, line)
	}
	return out
}

// firstWords cuts s to about max bytes at a word boundary.
func firstWords(s string, max int) string {
	if len(s) <= max {
		return s
	}
	if i := strings.LastIndexByte(s[:max], ' '); i > max/2 {
		return s[:i] + " …"
	}
	return s[:max] + "…"
}
