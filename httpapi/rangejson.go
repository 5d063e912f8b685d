package httpapi

// The reservation's answer on its fast path. c.JSON encodes api.Range
// through reflection and a fresh json.Encoder; the answer is three fields,
// two of them integers, so it is written here with strconv into a pooled
// buffer instead. The bytes and headers are c.JSON's: echo v4's
// DefaultJSONSerializer is a json.Encoder (HTML escaping on, a "\n" after
// the value) writing the whole value in one Write, after the Content-Type
// "application/json" unless one is set already. Whenever that might not
// hold (a name that would need escaping, ?pretty or Debug, another
// serializer), writeRange calls c.JSON itself. TestWriteRangeMatchesJSON
// and FuzzRangeJSON hold it to that.

import (
	"net/http"
	"strconv"
	"sync"

	"github.com/labstack/echo/v4"

	"github.com/ticketd/ticketd/api"
)

var rangeBufPool = sync.Pool{New: func() any {
	b := make([]byte, 0, 128)
	return &b
}}

// writeRange answers 200 with rg, as c.JSON(http.StatusOK, rg) would.
func writeRange(c echo.Context, rg api.Range) error {
	if !fastJSONOK(c) || !plainJSONString(rg.Sequence) {
		return c.JSON(http.StatusOK, rg)
	}
	bp := rangeBufPool.Get().(*[]byte)
	b := appendRangeJSON((*bp)[:0], rg)
	err := c.Blob(http.StatusOK, echo.MIMEApplicationJSON, b)
	if cap(b) <= 1<<10 {
		*bp = b[:0]
		rangeBufPool.Put(bp)
	}
	return err
}

// fastJSONOK reports whether c.JSON would write compact JSON through echo's
// DefaultJSONSerializer: no Debug, no query (c.JSON indents on ?pretty; any
// query at all takes the slow path), the default serializer.
func fastJSONOK(c echo.Context) bool {
	e := c.Echo()
	if e.Debug || c.Request().URL.RawQuery != "" {
		return false
	}
	switch e.JSONSerializer.(type) {
	case *echo.DefaultJSONSerializer, echo.DefaultJSONSerializer:
		return true
	}
	return false
}

// plainJSONString reports whether encoding/json writes s as itself between
// quotes: printable ASCII without '"' and '\\', and without '<', '>' and
// '&', which a json.Encoder escapes by default.
func plainJSONString(s string) bool {
	for i := 0; i < len(s); i++ {
		switch b := s[i]; {
		case b < 0x20 || b > 0x7e:
			return false
		case b == '"' || b == '\\' || b == '<' || b == '>' || b == '&':
			return false
		}
	}
	return true
}

// appendRangeJSON appends rg as a json.Encoder writes it, newline included;
// rg.Sequence must be plainJSONString.
func appendRangeJSON(b []byte, rg api.Range) []byte {
	b = append(b, `{"sequence":"`...)
	b = append(b, rg.Sequence...)
	b = append(b, `","first":`...)
	b = strconv.AppendInt(b, rg.First, 10)
	b = append(b, `,"last":`...)
	b = strconv.AppendInt(b, rg.Last, 10)
	return append(b, "}\n"...)
}
