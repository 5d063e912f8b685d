package httpapi

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/domain"
)

func (s *Service) clusterStatus(c echo.Context) error {
	out, err := s.ownStatus(c)
	if err != nil {
		return s.storeError(c, err)
	}
	return c.JSON(http.StatusOK, out)
}

// ownStatus is this node's answer to GET /v1/cluster.
func (s *Service) ownStatus(c echo.Context) (api.ClusterStatus, error) {
	st, err := s.store.Status()
	if err != nil {
		return api.ClusterStatus{}, err
	}
	out := api.ClusterStatus{
		Node: st.Node, State: st.State, Leader: st.Leader, Term: st.Term,
		CommitIndex: st.CommitIndex, AppliedIndex: st.AppliedIndex,
		RaftTLS: st.RaftTLS, APITLS: c.Request().TLS != nil,
		Members:       make([]api.Member, 0, len(st.Members)),
		LastContactMs: -1,
		LeaderChanges: make([]api.LeaderChange, 0, len(st.LeaderChanges)),
		Version:       st.Version, FeatureLevel: st.FeatureLevel, ClusterFeatureLevel: st.ClusterFeatureLevel,
	}
	if st.Feature.Level > 0 {
		f := api.FeatureLevel(st.Feature)
		out.Feature = &f
	}
	if st.LastContact >= 0 {
		out.LastContactMs = st.LastContact.Milliseconds()
	}
	for _, m := range st.Members {
		out.Members = append(out.Members, api.Member(m))
	}
	for _, lc := range st.LeaderChanges {
		out.LeaderChanges = append(out.LeaderChanges, api.LeaderChange(lc))
	}
	select {
	case <-s.draining:
		st.NotReady = "node is shutting down"
	default:
	}
	out.Ready, out.NotReady, out.LagEntries = st.NotReady == "", st.NotReady, st.LagEntries
	out.Storage = api.NodeStorage{
		Healthy: st.Storage.Healthy, ErrorKind: st.Storage.ErrorKind, Error: st.Storage.Error,
		FailingForMs: st.Storage.FailingFor.Milliseconds(),
		FreeBytes:    st.Storage.FreeBytes, LogBytes: st.Storage.LogBytes, SnapshotBytes: st.Storage.SnapshotBytes,
	}
	out.Standby, out.ThisNodeStandby = apiStandby(st.Standby), st.ThisNodeStandby
	if fe := st.Fence; fe != nil {
		out.Fence = &api.Fence{Standby: fe.Standby, Index: fe.Index, At: rfc3339(fe.At), Reason: fe.Reason}
	}
	for _, p := range st.Promotions {
		out.Promotions = append(out.Promotions, api.Promotion{Standby: p.Standby, AtIndex: p.AtIndex, Advance: p.Advance,
			State: p.State, TokenFloor: p.TokenFloor, At: rfc3339(p.At)})
	}
	for _, sf := range st.Snowflake {
		out.Snowflake = append(out.Snowflake, api.NodeSnowflake{
			Namespace: sf.Namespace, Serving: sf.Serving, Reason: sf.Reason, WorkerID: sf.WorkerID,
			LeaseRemainingMs: sf.LeaseRemaining.Milliseconds(), TimestampFloorMs: sf.TimestampFloorMs, Issued: sf.Issued,
		})
	}
	return out, nil
}

func (s *Service) join(c echo.Context) error {
	req, err := s.memberRequest(c)
	if err != nil {
		return err
	}
	ctx, cancel := s.ctx(c)
	defer cancel()
	if req.Standby {
		bound, timeout := req.StandbyBound, req.StandbyTimeoutMs
		if bound == 0 {
			bound = api.DefaultStandbyBound
		}
		if timeout == 0 {
			timeout = api.DefaultStandbyTimeoutMs
		}
		sj, ok := s.store.(standbyJoiner)
		if !ok {
			return problem(http.StatusNotImplemented, api.ProblemBadRequest, "standby not supported", "this node cannot add a standby")
		}
		if err := sj.JoinStandby(ctx, domain.Member{ID: req.ID, RaftAddr: req.RaftAddr, HTTPAddr: req.HTTPAddr}, bound, timeout); err != nil {
			return s.storeError(c, err)
		}
		return c.JSON(http.StatusOK, api.Member{ID: req.ID, RaftAddr: req.RaftAddr, HTTPAddr: req.HTTPAddr})
	}
	if req.StandbyBound != 0 || req.StandbyTimeoutMs != 0 {
		return badRequest(`fields "standby_bound" and "standby_timeout_ms" need "standby": true`)
	}
	if err := s.store.Join(ctx, domain.Member{ID: req.ID, RaftAddr: req.RaftAddr, HTTPAddr: req.HTTPAddr, Voter: true}); err != nil {
		return s.storeError(c, err)
	}
	return c.JSON(http.StatusOK, api.Member{ID: req.ID, RaftAddr: req.RaftAddr, HTTPAddr: req.HTTPAddr, Voter: true})
}

func (s *Service) updateMember(c echo.Context) error {
	req, err := s.memberRequest(c)
	if err != nil {
		return err
	}
	if req.ID != c.Param("id") {
		return badRequest(fmt.Sprintf("field \"id\" (%q) differs from the id in the path (%q)", req.ID, c.Param("id")))
	}
	ctx, cancel := s.ctx(c)
	defer cancel()
	if err := s.store.UpdateMember(ctx, domain.Member{ID: req.ID, RaftAddr: req.RaftAddr, HTTPAddr: req.HTTPAddr, Voter: true}); err != nil {
		return s.storeError(c, err)
	}
	return c.JSON(http.StatusOK, api.Member{ID: req.ID, RaftAddr: req.RaftAddr, HTTPAddr: req.HTTPAddr, Voter: true})
}

func (s *Service) memberRequest(c echo.Context) (api.JoinRequest, error) {
	var req api.JoinRequest
	if err := decodeBody(c, &req, false); err != nil {
		return req, err
	}
	switch {
	case req.ID == "":
		return req, badRequest(`field "id" is required`)
	case req.RaftAddr == "":
		return req, badRequest(`field "raft_addr" is required`)
	case req.HTTPAddr == "":
		return req, badRequest(`field "http_addr" is required`)
	}
	if err := validateHostPort(req.RaftAddr); err != nil {
		return req, badRequest(fmt.Sprintf(`field "raft_addr": %v`, err))
	}
	if err := validateHostPort(req.HTTPAddr); err != nil {
		return req, badRequest(fmt.Sprintf(`field "http_addr": %v`, err))
	}
	return req, nil
}

func validateHostPort(addr string) error {
	u, err := url.Parse("//" + addr)
	if err != nil || u.Host != addr || u.Port() == "" || u.Hostname() == "" {
		return fmt.Errorf("%q is not host:port", addr)
	}
	// url.Parse lets through hosts no dialer takes ("]:1"); the address
	// is dialed with net, so net must be able to split it.
	if host, _, err := net.SplitHostPort(addr); err != nil || host == "" {
		return fmt.Errorf("%q is not host:port", addr)
	}
	if p, err := strconv.Atoi(u.Port()); err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("%q has no valid port", addr)
	}
	return nil
}

func (s *Service) remove(c echo.Context) error {
	id := c.Param("id")
	ctx, cancel := s.ctx(c)
	defer cancel()
	if err := s.store.Remove(ctx, id); err != nil {
		return s.storeError(c, err)
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Service) snapshot(c echo.Context) error {
	ctx, cancel := s.ctx(c)
	defer cancel()
	if err := s.store.Snapshot(ctx); err != nil {
		return s.storeError(c, err)
	}
	return c.NoContent(http.StatusNoContent)
}

// standbyJoiner adds a disaster-recovery standby (issue #34).
type standbyJoiner interface {
	JoinStandby(ctx context.Context, m domain.Member, bound, timeoutMs int64) error
}

func apiStandby(sb *domain.StandbyStatus) *api.StandbyStatus {
	if sb == nil {
		return nil
	}
	out := &api.StandbyStatus{ID: sb.ID, State: sb.State, Bound: sb.Bound, TimeoutMs: sb.Timeout.Milliseconds(),
		SinceIndex: sb.SinceIndex, Since: rfc3339(sb.Since), Reason: sb.Reason, OutOfSyncCount: sb.OutOfSyncCount}
	if s := sb.Seen; s != nil {
		out.Seen = &api.StandbySeen{AckIndex: s.AckIndex, LagEntries: s.LagEntries, LastContactMs: msOrNever(s.LastContact),
			LastProgressMs: msOrNever(s.LastProgress), Promoted: s.Promoted, CertifiedUntil: rfc3339(s.CertifiedUntil)}
	}
	if c := sb.Certificate; c != nil {
		out.Certificate = &api.StandbyCertificate{InSyncIndex: c.InSyncIndex, ValidUntil: rfc3339(c.ValidUntil), Leader: c.Leader, Term: c.Term}
	}
	return out
}

func msOrNever(d time.Duration) int64 {
	if d < 0 {
		return -1
	}
	return d.Milliseconds()
}

func rfc3339(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}
