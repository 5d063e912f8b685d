package httpapi_test

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/httpapi"
)

func TestRequestID_KeptOrMadeAndEchoed(t *testing.T) {
	h := httpapi.New(httpapi.Config{Store: &stubStore{}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}).Handler()
	made := regexp.MustCompile(`^[0-9a-f]{16}$`)
	do := func(path, id string) string {
		t.Helper()
		req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader([]byte(`{"count":3}`)))
		if id != "" {
			req.Header.Set(httpapi.RequestIDHeader, id)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w.Header().Get(httpapi.RequestIDHeader)
	}
	for _, path := range []string{"/v1/sequences/s/ranges", "/no/such/route"} {
		for _, id := range []string{"a", "client-chosen id", strings.Repeat("x", 64)} {
			if got := do(path, id); got != id {
				t.Errorf("%s: incoming id %q answered as %q", path, id, got)
			}
		}
		a, b, long := do(path, ""), do(path, ""), do(path, strings.Repeat("y", 65))
		for _, got := range []string{a, b, long} {
			if !made.MatchString(got) {
				t.Errorf("%s: made id %q is not 16 lowercase hex digits", path, got)
			}
		}
		if a == b || a == long || b == long {
			t.Errorf("%s: made ids repeat: %q %q %q", path, a, b, long)
		}
	}
}
