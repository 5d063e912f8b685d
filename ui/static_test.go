package ui_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/ui"
)

// TestHandler_ServesThePageUnderItsPolicy checks the contract of the page's
// files without a browser: each is served with the strict policy, and none
// holds what that policy would block or what the page promises not to do
// (inline scripts or styles, another origin, HTML built from data, a token
// kept beyond the tab).
func TestHandler_ServesThePageUnderItsPolicy(t *testing.T) {
	srv := httptest.NewServer(ui.Handler())
	defer srv.Close()
	files := map[string]string{}
	for _, name := range []string{"index.html", "app.js", "style.css"} {
		resp, err := http.Get(srv.URL + "/ui/" + name)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /ui/%s: %d", name, resp.StatusCode)
		}
		csp := resp.Header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "default-src 'self'") || strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
			t.Errorf("GET /ui/%s: Content-Security-Policy %q", name, csp)
		}
		files[name] = string(body)
	}
	html := strings.ToLower(files["index.html"])
	for _, bad := range []string{"<style", " style=", " onclick=", " onload=", " onerror=", "javascript:", "http://", "https://", "//cdn"} {
		if strings.Contains(html, bad) {
			t.Errorf("index.html holds %q", bad)
		}
	}
	// Every script is a file of the page's own.
	for rest := html; strings.Contains(rest, "<script"); {
		rest = rest[strings.Index(rest, "<script"):]
		tag := rest[:strings.Index(rest, ">")+1]
		if !strings.Contains(tag, `src="app.js"`) {
			t.Errorf("index.html has a script that is not app.js: %s", tag)
		}
		rest = rest[len(tag):]
	}
	js := files["app.js"]
	for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "localStorage", "document.cookie", "eval(", "new Function", "http://", "https://"} {
		if strings.Contains(js, bad) {
			t.Errorf("app.js holds %q", bad)
		}
	}
	if strings.Contains(files["style.css"], "@import") || strings.Contains(files["style.css"], "url(") {
		t.Error("style.css loads something")
	}
}
