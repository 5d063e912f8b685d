package httpapi

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/ticketd/ticketd/api"
)

// answer is what a handler leaves behind: what the client gets, and the
// status and size that observe reads.
type answer struct {
	code   int
	header http.Header
	body   []byte
	status int
	size   int64
}

func answerOf(t *testing.T, debug bool, target, contentType string, write func(echo.Context) error) answer {
	t.Helper()
	e := echo.New()
	e.Debug = debug
	rec := httptest.NewRecorder()
	c := e.NewContext(httptest.NewRequest(http.MethodPost, target, nil), rec)
	if contentType != "" {
		c.Response().Header().Set(echo.HeaderContentType, contentType)
	}
	if err := write(c); err != nil {
		t.Fatal(err)
	}
	return answer{rec.Code, rec.Header(), rec.Body.Bytes(), c.Response().Status, c.Response().Size}
}

func TestWriteRangeMatchesJSON(t *testing.T) {
	names := []string{"a", "orders", "A.b_c-9", strings.Repeat("z", api.MaxSequenceNameLen),
		"sp ace", "tilde~", `quo"te`, `back\slash`, "<tag>", "a&b", "tab\t", "nul\x00", "é", "\u2028", "\xff"}
	values := []int64{1, 2, 9, 10, 1000, 1 << 31, 1<<53 + 1, math.MaxInt64 - 1, math.MaxInt64, 0, -1, math.MinInt64}
	setups := []struct {
		name        string
		debug       bool
		target      string
		contentType string
		fast        bool // the fast path may serve it
	}{
		{"plain", false, "/v1/sequences/x/ranges", "", true},
		{"pretty", false, "/v1/sequences/x/ranges?pretty", "", false},
		{"other_query", false, "/v1/sequences/x/ranges?a=1", "", false},
		{"debug", true, "/v1/sequences/x/ranges", "", false},
		{"content_type_set", false, "/v1/sequences/x/ranges", "text/plain", true},
	}
	fastSeen := 0
	for _, s := range setups {
		for _, name := range names {
			for _, first := range values {
				for _, last := range []int64{first, math.MaxInt64, 1} {
					rg := api.Range{Sequence: name, First: first, Last: last}
					got := answerOf(t, s.debug, s.target, s.contentType, func(c echo.Context) error {
						if fastJSONOK(c) && plainJSONString(name) {
							if !s.fast {
								t.Errorf("%s: the fast path would serve %+v", s.name, rg)
							}
							fastSeen++
						}
						return writeRange(c, rg)
					})
					want := answerOf(t, s.debug, s.target, s.contentType, func(c echo.Context) error {
						return c.JSON(http.StatusOK, rg)
					})
					if !reflect.DeepEqual(got, want) {
						t.Errorf("%s %+v:\n got %d %v %q (status %d size %d)\nwant %d %v %q (status %d size %d)", s.name, rg,
							got.code, got.header, got.body, got.status, got.size, want.code, want.header, want.body, want.status, want.size)
					}
				}
			}
		}
	}
	// Not a comparison of c.JSON with itself: the plain names took the
	// fast path.
	if want := 2 * 6 * len(values) * 3; fastSeen < want {
		t.Errorf("the fast path served %d answers, want at least %d", fastSeen, want)
	}
}

// FuzzRangeJSON compares appendRangeJSON with encoding/json (a json.Encoder
// is json.Marshal plus "\n") for every name plainJSONString lets through,
// and for the name with the bytes it refuses taken out.
func FuzzRangeJSON(f *testing.F) {
	f.Add("orders", int64(1), int64(1000))
	f.Add("a", int64(math.MaxInt64), int64(math.MaxInt64))
	f.Add("x<y>&\"\\", int64(math.MinInt64), int64(0))
	f.Add("é\u2028\x00\x7f", int64(-1), int64(10))
	f.Fuzz(func(t *testing.T, name string, first, last int64) {
		var kept []byte
		for i := 0; i < len(name); i++ {
			if plainJSONString(name[i : i+1]) {
				kept = append(kept, name[i])
			}
		}
		for _, n := range []string{name, string(kept)} {
			rg := api.Range{Sequence: n, First: first, Last: last}
			want, err := json.Marshal(rg)
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, '\n')
			if !plainJSONString(n) {
				if n == string(kept) {
					t.Fatalf("plainJSONString(%q) is false for a name of bytes it takes one by one", n)
				}
				continue
			}
			if got := appendRangeJSON(nil, rg); !bytes.Equal(got, want) {
				t.Fatalf("appendRangeJSON(%+v) = %q, encoding/json %q", rg, got, want)
			}
		}
	})
}
