package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/domain"
)

// reserveInput reads and checks a reservation's sequence name and count,
// the count read from the body by readCount: reserveCount on the leader, a
// reader that keeps the body on a follower that coalesces it (coalesce.go).
func reserveInput(c echo.Context, readCount func(echo.Context) (int64, error)) (name string, count int64, err error) {
	name = c.Param("name")
	if err := api.ValidateSequenceName(name); err != nil {
		return "", 0, badRequest(err.Error())
	}
	count, err = readCount(c)
	if err != nil {
		return "", 0, err
	}
	if err := api.ValidateCount(count); err != nil {
		return "", 0, badRequest(`field "count": ` + err.Error())
	}
	return name, count, nil
}

func (s *Service) reserve(c echo.Context) error {
	name, count, err := reserveInput(c, reserveCount) // see reservebody.go
	if err != nil {
		return err
	}
	ctx, cancel := s.ctx(c)
	defer cancel()
	start := time.Now()
	first, last, err := s.store.Reserve(ctx, name, count)
	if err != nil {
		perr := s.storeError(c, err)
		s.metrics.ObserveReservation(name, outcome(perr), 0, time.Since(start))
		return perr
	}
	s.metrics.ObserveReservation(name, "ok", count, time.Since(start))
	return writeRange(c, api.Range{Sequence: name, First: first, Last: last}) // see rangejson.go
}

// outcome names the result of a reservation for metrics.
func outcome(err error) string {
	var pe *problemError
	if !errors.As(err, &pe) {
		return "error"
	}
	switch pe.p.Type {
	case api.ProblemNotFound:
		return "not_found"
	case api.ProblemExhausted:
		return "exhausted"
	case api.ProblemUnavailable:
		return "unavailable"
	case api.ProblemBadRequest:
		return "bad_request"
	}
	return "error"
}

func (s *Service) createSequence(c echo.Context) error {
	name := c.Param("name")
	if err := api.ValidateNewSequenceName(name); err != nil {
		return badRequest(err.Error())
	}
	var req api.CreateSequenceRequest
	if err := decodeBody(c, &req, true); err != nil {
		return err
	}
	settings := domain.SequenceSettings{Name: name, Start: api.DefaultStart, Max: api.DefaultMax}
	if req.Start != nil {
		settings.Start = *req.Start
	}
	if req.Max != nil {
		settings.Max = *req.Max
	}
	if err := api.ValidateBounds(settings.Start, settings.Max); err != nil {
		return badRequest(err.Error())
	}
	ctx, cancel := s.ctx(c)
	defer cancel()
	seq, created, err := s.store.CreateSequence(ctx, settings)
	if err != nil {
		return s.storeError(c, err)
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	return c.JSON(status, sequenceView(seq))
}

// raiseSequence lifts a sequence's high-water mark (issue #16): the tool for
// moving to ticketd from another generator while both still write.
func (s *Service) raiseSequence(c echo.Context) error {
	name := c.Param("name")
	if err := api.ValidateSequenceName(name); err != nil {
		return badRequest(err.Error())
	}
	var req api.RaiseSequenceRequest
	if err := decodeBody(c, &req, false); err != nil {
		return err
	}
	if req.AtLeast < 1 {
		return badRequest(fmt.Sprintf("at_least is required and must be at least 1, got %d", req.AtLeast))
	}
	ctx, cancel := s.ctx(c)
	defer cancel()
	res, err := s.store.RaiseSequence(ctx, name, req.AtLeast)
	if err != nil {
		return s.storeError(c, err)
	}
	return c.JSON(http.StatusOK, api.RaiseSequenceResult{Raised: res.Raised, Skipped: res.Skipped, Sequence: sequenceView(res.Sequence)})
}

func (s *Service) getSequence(c echo.Context) error {
	name := c.Param("name")
	if err := api.ValidateSequenceName(name); err != nil {
		return badRequest(err.Error())
	}
	ctx, cancel := s.ctx(c)
	defer cancel()
	seq, err := s.store.Sequence(ctx, name)
	if err != nil {
		return s.storeError(c, err)
	}
	return c.JSON(http.StatusOK, sequenceView(seq))
}

// listSequences answers a page: ?after=NAME (names strictly greater, in
// byte order; absent or empty: from the first) and ?limit=L (1 to
// api.MaxSequencePage, default api.DefaultSequencePage). "next" names the
// cursor of the following page when there is one.
func (s *Service) listSequences(c echo.Context) error {
	after, limit, err := sequencePageParams(c)
	if err != nil {
		return err
	}
	ctx, cancel := s.ctx(c)
	defer cancel()
	seqs, more, err := s.store.Sequences(ctx, after, limit)
	if err != nil {
		return s.storeError(c, err)
	}
	out := api.SequenceList{Sequences: make([]api.Sequence, 0, len(seqs))}
	for _, q := range seqs {
		out.Sequences = append(out.Sequences, sequenceView(q))
	}
	if more && len(seqs) > 0 {
		out.Next = seqs[len(seqs)-1].Name
	}
	return c.JSON(http.StatusOK, out)
}

// sequencePageParams reads GET /v1/sequences' query. A cursor is a name the
// server returned, so "after" must pass the naming rule: should api's rule
// ever be tightened, this check must keep accepting every name that exists.
func sequencePageParams(c echo.Context) (after string, limit int, err error) {
	if limit, err = pageLimit(c, api.DefaultSequencePage, api.MaxSequencePage); err != nil {
		return "", 0, err
	}
	if after = c.QueryParam("after"); after != "" {
		if err := api.ValidateSequenceName(after); err != nil {
			return "", 0, badRequest(fmt.Sprintf(`query parameter "after" must be a sequence name (the "next" of the previous page), got %q: %v`, after, err))
		}
	}
	return after, limit, nil
}

func sequenceView(s domain.Sequence) api.Sequence {
	v := api.Sequence{Name: s.Name, Start: s.Start, Max: s.Max, Remaining: s.Remaining}
	if !s.Exhausted {
		next := s.Next
		v.Next = &next
	}
	return v
}
