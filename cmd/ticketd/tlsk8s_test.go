package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/auth"
	"github.com/ticketd/ticketd/pki"
)

// secretsAPI is an API server's Secrets endpoints, the subset `tls init
// --k8s-secret` uses, as the API server answers them: GET, POST (201; 409
// AlreadyExists) and PUT (409 Conflict on a stale resourceVersion) under
// /api/v1/namespaces/NS/secrets, a Status object for every error, 401
// without the service account's token. Objects are kept as JSON objects,
// so fields the client does not know come back as they were stored.
type secretsAPI struct {
	t         *testing.T
	namespace string
	token     string
	mu        sync.Mutex
	objects   map[string]map[string]any
	version   int
	calls     []string // "GET name", "POST name", "PUT name"
	// forbid, if set, answers every request 403 as RBAC would.
	forbid bool
	// beforePut, if set, runs before a PUT is applied (a concurrent
	// writer).
	beforePut func()
}

func (a *secretsAPI) status(w http.ResponseWriter, code int, reason, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Failure",
		"message": msg, "reason": reason, "code": code})
}

func (a *secretsAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	prefix := "/api/v1/namespaces/" + a.namespace + "/secrets"
	if r.Header.Get("Authorization") != "Bearer "+a.token {
		a.status(w, 401, "Unauthorized", "Unauthorized")
		return
	}
	if a.forbid {
		a.status(w, 403, "Forbidden", `secrets is forbidden: User "system:serviceaccount:`+a.namespace+`:default" cannot get resource "secrets"`)
		return
	}
	if !strings.HasPrefix(r.URL.Path, prefix) {
		a.status(w, 404, "NotFound", "the server could not find the requested resource")
		return
	}
	name := strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, prefix), "/")
	a.mu.Lock()
	defer a.mu.Unlock()
	var body map[string]any
	if r.Method == http.MethodPost || r.Method == http.MethodPut {
		if ct := r.Header.Get("Content-Type"); ct != "application/json" {
			a.status(w, 415, "UnsupportedMediaType", "content type "+ct)
			return
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			a.status(w, 400, "BadRequest", err.Error())
			return
		}
		if body["kind"] != "Secret" || body["apiVersion"] != "v1" {
			a.status(w, 400, "BadRequest", fmt.Sprintf("want a v1 Secret, got %v %v", body["apiVersion"], body["kind"]))
			return
		}
		if _, err := decodeData(body); err != nil {
			a.status(w, 400, "BadRequest", err.Error())
			return
		}
	}
	switch {
	case r.Method == http.MethodGet && name != "":
		a.calls = append(a.calls, "GET "+name)
		obj, ok := a.objects[name]
		if !ok {
			a.status(w, 404, "NotFound", `secrets "`+name+`" not found`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(obj)
	case r.Method == http.MethodPost && name == "":
		meta, _ := body["metadata"].(map[string]any)
		n, _ := meta["name"].(string)
		a.calls = append(a.calls, "POST "+n)
		if _, ok := a.objects[n]; ok {
			a.status(w, 409, "AlreadyExists", `secrets "`+n+`" already exists`)
			return
		}
		a.store(n, body)
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(body)
	case r.Method == http.MethodPut && name != "":
		a.calls = append(a.calls, "PUT "+name)
		if a.beforePut != nil {
			a.beforePut()
		}
		old, ok := a.objects[name]
		if !ok {
			a.status(w, 404, "NotFound", `secrets "`+name+`" not found`)
			return
		}
		meta, _ := body["metadata"].(map[string]any)
		if meta["resourceVersion"] != old["metadata"].(map[string]any)["resourceVersion"] {
			a.status(w, 409, "Conflict", `Operation cannot be fulfilled on secrets "`+name+`": the object has been modified; please apply your changes to the latest version and try again`)
			return
		}
		a.store(name, body)
		_ = json.NewEncoder(w).Encode(body)
	default:
		a.status(w, 405, "MethodNotAllowed", r.Method+" "+r.URL.Path)
	}
}

// store keeps obj as name, with a new resourceVersion and the namespace
// set, as the API server does; a.mu is held.
func (a *secretsAPI) store(name string, obj map[string]any) {
	a.version++
	meta, _ := obj["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		obj["metadata"] = meta
	}
	meta["namespace"], meta["resourceVersion"] = a.namespace, strconv.Itoa(a.version)
	a.objects[name] = obj
}

// bump changes name's resourceVersion, as another writer would.
func (a *secretsAPI) bump(name string) {
	a.version++
	a.objects[name]["metadata"].(map[string]any)["resourceVersion"] = strconv.Itoa(a.version)
}

func decodeData(obj map[string]any) (map[string][]byte, error) {
	raw, err := json.Marshal(obj["data"])
	if err != nil {
		return nil, err
	}
	var data map[string][]byte
	if err := json.Unmarshal(raw, &data); err != nil {
		return nil, fmt.Errorf("data: %v", err)
	}
	return data, nil
}

// data is the Secret name's data as stored now.
func (a *secretsAPI) data(name string) map[string][]byte {
	a.t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	obj, ok := a.objects[name]
	if !ok {
		a.t.Fatalf("Secret %s does not exist", name)
	}
	d, err := decodeData(obj)
	if err != nil {
		a.t.Fatal(err)
	}
	return d
}

func (a *secretsAPI) takeCalls() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	c := a.calls
	a.calls = nil
	return c
}

// startSecretsAPI serves a secretsAPI over TLS and sets up this process as
// a pod that reaches it: KUBERNETES_SERVICE_HOST and _PORT, and a
// service-account directory, whose path it returns.
func startSecretsAPI(t *testing.T) (*secretsAPI, string) {
	a := &secretsAPI{t: t, namespace: "ns", token: "sa-token-0123456789", objects: map[string]map[string]any{}}
	ts := httptest.NewTLSServer(a)
	t.Cleanup(ts.Close)
	host, port, err := net.SplitHostPort(strings.TrimPrefix(ts.URL, "https://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBERNETES_SERVICE_HOST", host)
	t.Setenv("KUBERNETES_SERVICE_PORT", port)
	sa := t.TempDir()
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw})
	for name, b := range map[string][]byte{"token": []byte(a.token + "\n"), "ca.crt": caPEM, "namespace": []byte(a.namespace)} {
		if err := os.WriteFile(filepath.Join(sa, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return a, sa
}

// nodeCert is node id's certificate in data, checked to chain to the CA
// in data and to match its key.
func nodeCert(t *testing.T, data map[string][]byte, id string) *x509.Certificate {
	t.Helper()
	pair, err := tls.X509KeyPair(data[id+".pem"], data[id+"-key.pem"])
	if err != nil {
		t.Fatalf("%s: %v", id, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data["ca.pem"]) {
		t.Fatal("ca.pem holds no certificate")
	}
	leaf := pair.Leaf
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: id, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Fatalf("%s's certificate does not verify against ca.pem: %v", id, err)
	}
	return leaf
}

const (
	caSecret   = "r-ticketd-ca"
	tlsSecret  = "r-ticketd-tls"
	authSecret = "r-ticketd-auth"
)

// A first run makes the CA, the node certificates (each naming its own pod
// by the {id} template and the shared Service names, and nothing of the
// other pods) and the tokens; a second changes nothing; certificates close
// to expiry, or naming other hosts, and nodes added later are issued, and
// nothing else is touched: the CA, the tokens, the other nodes' pairs,
// and whatever else the Secret holds.
func TestTLSInitK8s_CreatesWhatIsMissing_RenewsWhatExpires(t *testing.T) {
	api, sa := startSecretsAPI(t)
	// The TLS Secret exists already, with a label, an annotation and a
	// key of someone else's: a replace must keep all three.
	api.mu.Lock()
	api.store(tlsSecret, map[string]any{"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
		"metadata": map[string]any{"name": tlsSecret, "labels": map[string]any{"team": "ids"}, "annotations": map[string]any{"note": "keep me"}},
		"data":     map[string]any{"extra": "aGVsbG8="}})
	api.mu.Unlock()

	ids := []string{"r-ticketd-0", "r-ticketd-1", "r-ticketd-2"}
	args := func(nodes []string, extra ...string) []string {
		return append([]string{"tls", "init", "--k8s-secret", tlsSecret, "--k8s-ca-secret", caSecret, "--k8s-auth-secret", authSecret,
			"--k8s-service-account-dir", sa, "--nodes", strings.Join(nodes, ","),
			"--dns", "{id}.r-ticketd-peers.ns.svc.cluster.local,r-ticketd.ns.svc", "--renew-before", "720h"}, extra...)
	}
	code, out, errs := runCLI(t, args(ids)...)
	if code != 0 {
		t.Fatalf("first run: exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{"created Secret ns/r-ticketd-ca", "issued r-ticketd-0.pem in Secret ns/r-ticketd-tls: it had none", "created Secret ns/r-ticketd-auth"} {
		if !strings.Contains(out, want) {
			t.Errorf("first run printed\n%s\nwithout %q", out, want)
		}
	}
	ca, tlsData, authData := api.data(caSecret), api.data(tlsSecret), api.data(authSecret)
	if _, err := pki.LoadCA(ca["ca.pem"], ca["ca-key.pem"]); err != nil {
		t.Fatalf("the CA Secret: %v", err)
	}
	if _, ok := tlsData["ca-key.pem"]; ok || !bytes.Equal(tlsData["ca.pem"], ca["ca.pem"]) {
		t.Fatalf("the TLS Secret has keys %v: want the CA's certificate and never its key", slices.Sorted(func(y func(string) bool) {
			for k := range tlsData {
				if !y(k) {
					return
				}
			}
		}))
	}
	certs := map[string]*x509.Certificate{}
	for _, id := range ids {
		c := nodeCert(t, tlsData, id)
		certs[id] = c
		want := []string{id, "localhost", id + ".r-ticketd-peers.ns.svc.cluster.local", "r-ticketd.ns.svc"}
		if !sameNames(c.DNSNames, want) {
			t.Errorf("%s names %q, want %q", id, c.DNSNames, want)
		}
	}
	if string(tlsData["extra"]) != "hello" {
		t.Errorf("the TLS Secret's own key extra became %q", tlsData["extra"])
	}
	api.mu.Lock()
	meta := api.objects[tlsSecret]["metadata"].(map[string]any)
	if meta["labels"].(map[string]any)["team"] != "ids" || meta["annotations"].(map[string]any)["note"] != "keep me" {
		t.Errorf("the replace lost the Secret's metadata: %v", meta)
	}
	api.mu.Unlock()
	toks, err := auth.Parse(bytes.NewReader(authData["tokens"]))
	if err != nil {
		t.Fatalf("the tokens Secret's tokens: %v", err)
	}
	admin, reserve := strings.TrimSpace(string(authData["admin.token"])), strings.TrimSpace(string(authData["reserve.token"]))
	allows := func(tok string, sc auth.Scope) bool { _, ok := toks.Check(tok, sc); return ok }
	if !allows(admin, auth.ScopeAdmin) || !allows(reserve, auth.ScopeReserve) || allows(reserve, auth.ScopeAdmin) || admin == reserve {
		t.Fatalf("admin.token and reserve.token do not have their scopes in tokens:\n%s", authData["tokens"])
	}
	api.takeCalls()

	// Again: everything is current, so nothing is written.
	code, out, errs = runCLI(t, args(ids)...)
	if code != 0 {
		t.Fatalf("second run: exit %d\n%s%s", code, out, errs)
	}
	for _, c := range api.takeCalls() {
		if !strings.HasPrefix(c, "GET ") {
			t.Errorf("a run with nothing to do called %s", c)
		}
	}

	// r-ticketd-1 expires in 5 days, r-ticketd-2 names another host; a
	// fourth node is added. Only those three are issued.
	caObj, err := pki.LoadCA(ca["ca.pem"], ca["ca-key.pem"])
	if err != nil {
		t.Fatal(err)
	}
	api.mu.Lock()
	stored := api.objects[tlsSecret]["data"].(map[string]any)
	old1, oldKey1, err := caObj.Issue(pki.CertOptions{CommonName: "r-ticketd-1", Usage: pki.Node, Now: time.Now().Add(-360 * 24 * time.Hour),
		DNSNames: []string{"r-ticketd-1", "localhost", "r-ticketd-1.r-ticketd-peers.ns.svc.cluster.local", "r-ticketd.ns.svc"},
		IPs:      []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}})
	if err != nil {
		api.mu.Unlock()
		t.Fatal(err)
	}
	stored["r-ticketd-1.pem"], stored["r-ticketd-1-key.pem"] = old1, oldKey1
	wrong2, wrongKey2, err := caObj.Issue(pki.CertOptions{CommonName: "r-ticketd-2", Usage: pki.Node, DNSNames: []string{"r-ticketd-2.old-namespace.svc"}})
	if err != nil {
		api.mu.Unlock()
		t.Fatal(err)
	}
	stored["r-ticketd-2.pem"], stored["r-ticketd-2-key.pem"] = wrong2, wrongKey2
	api.bump(tlsSecret)
	api.mu.Unlock()
	before := api.data(tlsSecret)

	more := append(slices.Clone(ids), "r-ticketd-3")
	code, out, errs = runCLI(t, args(more)...)
	if code != 0 {
		t.Fatalf("renewing run: exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{"issued r-ticketd-1.pem in Secret ns/r-ticketd-tls: it expires at", "within --renew-before 720h0m0s",
		"issued r-ticketd-2.pem in Secret ns/r-ticketd-tls: it named [r-ticketd-2.old-namespace.svc], not",
		"issued r-ticketd-3.pem in Secret ns/r-ticketd-tls: it had none", "kept r-ticketd-0 in Secret ns/r-ticketd-tls: current",
		"kept Secret ns/r-ticketd-auth"} {
		if !strings.Contains(out, want) {
			t.Errorf("renewing run printed\n%s\nwithout %q", out, want)
		}
	}
	after := api.data(tlsSecret)
	if !bytes.Equal(after["r-ticketd-0.pem"], before["r-ticketd-0.pem"]) || !bytes.Equal(after["r-ticketd-0-key.pem"], before["r-ticketd-0-key.pem"]) {
		t.Error("r-ticketd-0's current pair was replaced")
	}
	for _, id := range []string{"r-ticketd-1", "r-ticketd-2", "r-ticketd-3"} {
		c := nodeCert(t, after, id)
		if bytes.Equal(after[id+".pem"], before[id+".pem"]) || time.Until(c.NotAfter) < 300*24*time.Hour {
			t.Errorf("%s was not issued again (valid until %s)", id, c.NotAfter)
		}
	}
	if !bytes.Equal(api.data(caSecret)["ca-key.pem"], ca["ca-key.pem"]) || !bytes.Equal(api.data(authSecret)["tokens"], authData["tokens"]) {
		t.Error("the renewing run replaced the CA or the tokens")
	}
	if string(after["extra"]) != "hello" {
		t.Errorf("the TLS Secret's own key extra became %q", after["extra"])
	}
}

// What the API server refuses, and what this command cannot use, ends the
// run with an error that names the Secret and the cause.
func TestTLSInitK8s_FailuresNamed(t *testing.T) {
	base := func(sa string) []string {
		return []string{"tls", "init", "--k8s-secret", tlsSecret, "--k8s-ca-secret", caSecret, "--k8s-service-account-dir", sa, "--nodes", "n1"}
	}
	t.Run("forbidden", func(t *testing.T) {
		api, sa := startSecretsAPI(t)
		api.forbid = true
		code, _, errs := runCLI(t, base(sa)...)
		if code != 1 || !strings.Contains(errs, "read secret ns/r-ticketd-ca: 403 Forbidden") || !strings.Contains(errs, "Role granting get, create and update on secrets") {
			t.Fatalf("exit %d, %q", code, errs)
		}
	})
	t.Run("wrong token", func(t *testing.T) {
		api, sa := startSecretsAPI(t)
		api.token = "another-token"
		code, _, errs := runCLI(t, base(sa)...)
		if code != 1 || !strings.Contains(errs, "401 Unauthorized") || !strings.Contains(errs, "service-account token was refused") {
			t.Fatalf("exit %d, %q", code, errs)
		}
	})
	t.Run("not a CA", func(t *testing.T) {
		api, sa := startSecretsAPI(t)
		api.mu.Lock()
		api.store(caSecret, map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": caSecret}, "data": map[string]any{"tls.crt": "eA=="}})
		api.mu.Unlock()
		code, _, errs := runCLI(t, base(sa)...)
		if code != 1 || !strings.Contains(errs, "secret ns/r-ticketd-ca exists but has no ca.pem and ca-key.pem") {
			t.Fatalf("exit %d, %q", code, errs)
		}
	})
	t.Run("changed meanwhile", func(t *testing.T) {
		api, sa := startSecretsAPI(t)
		if code, out, errs := runCLI(t, base(sa)...); code != 0 {
			t.Fatalf("first run: exit %d\n%s%s", code, out, errs)
		}
		api.beforePut = func() { api.bump(tlsSecret) }
		code, _, errs := runCLI(t, append(base(sa), "--nodes", "n1,n2")...)
		if code != 1 || !strings.Contains(errs, "secret ns/r-ticketd-tls changed while this run updated it (409 Conflict): run again") {
			t.Fatalf("exit %d, %q", code, errs)
		}
	})
	t.Run("not in a pod", func(t *testing.T) {
		t.Setenv("KUBERNETES_SERVICE_HOST", "")
		code, _, errs := runCLI(t, base(t.TempDir())...)
		if code != 1 || !strings.Contains(errs, "KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set") {
			t.Fatalf("exit %d, %q", code, errs)
		}
	})
	t.Run("no service account", func(t *testing.T) {
		t.Setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
		t.Setenv("KUBERNETES_SERVICE_PORT", "1")
		code, _, errs := runCLI(t, base(t.TempDir())...)
		if code != 1 || !strings.Contains(errs, "token") || !strings.Contains(errs, "automountServiceAccountToken") {
			t.Fatalf("exit %d, %q", code, errs)
		}
	})
}

// Flags that do not fit together are refused before anything is asked.
func TestTLSInitK8s_BadFlagsNamed(t *testing.T) {
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--k8s-secret", "a", "--nodes", "n1"}, "--k8s-secret and --k8s-ca-secret go together"},
		{[]string{"--k8s-secret", "a", "--k8s-ca-secret", "a", "--nodes", "n1"}, "three different Secrets"},
		{[]string{"--k8s-secret", "a", "--k8s-ca-secret", "b", "--dir", "x", "--nodes", "n1"}, "--dir and --ca-key-dir are for files"},
		{[]string{"--k8s-secret", "a", "--k8s-ca-secret", "b", "--renew-before", "9000h", "--nodes", "n1"}, "not shorter than a certificate's lifetime"},
		{[]string{"--renew-before", "720h", "--nodes", "n1"}, "--renew-before works with --k8s-secret"},
		{[]string{"--k8s-auth-secret", "c", "--nodes", "n1"}, "--k8s-auth-secret works with --k8s-secret"},
		{[]string{"--dns", "{name}.peers", "--nodes", "n1"}, "the only placeholder is {id}"},
		{[]string{"--k8s-secret", "a", "--k8s-ca-secret", "b", "--nodes", "n/1"}, `"n/1" cannot name a key of a Secret`},
	} {
		t.Setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
		t.Setenv("KUBERNETES_SERVICE_PORT", "1")
		sa := t.TempDir()
		for _, f := range []string{"token", "ca.crt", "namespace"} {
			_ = os.WriteFile(filepath.Join(sa, f), []byte("x"), 0o600)
		}
		code, _, errs := runCLI(t, append([]string{"tls", "init", "--k8s-service-account-dir", sa}, c.args...)...)
		if code != 2 || !strings.Contains(errs, c.says) {
			t.Errorf("%q: exit %d, %q; want 2 saying %q", c.args, code, errs, c.says)
		}
	}
}

// In files, --dns '{id}...' gives each node its own name.
func TestTLSInitFiles_DNSTemplatePerNode(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := runCLI(t, "tls", "init", "--dir", dir, "--nodes", "a,b", "--dns", "{id}.peers.ns.svc,shared.ns.svc")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	data := map[string][]byte{}
	for _, f := range []string{"ca.pem", "a.pem", "a-key.pem", "b.pem", "b-key.pem"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		data[f] = b
	}
	for _, id := range []string{"a", "b"} {
		c := nodeCert(t, data, id)
		if want := []string{id, "localhost", id + ".peers.ns.svc", "shared.ns.svc"}; !sameNames(c.DNSNames, want) {
			t.Errorf("%s names %q, want %q", id, c.DNSNames, want)
		}
	}
}
