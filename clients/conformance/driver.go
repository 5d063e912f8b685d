package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ticketd/ticketd/internal/proc"
)

// driverProc is the running driver: one writer of commands, one reader that
// hands each answer line to the lane waiting for it.
type driverProc struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	errPath string
	ready   chan string   // the ready line
	gone    chan struct{} // stdout closed: no more answers
	exited  chan struct{} // the process was reaped
	waitErr error

	wmu sync.Mutex // one command is one whole write

	mu      sync.Mutex
	pending map[string]chan answer // by lane: the one command in flight
	stray   []string
}

type answer struct {
	line string
	at   time.Time
}

// startDriver runs path with the protocol's environment; its stderr goes to
// a file, printed when the run fails.
func startDriver(path string, args []string, dir string, env []string) (*driverProc, error) {
	errPath := filepath.Join(dir, "driver.stderr")
	ef, err := os.Create(errPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Env = append(proc.ChildEnv(), env...)
	cmd.Stderr = ef
	// Its own process group: a Ctrl-C of the harness is for the harness,
	// which then ends the driver itself.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		_ = ef.Close()
		return nil, fmt.Errorf("start driver %s: %w", path, err)
	}
	d := &driverProc{cmd: cmd, stdin: stdin, errPath: errPath, ready: make(chan string, 1),
		gone: make(chan struct{}), exited: make(chan struct{}), pending: map[string]chan answer{}}
	go d.read(stdout)
	go func() {
		d.waitErr = cmd.Wait()
		_ = ef.Close()
		close(d.exited)
	}()
	return d, nil
}

func (d *driverProc) read(r io.Reader) {
	defer close(d.gone)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	first := true
	for sc.Scan() {
		line, at := sc.Text(), time.Now()
		if first {
			first = false
			d.ready <- line
			continue
		}
		lane, _, _ := strings.Cut(line, " ")
		d.mu.Lock()
		ch, ok := d.pending[lane]
		delete(d.pending, lane)
		if !ok {
			d.stray = append(d.stray, line)
		}
		d.mu.Unlock()
		if ok {
			ch <- answer{line, at}
		}
	}
}

// waitReady waits for the `ready` line.
func (d *driverProc) waitReady(timeout time.Duration) (string, error) {
	select {
	case l := <-d.ready:
		if !strings.HasPrefix(l, "ready ") {
			return "", fmt.Errorf("driver's first line is %q, want ready <language> <version>", l)
		}
		return l, nil
	case <-d.gone:
		return "", errors.New("driver closed its stdout before ready")
	case <-time.After(timeout):
		return "", fmt.Errorf("no ready line within %v", timeout)
	}
}

// call sends one command of lane and waits up to wait for its answer. An
// event without Recv means no answer came (the lane must then stop: a late
// answer would be taken for the next command's).
func (d *driverProc) call(lane, line string, wait time.Duration) Event {
	ch := make(chan answer, 1)
	d.mu.Lock()
	d.pending[lane] = ch
	d.mu.Unlock()
	e := Event{Lane: lane, Line: line}
	d.wmu.Lock()
	e.Sent = time.Now()
	_, err := io.WriteString(d.stdin, line+"\n")
	d.wmu.Unlock()
	if err == nil {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case a := <-ch:
			e.Answer, e.Recv = a.line, a.at
			return e
		case <-d.gone:
			// The reader may have handed the answer over just before it ended.
			select {
			case a := <-ch:
				e.Answer, e.Recv = a.line, a.at
				return e
			default:
			}
		case <-t.C:
		}
	}
	d.mu.Lock()
	delete(d.pending, lane)
	d.mu.Unlock()
	return e
}

// finish closes stdin and waits up to timeout for the exit; it says how the
// driver ended ("exit 0" passes).
func (d *driverProc) finish(timeout time.Duration) string {
	_ = d.stdin.Close()
	select {
	case <-d.exited:
	case <-time.After(timeout):
		_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
		<-d.exited
		return fmt.Sprintf("still running %v after stdin was closed (killed)", timeout)
	}
	return describeExit(d.waitErr, d.cmd.ProcessState)
}

func describeExit(err error, st *os.ProcessState) string {
	if st == nil {
		return fmt.Sprintf("not run (%v)", err)
	}
	if st.Exited() {
		return fmt.Sprintf("exit %d", st.ExitCode())
	}
	return st.String()
}

// kill ends the driver at once (setup failures, interrupted runs).
func (d *driverProc) kill() {
	_ = d.stdin.Close()
	_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-d.exited:
	case <-time.After(5 * time.Second):
	}
}

func (d *driverProc) strays() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.stray...)
}

// stderrTail is the last n lines the driver wrote to stderr.
func (d *driverProc) stderrTail(n int) string {
	b, _ := os.ReadFile(d.errPath)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
