package respapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/domain"
	"github.com/ticketd/ticketd/metrics"
)

// leaderClient carries a follower's commands to the leader's HTTP API, with
// the caller's token: the leader authorizes them again, as it does a
// forwarded HTTP request.
type leaderClient struct {
	store   Store
	scheme  string
	client  *http.Client
	metrics *metrics.Metrics
	batches *forwardBatches // reservations, coalesced (coalesce.go)
}

var (
	errUnauthorized = errors.New("the leader refused the token")
	errForbidden    = errors.New("the token's scope does not allow it")
)

func newLeaderClient(st Store, scheme string, rt http.RoundTripper, m *metrics.Metrics) *leaderClient {
	if scheme == "" {
		scheme = "http"
	}
	if rt == nil {
		rt = http.DefaultTransport
	}
	l := &leaderClient{store: st, scheme: scheme, client: &http.Client{Transport: rt}, metrics: m}
	l.batches = newForwardBatches(l.reserveAlone, 0)
	return l
}

// leaderURL is the leader's API URL, or why there is none to forward to.
func (l *leaderClient) leaderURL() (string, error) {
	id, addr, ok := l.store.LeaderHTTPAddr()
	switch {
	case id == l.store.ID():
		return "", domain.Kindf(domain.ErrUnavailable, "this node was just elected leader and is not serving yet")
	case !ok && id == "":
		return "", domain.Kindf(domain.ErrUnavailable, "no leader is known")
	case !ok:
		return "", domain.Kindf(domain.ErrUnavailable, "the leader's API address is not known yet (leader %s)", id)
	}
	if l.metrics != nil {
		l.metrics.ForwardedRequests.Inc()
	}
	return l.scheme + "://" + addr, nil
}

// reserve forwards a reservation, coalesced with the others of its
// sequence and token that arrive while one is in flight.
func (l *leaderClient) reserve(ctx context.Context, name string, count int64, token string) (first, last int64, err error) {
	return l.batches.reserve(ctx, name, count, token)
}

// reserveAlone forwards one reservation as its own request.
func (l *leaderClient) reserveAlone(ctx context.Context, name string, count int64, token string) (first, last int64, err error) {
	var r api.Range
	body := []byte(`{"count":` + strconv.FormatInt(count, 10) + `}`)
	if err := l.do(ctx, http.MethodPost, "/v1/sequences/"+name+"/ranges", token, body, &r); err != nil {
		return 0, 0, err
	}
	return checkRange(r, name, count)
}

// checkRange accepts the leader's range only if it is exactly count IDs of
// the sequence asked for: the front hands it to a client as is.
func checkRange(r api.Range, name string, count int64) (first, last int64, err error) {
	if r.Sequence != name || r.First < 1 || r.Last < r.First || r.Last-r.First != count-1 {
		return 0, 0, fmt.Errorf("the leader answered %+v to a reservation of %d IDs of %q", r, count, name)
	}
	return r.First, r.Last, nil
}

func (l *leaderClient) sequence(ctx context.Context, name, token string) (domain.Sequence, error) {
	var s api.Sequence
	if err := l.do(ctx, http.MethodGet, "/v1/sequences/"+name, token, nil, &s); err != nil {
		return domain.Sequence{}, err
	}
	out := domain.Sequence{Name: s.Name, Start: s.Start, Max: s.Max, Remaining: s.Remaining, Exhausted: s.Next == nil}
	if s.Next != nil {
		out.Next = *s.Next
	}
	return out, nil
}

func (l *leaderClient) create(ctx context.Context, c domain.SequenceSettings, token string) (created bool, err error) {
	body, err := json.Marshal(api.CreateSequenceRequest{Start: &c.Start, Max: &c.Max})
	if err != nil {
		return false, err
	}
	var s api.Sequence
	status := 0
	if err := l.doStatus(ctx, http.MethodPut, "/v1/sequences/"+c.Name, token, body, &s, &status); err != nil {
		return false, err
	}
	return status == http.StatusCreated, nil
}

func (l *leaderClient) do(ctx context.Context, method, path, token string, body []byte, out any) error {
	return l.doStatus(ctx, method, path, token, body, out, nil)
}

// maxAnswer bounds what is read of the leader's answer to one command.
const maxAnswer = 64 << 10

func (l *leaderClient) doStatus(ctx context.Context, method, path, token string, body []byte, out any, status *int) error {
	base, err := l.leaderURL()
	if err != nil {
		return err
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set(api.ForwardedHeader, l.store.ID())
	res, err := l.client.Do(req)
	if err != nil {
		return domain.Kindf(domain.ErrUnavailable, "forwarding to the leader at %s failed: %v", base, err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, maxAnswer))
	if err != nil {
		return domain.Kindf(domain.ErrUnavailable, "reading the leader's answer: %v", err)
	}
	if status != nil {
		*status = res.StatusCode
	}
	return decodeAnswer(res.StatusCode, data, out)
}

// decodeAnswer reads the leader's answer: out for a 2xx, else the problem
// as an error of its kind.
func decodeAnswer(status int, data []byte, out any) error {
	if status/100 == 2 {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("the leader's answer is not what was asked for: %v", err)
		}
		return nil
	}
	return problemError(status, data)
}

// problemError turns the leader's problem details back into a domain kind.
func problemError(status int, data []byte) error {
	var p api.Problem
	if err := json.Unmarshal(data, &p); err != nil || p.Type == "" {
		return fmt.Errorf("the leader answered %d: %s", status, bytes.TrimSpace(data[:min(len(data), 200)]))
	}
	msg := p.Title
	if p.Detail != "" {
		msg = p.Detail
	}
	switch p.Type {
	case api.ProblemNotFound:
		return domain.Kindf(domain.ErrNotFound, "%s", msg)
	case api.ProblemExhausted:
		return domain.Kindf(domain.ErrExhausted, "%s", msg)
	case api.ProblemUnavailable, api.ProblemTooManyRequests:
		return domain.Kindf(domain.ErrUnavailable, "%s", msg)
	case api.ProblemConflict:
		return domain.Kindf(domain.ErrConflict, "%s", msg)
	case api.ProblemClusterUpgrading:
		return domain.Kindf(domain.ErrClusterUpgrading, "%s", msg)
	case api.ProblemBadRequest:
		return domain.Kindf(domain.ErrInvalid, "%s", msg)
	case api.ProblemUnauthorized:
		return fmt.Errorf("%w: %s", errUnauthorized, msg)
	case api.ProblemForbidden:
		return fmt.Errorf("%w: %s", errForbidden, msg)
	}
	return fmt.Errorf("the leader answered %s: %s", p.Type, msg)
}
