package chartcheck

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
)

// RepoRoot is the ticketd repository, whose binary the chart runs.
const RepoRoot = "../../.."

var built = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "chartcheck-ticketd-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "ticketd")
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, "./cmd/ticketd")
	cmd.Dir = RepoRoot
	// The repository builds with its own go.work; this module's GOWORK=off
	// is not for it. CGO off: the image's static binary.
	cmd.Env = append(withoutEnv("GOWORK", "CGO_ENABLED"), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", errors.New("go build ./cmd/ticketd: " + err.Error() + "\n" + string(out))
	}
	return bin, nil
})

func withoutEnv(names ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		drop := strings.HasPrefix(name, "TICKETD_") || strings.HasPrefix(name, "KUBERNETES_")
		for _, n := range names {
			drop = drop || name == n
		}
		if !drop {
			out = append(out, kv)
		}
	}
	return out
}

func ticketdBin(t *testing.T) string {
	t.Helper()
	bin, err := built()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// runBinary runs ticketd with argv outside any pod (no TICKETD_ or
// KUBERNETES_ variables) and returns its output and exit code (-1 when it
// did not exit by itself).
func runBinary(bin string, argv []string) (string, int, error) {
	var out bytes.Buffer
	c := exec.Command(bin, argv...)
	c.Stdout, c.Stderr = &out, &out
	c.Env = withoutEnv()
	err := c.Run()
	code := 0
	if err != nil {
		code = -1
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		}
	}
	return out.String(), code, err
}

// flagsOf lists the flags `ticketd <cmd> -h` prints (Go's flag package:
// "  -name value").
func flagsOf(t *testing.T, bin string, cmd ...string) map[string]bool {
	t.Helper()
	var out bytes.Buffer
	c := exec.Command(bin, append(cmd, "-h")...)
	c.Stdout, c.Stderr = &out, &out
	c.Env = withoutEnv()
	if err := c.Run(); err != nil {
		t.Fatalf("ticketd %s -h: %v\n%s", strings.Join(cmd, " "), err, out.String())
	}
	flags := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s+-([a-z0-9-]+)`).FindAllStringSubmatch(out.String(), -1) {
		flags[m[1]] = true
	}
	if len(flags) == 0 {
		t.Fatalf("ticketd %s -h lists no flags:\n%s", strings.Join(cmd, " "), out.String())
	}
	return flags
}

// unknownFlags returns the --flags of argv that the command does not know.
func unknownFlags(argv []string, known map[string]bool) []string {
	var bad []string
	for _, a := range argv {
		if !strings.HasPrefix(a, "--") {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !known[name] {
			bad = append(bad, a)
		}
	}
	return bad
}

// TestBinary_KnowsEveryRenderedFlag: every flag the chart gives `ticketd
// serve`, `ticketd tls init`, `ticketd members reconcile` and `ticketd
// backup` is one this repository's
// binary has. The chart and the binary change in one repository; this
// catches a rename on either side.
func TestBinary_KnowsEveryRenderedFlag(t *testing.T) {
	bin := ticketdBin(t)
	serve := flagsOf(t, bin, "serve")
	tlsInit := flagsOf(t, bin, "tls", "init")
	backup := flagsOf(t, bin, "backup")
	reconcile := flagsOf(t, bin, "members", "reconcile")
	sawReconcile := false
	for _, rcase := range matrix {
		r := renderT(t, rcase.set)
		for _, o := range r.Objects {
			var argv []string
			known := serve
			switch x := o.Obj.(type) {
			case *appsv1.StatefulSet:
				argv = x.Spec.Template.Spec.Containers[0].Args
			case *batchv1.Job:
				argv, known = x.Spec.Template.Spec.Containers[0].Args, tlsInit
				if o.Name() == "r-ticketd-reconcile" {
					known, sawReconcile = reconcile, true
				}
			case *batchv1.CronJob:
				argv, known = x.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Args, backup
			default:
				continue
			}
			if bad := unknownFlags(argv, known); len(bad) > 0 {
				t.Errorf("%s: %s/%s passes flags ticketd does not know: %v", rcase.name, o.Kind(), o.Name(), bad)
			}
		}
	}
	if !sawReconcile {
		t.Error("no case renders the reconcile Job")
	}
}

// TestBinary_AcceptsTheInitHooksCommand runs the init hook's own command
// line outside a pod. ticketd checks every flag first (a bad one exits 2,
// a usage error) and only then looks for the Kubernetes API, which is not
// here (exit 1, naming KUBERNETES_SERVICE_HOST): so exit 1 with that
// message means the hook's command is one ticketd accepts.
func TestBinary_AcceptsTheInitHooksCommand(t *testing.T) {
	bin := ticketdBin(t)
	for _, set := range []string{"", "replicas=5,auth.existingSecret=tokens"} {
		r := renderT(t, set)
		o, err := r.Find("Job", "r-ticketd-init")
		if err != nil {
			t.Fatal(err)
		}
		argv := o.Obj.(*batchv1.Job).Spec.Template.Spec.Containers[0].Args
		if out, code, err := runBinary(bin, argv); code != 1 || !strings.Contains(out, "KUBERNETES_SERVICE_HOST") {
			t.Errorf("--set %q: ticketd %s: %v, want exit 1 for want of the Kubernetes API, after the flags passed:\n%s",
				set, strings.Join(argv, " "), err, out)
		}
	}
}

// TestBinary_AcceptsTheReconcileHooksCommand runs the reconcile hook's own
// command line outside a pod, with two changes: the seeds' URLs point at a
// closed local port, and the token and CA paths at files made here (a
// missing file is a usage error, exit 2). ticketd checks every flag first
// (a bad one exits 2) and then looks for a leader until --timeout, which
// here finds none: exit 1 naming the address means the hook's command is
// one ticketd accepts.
func TestBinary_AcceptsTheReconcileHooksCommand(t *testing.T) {
	bin := ticketdBin(t)
	dir := t.TempDir()
	token, ca := filepath.Join(dir, "admin.token"), filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(token, []byte("t0ken\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ca, selfSignedPEM(t), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, set := range []string{"", "replicas=5", "tls.enabled=false,auth.existingSecret=tokens"} {
		r := renderT(t, set)
		o, err := r.Find("Job", "r-ticketd-reconcile")
		if err != nil {
			t.Fatal(err)
		}
		var argv []string
		seen := map[string]bool{}
		for _, a := range o.Obj.(*batchv1.Job).Spec.Template.Spec.Containers[0].Args {
			name, v, _ := strings.Cut(a, "=")
			seen[name] = true
			switch name {
			case "--addr":
				var urls []string
				for _, u := range strings.Split(v, ",") {
					scheme, _, _ := strings.Cut(u, "://")
					urls = append(urls, scheme+"://127.0.0.1:1")
				}
				a = "--addr=" + strings.Join(urls, ",")
			case "--timeout":
				a = "--timeout=2s"
			case "--token-file":
				a = "--token-file=" + token
			case "--ca":
				a = "--ca=" + ca
			}
			argv = append(argv, a)
		}
		for _, f := range []string{"--addr", "--timeout", "--token-file", "--replicas", "--id-prefix"} {
			if !seen[f] {
				t.Errorf("--set %q: the reconcile Job has no %s", set, f)
			}
		}
		if out, code, err := runBinary(bin, argv); code != 1 || !strings.Contains(out, "127.0.0.1:1") {
			t.Errorf("--set %q: ticketd %s: %v, want exit 1 for want of a reachable node, after the flags passed:\n%s",
				set, strings.Join(argv, " "), err, out)
		}
	}
}

// selfSignedPEM is a CA certificate for --ca to load.
func selfSignedPEM(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "chartcheck CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
