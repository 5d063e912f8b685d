package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/client"
	"github.com/ticketd/ticketd/metrics"
)

// The RATE column of `ticketd sequences`: the IDs per second the leader
// handed out over the last --rate-window. The API reports no rate; the
// leader's GET /metrics has ticketd_ids_issued_total{sequence}, a counter of
// the leader's process, so the rate is that counter's growth between two
// scrapes of the leader, --rate-window apart.
//
// The leader's identity is checked in the samples themselves rather than by
// asking GET /v1/cluster around them: each scrape also carries
// ticketd_raft_is_leader and ticketd_raft_term, read when the scrape is
// made. A node leads a term at most once, and a restarted process must win
// a new term to lead again, so two scrapes that both say "leader in term T"
// come from one process that led for the whole window, and the difference
// of its counter is what it handed out. Any other pair shows "-".

// The series a sample reads.
const (
	issuedMetric   = "ticketd_ids_issued_total"
	isLeaderMetric = "ticketd_raft_is_leader"
	termMetric     = "ticketd_raft_term"
)

// maxMetricsBytes bounds what one scrape reads: a node's /metrics is tens of
// kilobytes (256 sequence labels at most).
const maxMetricsBytes = 16 << 20

// issuedSample is one scrape of a node's /metrics.
type issuedSample struct {
	node string // the node scraped, as the cluster names it
	// at is midway between sending the request and its answer, the best
	// guess of when the node read its counters.
	at     time.Time
	leader bool
	term   uint64
	// issued is ticketd_ids_issued_total by its sequence label.
	issued map[string]float64
}

// leaderRates samples the leader twice, window apart, and returns each
// sequence's RATE cell. When it cannot tell a rate, the cells say "-" and
// note says why, in one line; a rate that cannot be measured is never an
// error of the command.
func leaderRates(ctx context.Context, co *clientOpts, window time.Duration, names []string) (cells map[string]string, note string) {
	dashes := func(why string) (map[string]string, string) {
		cells := make(map[string]string, len(names))
		for _, n := range names {
			cells[n] = "-"
		}
		return cells, "RATE shows - for every sequence: " + why
	}
	hc, token, err := co.httpClient()
	if err != nil {
		return dashes(err.Error())
	}
	id, base, err := leaderAPI(ctx, co)
	if err != nil {
		return dashes(rateErrText(err))
	}
	a, err := sampleIssued(ctx, hc, token, id, base)
	if err != nil {
		return dashes(rateErrText(err))
	}
	select {
	case <-time.After(time.Until(a.at.Add(window))):
	case <-ctx.Done():
		return dashes("the window did not fit in --timeout")
	}
	b, err := sampleIssued(ctx, hc, token, id, base)
	if err != nil {
		return dashes(rateErrText(err))
	}
	return rateCells(a, b, names)
}

// leaderAPI finds the leader's ID and API URL as the cluster reports them
// (GET /v1/cluster), with the scheme --addr uses.
func leaderAPI(ctx context.Context, co *clientOpts) (id, base string, err error) {
	var st api.ClusterStatus
	if err := getJSON(ctx, co, "/v1/cluster", &st); err != nil {
		return "", "", fmt.Errorf("finding the leader: %w", err)
	}
	if st.Leader == "" {
		return "", "", fmt.Errorf("%s knows no leader", st.Node)
	}
	scheme := "http"
	if eps := co.endpoints(); len(eps) > 0 && strings.HasPrefix(eps[0], "https://") {
		scheme = "https"
	}
	for _, m := range st.Members {
		if m.ID == st.Leader && m.HTTPAddr != "" {
			return m.ID, scheme + "://" + m.HTTPAddr, nil
		}
	}
	return "", "", fmt.Errorf("the leader %s's API address is not registered yet", st.Leader)
}

// sampleIssued scrapes node's /metrics at base in the Prometheus text
// format.
func sampleIssued(ctx context.Context, hc *http.Client, token, node, base string) (issuedSample, error) {
	s := issuedSample{node: node, issued: map[string]float64{}}
	url := base + "/metrics"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return s, err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	sent := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		return s, fmt.Errorf("scraping the leader %s: %w", node, err)
	}
	defer resp.Body.Close()
	s.at = sent.Add(time.Since(sent) / 2)
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return s, apiError(url, resp.StatusCode, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(io.LimitReader(resp.Body, maxMetricsBytes))
	if err != nil {
		return s, fmt.Errorf("reading %s: %w", url, err)
	}
	leader, term := families[isLeaderMetric], families[termMetric]
	if leader == nil || term == nil || len(leader.GetMetric()) != 1 || len(term.GetMetric()) != 1 {
		return s, fmt.Errorf("%s has no %s or %s: is it a ticketd node?", url, isLeaderMetric, termMetric)
	}
	s.leader = leader.GetMetric()[0].GetGauge().GetValue() == 1
	s.term = uint64(term.GetMetric()[0].GetGauge().GetValue())
	for _, m := range families[issuedMetric].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "sequence" {
				s.issued[l.GetValue()] = m.GetCounter().GetValue()
			}
		}
	}
	return s, nil
}

// rateCells compares two samples of the leader: each sequence's IDs per
// second between them, or "-" and why when that cannot be told.
//
// A sequence without a series of its own issued nothing on this leader
// since it took over, or counts under "_other" with every sequence past the
// leader's first 256 labels; the same holds for a sequence named "_other".
// Such a sequence is 0/s when "_other" did not grow, and "-" when it did.
func rateCells(a, b issuedSample, names []string) (cells map[string]string, note string) {
	cells = make(map[string]string, len(names))
	for _, n := range names {
		cells[n] = "-"
	}
	const all = "RATE shows - for every sequence: "
	switch {
	case !a.leader:
		return cells, all + a.node + " was no longer the leader when scraped (leadership moved meanwhile)"
	case !b.leader || b.term != a.term:
		return cells, fmt.Sprintf(all+"the leader changed during --rate-window: %s led term %d at the first sample, not at the second", a.node, a.term)
	}
	seconds := b.at.Sub(a.at).Seconds()
	if seconds <= 0 {
		return cells, all + "the two samples were taken at the same instant"
	}
	otherGrew := b.issued[metrics.OtherSequence] > a.issued[metrics.OtherSequence]
	shared := 0
	for _, n := range names {
		after, own := b.issued[n]
		if !own || n == metrics.OtherSequence {
			if otherGrew {
				shared++
				continue
			}
			cells[n] = cellRate(0)
			continue
		}
		if d := after - a.issued[n]; d >= 0 {
			cells[n] = cellRate(d / seconds)
		}
	}
	if shared > 0 {
		note = fmt.Sprintf("RATE shows - for %d sequences: they have no series of their own on the leader (past its first %d sequence labels, they count together under sequence=%q, which grew)",
			shared, metrics.MaxSequenceLabels, metrics.OtherSequence)
	}
	return cells, note
}

// rateErrText is why a sample failed, in one line: the node's answer in
// words and, for a refusal, what lets the CLI read /metrics.
func rateErrText(err error) string {
	msg, _ := explain(err, "sequences")
	var apiErr *client.APIError
	if errors.As(err, &apiErr) && (apiErr.StatusCode == http.StatusUnauthorized || apiErr.StatusCode == http.StatusForbidden) {
		msg += "; /metrics needs a reserve token (--token-file, TICKETD_TOKEN) unless the nodes run with --metrics-public"
	}
	return msg
}
