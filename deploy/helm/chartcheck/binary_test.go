package chartcheck

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

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
// serve`, `ticketd tls init` and `ticketd backup` is one this repository's
// binary has. The chart and the binary change in one repository; this
// catches a rename on either side.
func TestBinary_KnowsEveryRenderedFlag(t *testing.T) {
	bin := ticketdBin(t)
	serve := flagsOf(t, bin, "serve")
	tlsInit := flagsOf(t, bin, "tls", "init")
	backup := flagsOf(t, bin, "backup")
	for _, rcase := range matrix {
		vals, err := values(rcase.set)
		if err != nil {
			t.Fatal(err)
		}
		r, err := Render(chartT(t), vals, Release)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range r.Objects {
			var argv []string
			known := serve
			switch x := o.Obj.(type) {
			case *appsv1.StatefulSet:
				argv = x.Spec.Template.Spec.Containers[0].Args
			case *batchv1.Job:
				argv, known = x.Spec.Template.Spec.Containers[0].Args, tlsInit
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
}

// TestBinary_AcceptsTheInitHooksCommand runs the init hook's own command
// line outside a pod. ticketd checks every flag first (a bad one exits 2,
// a usage error) and only then looks for the Kubernetes API, which is not
// here (exit 1, naming KUBERNETES_SERVICE_HOST): so exit 1 with that
// message means the hook's command is one ticketd accepts.
func TestBinary_AcceptsTheInitHooksCommand(t *testing.T) {
	bin := ticketdBin(t)
	for _, set := range []string{"", "replicas=5,auth.existingSecret=tokens"} {
		vals, err := values(set)
		if err != nil {
			t.Fatal(err)
		}
		r, err := Render(chartT(t), vals, Release)
		if err != nil {
			t.Fatal(err)
		}
		o, err := r.Find("Job", "r-ticketd-init")
		if err != nil {
			t.Fatal(err)
		}
		argv := o.Obj.(*batchv1.Job).Spec.Template.Spec.Containers[0].Args
		var out bytes.Buffer
		c := exec.Command(bin, argv...)
		c.Stdout, c.Stderr = &out, &out
		c.Env = withoutEnv()
		err = c.Run()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(out.String(), "KUBERNETES_SERVICE_HOST") {
			t.Errorf("--set %q: ticketd %s: %v, want exit 1 for want of the Kubernetes API, after the flags passed:\n%s",
				set, strings.Join(argv, " "), err, out.String())
		}
	}
}
