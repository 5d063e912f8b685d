package sdktest

import (
	"errors"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/api"
	"github.com/ticketd/ticketd/client"
	"github.com/ticketd/ticketd/internal/testcluster"
	"github.com/ticketd/ticketd/internal/testkit"
)

// normalizing is what curl and many proxies do to a request before it
// reaches a server: it resolves the dot segments "." and ".." spelt as
// such (RFC 3986, section 5.2.4) and leaves percent-encoded ones alone. It
// records every request's method and path as the SDK sent them.
type normalizing struct {
	next http.RoundTripper
	mu   sync.Mutex
	sent []string
}

func (n *normalizing) RoundTrip(r *http.Request) (*http.Response, error) {
	n.mu.Lock()
	n.sent = append(n.sent, r.Method+" "+r.URL.EscapedPath())
	n.mu.Unlock()
	if resolved := path.Clean(r.URL.EscapedPath()); resolved != r.URL.EscapedPath() {
		p, err := url.PathUnescape(resolved)
		if err != nil {
			return nil, err
		}
		r = r.Clone(r.Context())
		r.URL.Path, r.URL.RawPath = p, resolved
	}
	return n.next.RoundTrip(r)
}

func TestSDK_DotNames_CreationRefusedBeforeSending(t *testing.T) {
	tc := testcluster.New(t, 1, nil)
	l := tc.Leader(10 * time.Second)
	tr := &normalizing{next: http.DefaultTransport}
	c := newClient(t, []string{tc.URL(l)}, client.WithHTTPClient(&http.Client{Transport: tr}))
	ctx := ctxFor(t, 20*time.Second)
	for _, name := range []string{".", ".."} {
		_, _, err := c.CreateSequence(ctx, name, client.SequenceSettings{})
		if !errors.Is(err, client.ErrInvalidArgument) || !strings.Contains(err.Error(), "dot segment") {
			t.Errorf("CreateSequence(%q) = %v; want ErrInvalidArgument naming the dot segment", name, err)
		}
		_, _, err = c.CreateNamespace(ctx, name, api.NamespaceRequest{})
		if !errors.Is(err, client.ErrInvalidArgument) || !strings.Contains(err.Error(), "dot segment") {
			t.Errorf("CreateNamespace(%q) = %v; want ErrInvalidArgument naming the dot segment", name, err)
		}
	}
	for _, line := range tr.sent {
		if strings.HasPrefix(line, "PUT ") {
			t.Errorf("a refused creation reached the server: %s", line)
		}
	}
	if seqs, err := c.Sequences(ctx); err != nil || len(seqs) != 0 {
		t.Fatalf("Sequences = %+v, %v; want none", seqs, err)
	}
}

func TestSDK_DotNames_ExistingOnesReachedThroughANormalizingHop(t *testing.T) {
	tc := testcluster.New(t, 1, nil)
	l := tc.Leader(10 * time.Second)
	kit := testkit.Client{HTTP: http.DefaultClient, Timeout: 20 * time.Second}
	if r := kit.MustCall(t, http.MethodPost, tc.URL(l)+"/v1/restore?advance=1", testkit.LegacyDotNamesBackup(t)); r.Status != http.StatusNoContent {
		t.Fatalf("restore: status %d: %s", r.Status, r.Body)
	}
	tr := &normalizing{next: http.DefaultTransport}
	c := newClient(t, []string{tc.URL(l)}, client.WithHTTPClient(&http.Client{Transport: tr}))
	ctx := ctxFor(t, 30*time.Second)

	for _, name := range []string{".", ".."} {
		r, err := c.Reserve(ctx, name, 3)
		if err != nil || r.Len() != 3 {
			t.Fatalf("Reserve(%q) = %+v, %v", name, r, err)
		}
		info, err := c.SequenceInfo(ctx, name)
		if err != nil || info.Name != name {
			t.Fatalf("SequenceInfo(%q) = %+v, %v", name, info, err)
		}
		res, err := c.RaiseSequence(ctx, name, 1<<40)
		if err != nil || !res.Raised || res.Sequence.Name != name {
			t.Fatalf("RaiseSequence(%q) = %+v, %v", name, res, err)
		}
		seq := c.Sequence(name)
		id, err := seq.Next(ctx)
		if err != nil || id <= 1<<40 {
			t.Fatalf("Sequence(%q).Next = %d, %v; want an ID above the raise to 2^40", name, id, err)
		}
	}
	if _, err := c.Leases(ctx, "."); err != nil {
		t.Fatalf("Leases(.): %v", err)
	}
	g := newSnowflake(t, c, ".")
	if _, err := g.Next(ctx); err != nil {
		t.Fatalf("Snowflake(.).Next: %v", err)
	}

	// Every request left the SDK with the dot segments escaped, so that the
	// hop passed them on.
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for _, line := range tr.sent {
		if strings.Contains(line, "/./") || strings.Contains(line, "/../") || strings.HasSuffix(line, "/.") || strings.HasSuffix(line, "/..") {
			t.Errorf("the SDK sent a dot segment as is: %s", line)
		}
	}
	if len(tr.sent) < 8 {
		t.Fatalf("only %d requests recorded: %q", len(tr.sent), tr.sent)
	}
}
