//go:build linux

package main

import (
	"context"
	"fmt"

	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// procBackend runs nodes as local processes of the built binary: each in
// its slot's network namespace (netns mode) or on 127.0.0.1 with ports of
// its own (loopback mode, no network faults).
type procBackend struct {
	cfg     *config
	bin     string
	dir     string // run folder
	fab     *fabric
	lock    *os.File
	loopEnv []int // loopback mode: the first of each slot's two ports
}

type procState struct {
	cmd     *exec.Cmd
	done    chan struct{}
	logs    []string
	dataDir string
}

func newProcBackend(cfg *config) (*procBackend, error) {
	b := &procBackend{cfg: cfg, dir: cfg.Out}
	lock, err := lockRun()
	if err != nil {
		return nil, err
	}
	b.lock = lock
	mode := cfg.Net
	if mode == "auto" {
		mode = "netns"
		if os.Geteuid() != 0 {
			mode = "loopback"
		}
	}
	if mode == "netns" {
		if err := cleanupStaleNetns(); err != nil {
			fmt.Fprintf(os.Stderr, "jepsen: removing stale namespaces: %v\n", err)
		}
		fab, err := newFabric()
		if err != nil {
			if cfg.Net == "netns" {
				lock.Close()
				return nil, fmt.Errorf("cannot create network namespaces (needs root, iproute2 and a kernel with netns, veth and bridge): %w", err)
			}
			fmt.Fprintf(os.Stderr, "jepsen: WARNING: network namespaces unavailable (%v); falling back to loopback: network nemeses are skipped\n", err)
			mode = "loopback"
		} else {
			b.fab = fab
		}
	}
	cfg.Net = mode
	return b, nil
}

func (b *procBackend) name() string {
	if b.fab != nil {
		return "processes in per-node network namespaces (" + subnet + ".0/24)"
	}
	return "processes on 127.0.0.1 (no network faults)"
}

func (b *procBackend) prepare(ctx context.Context) error {
	if b.cfg.Bin != "" {
		b.bin = b.cfg.Bin
		return nil
	}
	name := "ticketd"
	args := []string{"build", "-o"}
	if b.cfg.faultsBuild() {
		name = "ticketd-faults"
	}
	out := filepath.Join(b.cfg.root, "build", "jepsen", name)
	args = append(args, out)
	if b.cfg.faultsBuild() {
		args = append(args, "-tags", "ticketd_faults")
	}
	args = append(args, "./cmd/ticketd")
	cctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(cctx, "go", args...)
	cmd.Dir = b.cfg.root
	if o, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, o)
	}
	b.bin = out
	return nil
}

func (b *procBackend) newNode(slot int, id string, boot bootMode) (*Node, error) {
	n := &Node{Slot: slot, ID: id, Boot: boot, proc: &procState{dataDir: filepath.Join(b.dir, "data", id)}}
	if b.fab != nil {
		if err := b.fab.addSlot(slot); err != nil {
			return nil, err
		}
		n.Host = slotIP(slot)
	} else {
		for len(b.loopEnv) <= slot {
			p, err := freePortPair()
			if err != nil {
				return nil, err
			}
			b.loopEnv = append(b.loopEnv, p)
		}
		n.Host = "127.0.0.1"
	}
	if err := b.ensureCert(n); err != nil {
		return nil, err
	}
	return n, nil
}

// ensureCert makes the node's Raft certificate (for its address) with the
// binary's own `ticketd tls init`: the nodes run mutual TLS on the Raft
// port, as in production. One CA per run; its key stays out of the nodes'
// certificate folder.
func (b *procBackend) ensureCert(n *Node) error {
	if b.bin == "" {
		return fmt.Errorf("certificate for %s: the binary is not built yet", n.ID)
	}
	out, err := exec.Command(b.bin, "tls", "init", "--dir", b.tlsDir(), "--ca-key-dir", filepath.Join(b.dir, "tls-ca"),
		"--nodes", n.ID, "--ip", n.Host, "--loopback=false").CombinedOutput()
	if err != nil {
		return fmt.Errorf("ticketd tls init for %s: %v\n%s", n.ID, err, out)
	}
	return nil
}

func (b *procBackend) tlsDir() string { return filepath.Join(b.dir, "tls") }

func (b *procBackend) tlsArgs(n *Node) []string {
	d := b.tlsDir()
	return []string{"--raft-tls-cert", filepath.Join(d, n.ID+".pem"), "--raft-tls-key", filepath.Join(d, n.ID+"-key.pem"),
		"--raft-tls-ca", filepath.Join(d, "ca.pem")}
}

// freePortPair finds two consecutive free ports on 127.0.0.1.
func freePortPair() (int, error) {
	for i := 0; i < 100; i++ {
		l1, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		p := l1.Addr().(*net.TCPAddr).Port
		l2, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p+1))
		l1.Close()
		if err == nil {
			l2.Close()
			return p, nil
		}
	}
	return 0, fmt.Errorf("no two consecutive free ports on 127.0.0.1")
}

func (b *procBackend) ports(n *Node) (httpPort, raftPort int) {
	if b.fab != nil {
		return 8080, 8090
	}
	return b.loopEnv[n.Slot], b.loopEnv[n.Slot] + 1
}

func (b *procBackend) raftAddr(n *Node) string {
	_, r := b.ports(n)
	return fmt.Sprintf("%s:%d", n.Host, r)
}

func (b *procBackend) httpAdvertise(n *Node) string { return b.apiHostPort(n) }

func (b *procBackend) apiHostPort(n *Node) string {
	h, _ := b.ports(n)
	return fmt.Sprintf("%s:%d", n.Host, h)
}

func (b *procBackend) start(ctx context.Context, n *Node, initial string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.running {
		return fmt.Errorf("%s is running", n.ID)
	}
	st := n.proc
	if err := os.MkdirAll(st.dataDir, 0o755); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(b.dir, "logs"), 0o755); err != nil {
		return err
	}
	args := []string{"serve", "--id", n.ID, "--data-dir", st.dataDir,
		"--http-addr", b.apiHostPort(n), "--raft-addr", b.raftAddr(n)}
	switch n.Boot {
	case bootInitial:
		args = append(args, "--initial-cluster", initial)
	case bootJoin:
		args = append(args, "--join", strings.Join(n.JoinURLs, ","))
	}
	args = append(args, b.tlsArgs(n)...)
	args = append(args, b.cfg.timingArgs()...)
	logPath := filepath.Join(b.dir, "logs", fmt.Sprintf("%s.run%d.log", n.ID, len(st.logs)+1))
	f, err := os.Create(logPath)
	if err != nil {
		return err
	}
	var cmd *exec.Cmd
	if b.fab != nil {
		// `ip netns exec` execs the binary: the PID is ticketd's own, so
		// signals reach it directly.
		cmd = exec.Command("ip", append([]string{"netns", "exec", slotNS(n.Slot), b.bin}, args...)...)
	} else {
		cmd = exec.Command(b.bin, args...)
	}
	cmd.Env = append(childEnv(), "TICKETD_TOKENS="+b.cfg.tokensEnv())
	cmd.Stdout, cmd.Stderr = f, f
	// Own process group (a Ctrl-C of the harness is not sent to the nodes;
	// the harness stops them itself) and SIGKILL if the harness dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	fmt.Fprintf(f, "# %s %s\n", b.bin, strings.Join(args, " "))
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("start %s: %w", n.ID, err)
	}
	done := make(chan struct{})
	st.cmd, st.done = cmd, done
	st.logs = append(st.logs, logPath)
	n.running, n.paused = true, false
	n.starts++
	go func() {
		_ = cmd.Wait()
		_ = f.Close()
		n.mu.Lock()
		if st.done == done {
			n.running = false
		}
		n.mu.Unlock()
		close(done)
	}()
	return nil
}

// childEnv is the harness's environment without TICKETD_ variables, so a
// developer's settings cannot leak into the nodes.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TICKETD_") {
			env = append(env, kv)
		}
	}
	return env
}

func (b *procBackend) signal(n *Node, sig syscall.Signal) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.running || n.proc.cmd == nil {
		return fmt.Errorf("%s is not running", n.ID)
	}
	if err := n.proc.cmd.Process.Signal(sig); err != nil {
		return err
	}
	switch sig {
	case syscall.SIGSTOP:
		n.paused = true
	case syscall.SIGCONT:
		n.paused = false
	}
	return nil
}

func (b *procBackend) waitExit(n *Node, timeout time.Duration) error {
	n.mu.Lock()
	done := n.proc.done
	n.mu.Unlock()
	if done == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("%s did not exit within %v", n.ID, timeout)
	}
}

func (b *procBackend) alive(n *Node) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.running
}

func (b *procBackend) wipe(n *Node) error {
	if b.alive(n) {
		return fmt.Errorf("wipe %s: still running", n.ID)
	}
	n.mu.Lock()
	n.wiped = true
	n.mu.Unlock()
	return os.RemoveAll(n.proc.dataDir)
}

func (b *procBackend) netns(n *Node) (string, error) {
	if b.fab == nil {
		return "", errNoNetFaults
	}
	return nsPath(slotNS(n.Slot)), nil
}

func (b *procBackend) nodeIP(n *Node) (string, error) {
	if b.fab == nil {
		return "", errNoNetFaults
	}
	return n.Host, nil
}

func (b *procBackend) iface() string { return "eth0" }

func (b *procBackend) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if b.fab != nil {
		return b.fab.dial(ctx, network, addr)
	}
	return loopbackDial(ctx, network, addr)
}

// collectLogs: process logs are written into the run folder directly.
func (b *procBackend) collectLogs(dir string, nodes []*Node) {}

func (b *procBackend) teardown() {
	if b.fab != nil {
		b.fab.teardown()
	}
	if !b.cfg.KeepData {
		_ = os.RemoveAll(filepath.Join(b.dir, "data"))
	}
	if b.lock != nil {
		b.lock.Close()
	}
}
