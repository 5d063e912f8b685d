package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/domain"
)

// retryAfterSeconds is what a 503 tells clients to wait: about one election.
const retryAfterSeconds = "1"

// storeError maps an error from the Store to its problem: by its kind
// (domain.ErrNotFound, ...) and by what the route is about, so that a
// missing sequence and a missing namespace keep their own problem types.
func (s *Service) storeError(c echo.Context, err error) error {
	about := subjectOf(c.Path())
	if pe, ok := s.snowflakeProblem(err); ok {
		if about == aboutNamespace && pe.p.Namespace == "" {
			pe.p.Namespace = c.Param("name")
		}
		return pe
	}
	switch {
	case errors.Is(err, domain.ErrNotFound):
		return problem(http.StatusNotFound, about.notFoundType, about.name+" not found", err.Error())
	case errors.Is(err, domain.ErrExhausted):
		return problem(http.StatusConflict, api.ProblemExhausted, "sequence exhausted", err.Error())
	case errors.Is(err, domain.ErrConflict):
		return problem(http.StatusConflict, api.ProblemConflict, about.conflictTitle, err.Error())
	case errors.Is(err, domain.ErrInvalid):
		return badRequest(err.Error())
	case errors.Is(err, domain.ErrNoWorkerFree):
		return problem(http.StatusConflict, api.ProblemNoWorkerFree, "no worker id free", err.Error())
	case errors.Is(err, domain.ErrLeaseLost):
		return problem(http.StatusConflict, api.ProblemLeaseLost, "lease lost", err.Error())
	case errors.Is(err, domain.ErrWorkerUnavailable):
		pe := &problemError{status: http.StatusConflict, p: api.Problem{Type: api.ProblemWorkerUnavailable, Title: "worker id unavailable", Detail: err.Error()}}
		var wu *domain.WorkerUnavailableError
		if errors.As(err, &wu) {
			w := wu.WorkerID
			pe.p.WorkerID, pe.p.Holder, pe.p.State, pe.p.EndReason, pe.p.EarliestFreeMs = &w, wu.Holder, wu.State, wu.EndReason, wu.EarliestFreeMs
		}
		return pe
	case errors.Is(err, domain.ErrClusterUpgrading):
		pe := &problemError{status: http.StatusConflict, p: api.Problem{Type: api.ProblemClusterUpgrading, Title: "cluster upgrading", Detail: err.Error()}}
		var ue *domain.ClusterUpgradingError
		if errors.As(err, &ue) {
			pe.p.NeedFeatureLevel, pe.p.ClusterFeatureLevel = ue.NeedLevel, ue.ClusterLevel
			for _, m := range ue.Behind {
				pe.p.Behind = append(pe.p.Behind, api.Member(m))
			}
		}
		return pe
	case errors.Is(err, domain.ErrUnavailable),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		id, _, _ := s.store.LeaderHTTPAddr()
		return unavailable(err.Error(), id)
	}
	s.log.Error("request failed", "method", c.Request().Method, "path", c.Path(), "err", err)
	return problem(http.StatusInternalServerError, api.ProblemInternal, "internal error", err.Error())
}

// subject is what a route is about, for the problems of its errors.
type subject struct {
	name          string // "sequence", ...
	notFoundType  string
	conflictTitle string
}

var (
	aboutSequence  = subject{"sequence", api.ProblemNotFound, "sequence exists with different settings"}
	aboutNamespace = subject{"namespace", api.ProblemNamespaceNotFound, "namespace exists with different settings"}
	aboutMember    = subject{"member", api.ProblemMemberNotFound, "member conflict"}
	aboutCluster   = subject{"cluster", api.ProblemNotFound, "cluster not empty"}
)

// subjectOf tells what the route with Echo path pattern p is about.
func subjectOf(p string) subject {
	switch {
	case strings.HasPrefix(p, "/v1/namespaces"), strings.HasPrefix(p, "/v1/inspect/snowflake"):
		return aboutNamespace
	case strings.HasPrefix(p, "/v1/cluster/members"), p == "/v1/cluster/leader":
		return aboutMember
	case strings.HasPrefix(p, "/v1/restore"), strings.HasPrefix(p, "/v1/backup"), p == "/v1/cluster/snapshot":
		return aboutCluster
	}
	return aboutSequence
}

// problemError is an error that renders as a problem details response;
// handlers return it and handleEchoError writes it.
type problemError struct {
	status int
	p      api.Problem
	// retryAfter, if set, is the Retry-After of a 503 (else
	// retryAfterSeconds).
	retryAfter string
}

func (e *problemError) Error() string { return e.p.Title + ": " + e.p.Detail }

func badRequest(detail string) error {
	return problem(http.StatusBadRequest, api.ProblemBadRequest, "bad request", detail)
}

func unavailable(detail, leader string) error {
	return &problemError{status: http.StatusServiceUnavailable, p: api.Problem{
		Type: api.ProblemUnavailable, Title: "service unavailable", Detail: detail, Leader: leader,
	}}
}

func problem(status int, typ, title, detail string) error {
	return &problemError{status: status, p: api.Problem{Type: typ, Title: title, Detail: detail}}
}

func writeProblem(w http.ResponseWriter, status int, p api.Problem) {
	writeProblemRetry(w, status, p, retryAfterSeconds)
}

// writeProblemRetry is writeProblem with the Retry-After of a 503.
func writeProblemRetry(w http.ResponseWriter, status int, p api.Problem, retryAfter string) {
	p.Status = status
	if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", retryAfter)
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // details quote things like "Bearer <token>"
	_ = enc.Encode(p)
}

// handleEchoError turns Echo's own errors (no route, wrong method) into
// problem details.
func (s *Service) handleEchoError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	var pe *problemError
	if errors.As(err, &pe) {
		ra := pe.retryAfter
		if ra == "" {
			ra = retryAfterSeconds
		}
		writeProblemRetry(c.Response(), pe.status, pe.p, ra)
		return
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		typ := api.ProblemBadRequest
		switch he.Code {
		case http.StatusNotFound:
			typ = api.ProblemRouteNotFound
		case http.StatusMethodNotAllowed:
			typ = api.ProblemMethodNotAllowed
		case http.StatusRequestEntityTooLarge:
			typ = api.ProblemTooLarge
		case http.StatusUnsupportedMediaType:
			typ = api.ProblemUnsupportedMedium
		}
		detail := http.StatusText(he.Code)
		if m, ok := he.Message.(string); ok {
			detail = m
		}
		if he.Code == http.StatusNotFound {
			detail = "no route for " + c.Request().Method + " " + c.Request().URL.Path
		}
		writeProblem(c.Response(), he.Code, api.Problem{Type: typ, Title: http.StatusText(he.Code), Detail: detail})
		return
	}
	s.log.Error("unhandled error", "path", c.Request().URL.Path, "err", err)
	writeProblem(c.Response(), http.StatusInternalServerError, api.Problem{Type: api.ProblemInternal, Title: "internal error", Detail: err.Error()})
}
