package httpapi

// POST /v1/namespaces/{name}/ids: Snowflake IDs made by the answering
// node's own generator (issue #32). Every node answers it from memory, so
// the route is neither forwarded nor checked for leadership. Its answer is
// written with strconv into a pooled buffer, as the reservation's is
// (rangejson.go): the same bytes c.JSON writes, without reflection.

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"

	"github.com/labstack/echo/v4"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/domain"
)

func (s *Service) snowflakeIDs(c echo.Context) error {
	if err := s.refuseOnStandby(); err != nil {
		return err
	}
	ns := c.Param("name")
	if err := api.ValidateSequenceName(ns); err != nil {
		return badRequest("namespace: " + err.Error())
	}
	count, err := snowflakeCount(c)
	if err != nil {
		return err
	}
	if count < 1 || count > api.MaxSnowflakeIDs {
		return badRequest(fmt.Sprintf(`field "count" must be between 1 and %d, got %d`, api.MaxSnowflakeIDs, count))
	}
	ctx, cancel := s.ctx(c)
	defer cancel()
	out, err := s.store.SnowflakeIDs(ctx, ns, int(count))
	if err != nil {
		return s.storeError(c, err)
	}
	return writeSnowflakeIDs(c, out)
}

// snowflakeCount reads the body's count: 1 for an empty body, the fast
// path for a plain {"count":N}, strict decoding otherwise.
func snowflakeCount(c echo.Context) (int64, error) {
	return countOfPooledBody(c, snowflakeCountOf)
}

func snowflakeCountOf(data []byte) (int64, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return 1, nil
	}
	if n, ok := parseReserveBody(data); ok {
		return n, nil
	}
	var req api.SnowflakeIDsRequest
	if err := decodeJSONBody(data, &req, true); err != nil {
		return 0, err
	}
	if req.Count == nil {
		return 1, nil
	}
	return *req.Count, nil
}

var idsBufPool = sync.Pool{New: func() any {
	b := make([]byte, 0, 256)
	return &b
}}

// maxPooledIDs is the largest answer buffer put back in the pool (an answer
// of 10,000 IDs is about 400 KB).
const maxPooledIDs = 64 << 10

// writeSnowflakeIDs answers 200 with out, as c.JSON would write its
// api.SnowflakeIDs.
func writeSnowflakeIDs(c echo.Context, out domain.SnowflakeIDs) error {
	if !fastJSONOK(c) || !plainJSONString(out.Namespace) || !plainJSONString(out.Node) {
		text := make([]string, len(out.IDs))
		for i, id := range out.IDs {
			text[i] = strconv.FormatInt(id, 10)
		}
		return c.JSON(http.StatusOK, api.SnowflakeIDs{Namespace: out.Namespace, Node: out.Node, WorkerID: out.WorkerID, LeaseGrantSeq: out.LeaseGrantSeq, IDs: out.IDs, IDsText: text})
	}
	bp := idsBufPool.Get().(*[]byte)
	b := appendSnowflakeIDsJSON((*bp)[:0], out)
	err := c.Blob(http.StatusOK, echo.MIMEApplicationJSON, b)
	if cap(b) <= maxPooledIDs {
		*bp = b[:0]
		idsBufPool.Put(bp)
	}
	return err
}

// appendSnowflakeIDsJSON appends out as a json.Encoder writes its
// api.SnowflakeIDs, newline included; the names must be plainJSONString.
func appendSnowflakeIDsJSON(b []byte, out domain.SnowflakeIDs) []byte {
	b = append(b, `{"namespace":"`...)
	b = append(b, out.Namespace...)
	b = append(b, `","node":"`...)
	b = append(b, out.Node...)
	b = append(b, `","worker_id":`...)
	b = strconv.AppendInt(b, out.WorkerID, 10)
	if out.LeaseGrantSeq != 0 {
		b = append(b, `,"lease_grant_seq":`...)
		b = strconv.AppendUint(b, out.LeaseGrantSeq, 10)
	}
	b = append(b, `,"ids":[`...)
	for i, id := range out.IDs {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, id, 10)
	}
	b = append(b, `],"ids_text":[`...)
	for i, id := range out.IDs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = strconv.AppendInt(b, id, 10)
		b = append(b, '"')
	}
	return append(b, "]}\n"...)
}

// snowflakeProblem is the problem of an error of the Snowflake service's
// own kinds; ok is false for every other error.
func (s *Service) snowflakeProblem(err error) (*problemError, bool) {
	node := s.store.ID()
	var pe *problemError
	switch {
	case errors.Is(err, domain.ErrClockBehind):
		pe = &problemError{status: http.StatusServiceUnavailable, p: api.Problem{Type: api.ProblemClockBehind, Title: "clock behind", Detail: err.Error()}}
		var cb *domain.ClockBehindError
		if errors.As(err, &cb) {
			pe.p.Namespace, pe.p.ClockBehindMs = cb.Namespace, cb.BehindMs
			// Whole seconds, rounded up: a client that waits that long
			// finds this node's clock past what it had to stay above.
			pe.retryAfter = strconv.FormatInt(max(1, (cb.BehindMs+999)/1000), 10)
		}
	case errors.Is(err, domain.ErrWorkersExhausted):
		pe = &problemError{status: http.StatusServiceUnavailable, p: api.Problem{Type: api.ProblemWorkersExhausted, Title: "worker ids exhausted", Detail: err.Error()}}
	case errors.Is(err, domain.ErrNoWorkerLease):
		pe = &problemError{status: http.StatusServiceUnavailable, p: api.Problem{Type: api.ProblemNoWorkerLease, Title: "no worker-id lease", Detail: err.Error()}}
	case errors.Is(err, domain.ErrTimestampExhausted):
		pe = &problemError{status: http.StatusConflict, p: api.Problem{Type: api.ProblemTimestampExhausted, Title: "timestamp bits exhausted", Detail: err.Error()}}
	default:
		return nil, false
	}
	pe.p.Node = node
	return pe, true
}
