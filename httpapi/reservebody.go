package httpapi

// The reservation's body on its fast path. A reservation is the request a
// node answers tens of thousands of times a second, and its body is almost
// always the same few bytes: {"count":N}. Decoding those with encoding/json's
// strict Decoder (unknown fields refused, nothing after the object) costs
// more than the rest of the handler. parseReserveBody accepts only that
// shape, spelled so that the strict path would certainly accept it with the
// same value; anything else, even a body the strict path accepts
// ({"Count":1}, a duplicate key, an escaped key), goes to decodeBody's path
// unchanged, so every error a client can get is exactly the one it got
// before. FuzzReserveBodyFastPath holds the fast path to that promise.

import (
	"io"
	"net/http"
	"sync"

	"github.com/labstack/echo/v4"

	"github.com/ticketd/ticketd/api"
)

// bodyBufPool holds buffers for reading small request bodies, so a
// reservation does not allocate io.ReadAll's 512 bytes each time.
var bodyBufPool = sync.Pool{New: func() any {
	b := make([]byte, 0, 512)
	return &b
}}

// maxPooledBody is the largest buffer put back in bodyBufPool: one large
// body must not pin 64 KiB per pooled buffer.
const maxPooledBody = 4 << 10

// reserveCount reads a reservation's body and returns its count, through
// the fast path when the body is plainly {"count":N} and through
// decodeBody's strict decoding otherwise. The count is not validated.
func reserveCount(c echo.Context) (int64, error) {
	return countOfPooledBody(c, reserveCountOf)
}

// countOfPooledBody reads the request body into a pooled buffer and returns
// what countOf makes of it; the buffer goes back to the pool after.
func countOfPooledBody(c echo.Context, countOf func([]byte) (int64, error)) (int64, error) {
	bp := bodyBufPool.Get().(*[]byte)
	data, err := readBody(c, (*bp)[:0])
	defer func() {
		if cap(data) <= maxPooledBody {
			*bp = data[:0]
			bodyBufPool.Put(bp)
		}
	}()
	if err != nil {
		return 0, bodyReadError(err)
	}
	return countOf(data)
}

// reserveCountOf is reserveCount of a body already read.
func reserveCountOf(data []byte) (int64, error) {
	if n, ok := parseReserveBody(data); ok {
		return n, nil
	}
	var req struct {
		Count *int64 `json:"count"`
	}
	if err := decodeJSONBody(data, &req, false); err != nil {
		return 0, err
	}
	if req.Count == nil {
		return 0, badRequest(`field "count" is required`)
	}
	return *req.Count, nil
}

// readBody reads the request body, at most api.MaxBodyBytes of it, appending
// to buf: io.ReadAll's loop over a buffer the caller provides. Errors are
// the reader's, as io.ReadAll returns them (io.EOF is the end, not an
// error).
func readBody(c echo.Context, buf []byte) ([]byte, error) {
	body := http.MaxBytesReader(c.Response(), c.Request().Body, api.MaxBodyBytes)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err != nil {
			if err == io.EOF {
				return buf, nil
			}
			return buf, err
		}
	}
}

// parseReserveBody parses b if it is exactly {"count":<integer>}, with JSON
// whitespace (space, \t, \n, \r) wherever JSON allows it, the key spelled
// "count" without escapes, and the integer in JSON's grammar (optional '-',
// no leading zero, no fraction or exponent) within int64. It reports false
// for anything else, including bodies the strict decoding accepts.
func parseReserveBody(b []byte) (int64, bool) {
	i := skipJSONSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return 0, false
	}
	i = skipJSONSpace(b, i+1)
	const name = `"count"`
	if len(b)-i < len(name) || string(b[i:i+len(name)]) != name {
		return 0, false
	}
	i = skipJSONSpace(b, i+len(name))
	if i >= len(b) || b[i] != ':' {
		return 0, false
	}
	i = skipJSONSpace(b, i+1)
	neg := false
	if i < len(b) && b[i] == '-' {
		neg = true
		i++
	}
	start := i
	var u uint64
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		u = u*10 + uint64(b[i]-'0')
		i++
		// 19 digits cannot overflow a uint64 (< 1e19 < 2^64); more than
		// 19 cannot fit an int64.
		if i-start > 19 {
			return 0, false
		}
	}
	switch digits := i - start; {
	case digits == 0:
		return 0, false
	case digits > 1 && b[start] == '0':
		return 0, false // a leading zero is not JSON
	}
	const maxInt64 = 1<<63 - 1
	if (!neg && u > maxInt64) || (neg && u > maxInt64+1) {
		return 0, false // the strict path refuses a number int64 cannot hold
	}
	// What follows the number must end it: '.', 'e' and 'E' would make it
	// a fraction or an exponent, and are refused here like anything else
	// that is not whitespace or the closing brace.
	i = skipJSONSpace(b, i)
	if i >= len(b) || b[i] != '}' {
		return 0, false
	}
	if skipJSONSpace(b, i+1) != len(b) {
		return 0, false
	}
	if neg {
		return -int64(u), true // u == 2^63 wraps to math.MinInt64, as it should
	}
	return int64(u), true
}

// skipJSONSpace returns the index of the first byte at or after i that is
// not JSON whitespace.
func skipJSONSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}
