// Package rehearsal runs the chart's pods without Kubernetes (issue 43,
// DESIGN.md §4.3): real ticketd processes started from the rendered
// StatefulSet's own args and env, each in a network namespace of its own
// (a pod's), named by the pods' DNS names through a hosts file, with a
// kubelet's probes, a Service that routes to Ready pods, and a controller
// that does what the StatefulSet controller and the chart's hook Job do.
// The Go SDK loads the cluster through the client Service all along, and
// the test checks that no ID was handed out twice, that no call waited past
// the SDK's bound and that none failed.
//
// It needs root (network namespaces) and is off unless TICKETD_REHEARSAL=1;
// scripts/helm-check.sh turns it on.
package rehearsal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"
)

const (
	enableEnv = "TICKETD_REHEARSAL"
	// inHubEnv marks the test binary re-run inside the hub namespace.
	inHubEnv = "TICKETD_REHEARSAL_IN_HUB"
	// binEnv names the ticketd binary built for the pods.
	binEnv = "TICKETD_REHEARSAL_BIN"
)

// TestMain runs the package again inside the hub network namespace when
// the rehearsal is on: the whole test process then lives where a pod of the
// cluster would, resolving names through the hub's hosts file (Go reads
// /etc/hosts, and `ip netns exec` mounts /etc/netns/<ns>/hosts there), so
// its SDK, its probes and its Service proxy reach the pods' addresses with
// no code of their own for namespaces.
func TestMain(m *testing.M) {
	if os.Getenv(enableEnv) != "1" || os.Getenv(inHubEnv) != "" {
		os.Exit(m.Run())
	}
	os.Exit(runInHub())
}

func runInHub() int {
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "rehearsal: "+enableEnv+"=1 needs root (it makes network namespaces)")
		return 1
	}
	for _, tool := range []string{"ip", "mount", "chroot"} {
		if _, err := exec.LookPath(tool); err != nil {
			fmt.Fprintf(os.Stderr, "rehearsal: %s not found (Debian: iproute2, mount, coreutils)\n", tool)
			return 1
		}
	}
	// Built out here: inside the hub there is no route to the module proxy.
	dir, err := os.MkdirTemp("", "rehearsal-ticketd-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "rehearsal:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin := dir + "/ticketd"
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "./cmd/ticketd")
	build.Dir = "../../../.."
	build.Env = append(os.Environ(), "GOWORK=", "CGO_ENABLED=0") // the image's static binary
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "rehearsal: go build ./cmd/ticketd: %v\n%s", err, out)
		return 1
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "rehearsal:", err)
		return 1
	}
	removeLeftovers()
	defer removeLeftovers()
	if err := makeHub(); err != nil {
		fmt.Fprintln(os.Stderr, "rehearsal:", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", hubNS, os.Args[0]}, os.Args[1:]...)...)
	cmd.Env = append(os.Environ(), inHubEnv+"=1", binEnv+"="+bin)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.WaitDelay = 10 * time.Second
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit) && exit.ExitCode() > 0:
		return exit.ExitCode()
	default:
		fmt.Fprintln(os.Stderr, "rehearsal: the run inside the hub namespace:", err)
		return 1
	}
}
