// Package proc runs one ticketd process for the harnesses that drive the
// real binary: the e2e tests (e2e/) and the fault-injection suite (jepsen/).
// Both need the same few things, so they live here once (issue #12): build
// the binary, start it with a clean environment and its output in a log
// file, signal it, wait for it to exit with a bound, and say how it ended.
//
// What stays with the callers is what differs between them: e2e's node and
// cluster types and their HTTP probes, jepsen's backends and network
// namespaces. A caller that wants a process inside a namespace passes the
// wrapper command as Spec.Prefix; proc knows nothing of namespaces.
//
// proc imports only the standard library, so that the jepsen module, which
// imports it through a replace of the root module, gains no dependency.
package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Spec describes one run of a process.
type Spec struct {
	// Prefix is a wrapper command run in front of Path, such as
	// {"ip", "netns", "exec", "ns1"}. The wrapper must exec Path (as
	// `ip netns exec` does) so that the PID, and every signal sent to it,
	// is the process's own.
	Prefix []string
	Path   string   // the binary
	Args   []string // the command line after the binary
	// Env is added to ChildEnv(): what the run sets on purpose, on top of
	// an environment from which the caller's TICKETD_ settings are gone.
	Env []string
	Dir string // working directory; "" is the caller's
	// Log is the file that takes stdout and stderr; it is created (with
	// its folder) and truncated. A file rather than a buffer: the callers
	// read a run's output after the process is gone, print it when a test
	// fails, or keep it with a report.
	Log string
	// Header writes "# Path Args..." as the log's first line, so that a log
	// kept with a report says what ran.
	Header bool
	// OwnGroup puts the process in a process group of its own, so that a
	// Ctrl-C of the harness does not reach it: the harness stops it itself.
	OwnGroup bool
}

// Process is one started process. Its methods may be called from any
// goroutine.
type Process struct {
	cmd   *exec.Cmd
	log   string
	done  chan struct{}
	state *os.ProcessState // set before done is closed
}

// ErrTimeout: the process did not exit in time.
var ErrTimeout = errors.New("did not exit")

// Start starts the process described by s. On Linux the process is sent
// SIGKILL if the harness dies (Pdeathsig), so a crashed test leaves no node
// behind holding ports and data dirs.
func Start(s Spec) (*Process, error) {
	if s.Path == "" || s.Log == "" {
		return nil, errors.New("proc: Spec needs Path and Log")
	}
	if err := os.MkdirAll(filepath.Dir(s.Log), 0o755); err != nil {
		return nil, err
	}
	f, err := os.Create(s.Log)
	if err != nil {
		return nil, err
	}
	argv := append(append(append([]string(nil), s.Prefix...), s.Path), s.Args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(ChildEnv(), s.Env...)
	cmd.Dir = s.Dir
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = sysProcAttr(s.OwnGroup)
	if s.Header {
		fmt.Fprintf(f, "# %s %s\n", s.Path, strings.Join(s.Args, " "))
	}
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return nil, err
	}
	p := &Process{cmd: cmd, log: s.Log, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		_ = f.Close()
		p.state = cmd.ProcessState
		close(p.done)
	}()
	return p, nil
}

// Pid is the process's id (of the Prefix command when the Spec has one).
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Signal sends sig to the process; it fails once the process has exited.
func (p *Process) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// Done is closed once the process has exited and been reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// Alive reports whether the process has not exited yet. A stopped
// (SIGSTOP) process is alive.
func (p *Process) Alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Wait waits up to timeout for the process to exit; the error wraps
// ErrTimeout if it is still running. It does not kill it: whether to
// escalate is the caller's choice.
func (p *Process) Wait(timeout time.Duration) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-p.done:
		return nil
	case <-t.C:
		return fmt.Errorf("%w within %v", ErrTimeout, timeout)
	}
}

// State is how the process ended, nil while it runs. Its String is e.g.
// "exit status 2" or "signal: killed".
func (p *Process) State() *os.ProcessState {
	select {
	case <-p.done:
		return p.state
	default:
		return nil
	}
}

// LogPath is the file of this run's output.
func (p *Process) LogPath() string { return p.log }

// Log is this run's output so far ("" if the file cannot be read).
func (p *Process) Log() string {
	b, _ := os.ReadFile(p.log)
	return string(b)
}

// Tail is the last n lines of this run's output (all of them if n <= 0),
// for printing the end of a node's log when a test fails.
func (p *Process) Tail(n int) []string {
	s := strings.TrimRight(p.Log(), "\n")
	if s == "" {
		return nil
	}
	lines := strings.Split(s, "\n")
	if n > 0 && len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines
}

// ChildEnv is this process's environment without any TICKETD_ variable, so
// that a developer's settings cannot leak into the nodes: a node gets only
// what its harness sets.
func ChildEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TICKETD_") {
			env = append(env, kv)
		}
	}
	return env
}

// FreeAddrs returns k distinct 127.0.0.1:port addresses that were free a
// moment ago. Another process may take one before the node binds it, so a
// caller that cannot tolerate that retries the start (e2e does, on "address
// already in use").
func FreeAddrs(k int) ([]string, error) {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			_ = ln.Close()
		}
	}()
	out := make([]string, 0, k)
	for range k {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		lns = append(lns, ln)
		out = append(out, ln.Addr().String())
	}
	return out, nil
}

// ModuleRoot finds the directory of ticketd's root go.mod from the working
// directory up, so that the harnesses work from any folder of the
// repository (go test runs e2e in e2e/, the suite runs from anywhere).
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.Contains(string(b), "module github.com/ticketd/ticketd\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("run from inside the ticketd repository (no go.mod of github.com/ticketd/ticketd found above the working directory)")
		}
		dir = parent
	}
}

// Build builds ./cmd/ticketd of the module at root into out, with the
// given build tags (e.g. ticketd_faults), as a normal binary: the race
// detector of a test run is not passed on, so the nodes run at their speed.
func Build(ctx context.Context, root, out string, tags ...string) error {
	args := []string{"build", "-o", out}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	// The release, as scripts/version-ldflags.sh stamps it: git describe of
	// the checkout, when it is one. (The linker ignores -X for a variable an
	// older commit does not have.)
	describe := exec.CommandContext(ctx, "git", "-C", root, "describe", "--tags", "--always", "--dirty")
	if v, err := describe.Output(); err == nil && len(bytes.TrimSpace(v)) > 0 {
		args = append(args, "-ldflags", "-X github.com/ticketd/ticketd/internal/buildinfo.version="+string(bytes.TrimSpace(v)))
	}
	args = append(args, "./cmd/ticketd")
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	if o, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, o)
	}
	return nil
}
