package main

// The bare Echo handler's Snowflake routes: the ceiling of
// POST /v1/namespaces/{name}/ids on this machine. It answers what ticketd
// answers (the same JSON, written the same way: strconv into a pooled
// buffer, as httpapi/snowflakeids.go does) from a counter under a mutex,
// with no lease, no clock and no middleware, so that ticketd's rows beside
// it show what the node's generator and its HTTP stack cost beyond that.

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/ticketd/ticketd/api"
)

// baselineIDs makes IDs of the default layout with worker id 0: the counter
// spread over the timestamp and sequence fields, strictly increasing, from
// the millisecond the server started. They have as many digits as ticketd's
// (18 today), so that the answers are as long: a short answer would cost
// less to format and, at 100 IDs, fit one write where ticketd's takes two.
type baselineIDs struct {
	mu   sync.Mutex
	base uint64 // the start's milliseconds since the default epoch, in place
	next uint64
}

func newBaselineIDs(now time.Time) *baselineIDs {
	ms := uint64(now.UnixMilli() - api.DefaultEpochMs)
	return &baselineIDs{base: ms << (api.DefaultWorkerBits + api.DefaultSequenceBits)}
}

func (b *baselineIDs) take(n int, dst []int64) []int64 {
	seqBits := uint(api.DefaultSequenceBits)
	shift := uint(api.DefaultWorkerBits) + seqBits
	b.mu.Lock()
	first := b.next
	b.next += uint64(n)
	b.mu.Unlock()
	for c := first; c < first+uint64(n); c++ {
		dst = append(dst, int64(b.base+(c>>seqBits)<<shift|c&(1<<seqBits-1)))
	}
	return dst
}

var baselineBufPool = sync.Pool{New: func() any {
	b := make([]byte, 0, 512)
	return &b
}}

func addSnowflakeBaselineRoutes(e *echo.Echo) {
	gen := newBaselineIDs(time.Now())
	e.PUT("/v1/namespaces/:name", func(c echo.Context) error {
		return c.JSON(http.StatusOK, api.Namespace{
			Name: c.Param("name"), EpochMs: api.DefaultEpochMs, TimestampBits: api.DefaultTimestampBits,
			WorkerBits: api.DefaultWorkerBits, SequenceBits: api.DefaultSequenceBits, TickMs: api.DefaultTickMs,
		})
	})
	e.POST("/v1/namespaces/:name/ids", func(c echo.Context) error {
		bp := baselineBufPool.Get().(*[]byte)
		defer baselineBufPool.Put(bp)
		body, err := io.ReadAll(io.LimitReader(c.Request().Body, 4096))
		n := int64(1)
		if err == nil && len(bytes.TrimSpace(body)) > 0 {
			var v int
			v, err = baselineCount(body)
			n = int64(v)
		}
		if err != nil || n < 1 || n > api.MaxSnowflakeIDs {
			c.Response().Header().Set(echo.HeaderContentType, "application/problem+json")
			return c.String(http.StatusBadRequest, `{"title":"bad request","status":400}`)
		}
		ids := gen.take(int(n), make([]int64, 0, n))
		b := append((*bp)[:0], `{"namespace":"`...)
		b = append(b, c.Param("name")...)
		b = append(b, `","node":"baseline","worker_id":0,"ids":[`...)
		for i, id := range ids {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, id, 10)
		}
		b = append(b, `],"ids_text":[`...)
		for i, id := range ids {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '"')
			b = strconv.AppendInt(b, id, 10)
			b = append(b, '"')
		}
		b = append(b, "]}\n"...)
		*bp = b
		return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, b)
	})
}

// baselineCount reads {"count":N} as the load generator sends it.
func baselineCount(body []byte) (int, error) {
	const pre = `{"count":`
	body = bytes.TrimSpace(body)
	if !bytes.HasPrefix(body, []byte(pre)) || !bytes.HasSuffix(body, []byte("}")) {
		return 0, strconv.ErrSyntax
	}
	return strconv.Atoi(string(body[len(pre) : len(body)-1]))
}
