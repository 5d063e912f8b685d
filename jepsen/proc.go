//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/ticketd/ticketd/internal/proc"
)

// procBackend runs nodes as local processes of the built binary: each in
// its slot's network namespace (netns mode) or on 127.0.0.1 with ports of
// its own (loopback mode, no network faults). Starting, signalling and
// reaping a process is internal/proc's, shared with the e2e tests; what is
// jepsen's own here is the namespaces, addresses and certificates.
type procBackend struct {
	cfg  *config
	bin  string
	dir  string // run folder
	fab  *fabric
	lock *os.File
	// disks: every identity's data dir on a filesystem of its own (root);
	// noDisks says why not.
	disks     *disks
	noDisks   error
	loopPorts [][2]int // loopback mode: each slot's HTTP and Raft ports
	// oldBin is the older release's binary of an upgrade run (upgrade.go):
	// new identities start on it, and a node running it gets no
	// --unsafe-fault (a planted bug is the new binary's). "" otherwise.
	oldBin string
	// exits records every exit of a node that the harness did not cause
	// (upgrade.go watches it: a node that stops on an entry it cannot read).
	exits *exitLog
}

type procState struct {
	p       *proc.Process // the current or last run; nil before the first
	runs    int
	dataDir string
	// bin is the binary this identity runs from its next start on (an
	// upgrade run changes it); "" is the backend's.
	bin string
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
	b.noDisks = errNoStorageFaults
	if os.Geteuid() == 0 {
		d, err := newDisks(b.dir)
		if err != nil {
			fmt.Fprintf(os.Stderr, "jepsen: WARNING: no filesystem per node (%v): storage nemeses are skipped\n", err)
			b.noDisks = fmt.Errorf("no storage faults: %w", err)
		} else {
			b.disks, b.noDisks = d, nil
		}
	}
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
	name, tags := "ticketd", []string(nil)
	if b.cfg.faultsBuild() {
		name, tags = "ticketd-faults", []string{"ticketd_faults"}
	}
	out := filepath.Join(b.cfg.root, "build", "jepsen", name)
	cctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if err := proc.Build(cctx, b.cfg.root, out, tags...); err != nil {
		return err
	}
	b.bin = out
	return nil
}

func (b *procBackend) newNode(slot int, id string, boot bootMode) (*Node, error) {
	n := &Node{Slot: slot, ID: id, Boot: boot, proc: &procState{dataDir: filepath.Join(b.dir, "data", id), bin: b.oldBin}}
	if b.fab != nil {
		if err := b.fab.addSlot(slot); err != nil {
			return nil, err
		}
		n.Host = slotIP(slot)
	} else {
		for len(b.loopPorts) <= slot {
			addrs, err := proc.FreeAddrs(2)
			if err != nil {
				return nil, err
			}
			b.loopPorts = append(b.loopPorts, [2]int{port(addrs[0]), port(addrs[1])})
		}
		n.Host = "127.0.0.1"
	}
	if err := b.ensureCert(n); err != nil {
		return nil, err
	}
	if b.disks != nil {
		// Before its first start: a fresh identity (boot, join, a wiped
		// node back under a new ID) gets a fresh filesystem.
		if err := b.disks.create(id, n.proc.dataDir); err != nil {
			return nil, fmt.Errorf("filesystem for %s: %w", id, err)
		}
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

// port is the port of an address from proc.FreeAddrs.
func port(addr string) int { return int(netip.MustParseAddrPort(addr).Port()) }

func (b *procBackend) ports(n *Node) (httpPort, raftPort int) {
	if b.fab != nil {
		return 8080, 8090
	}
	return b.loopPorts[n.Slot][0], b.loopPorts[n.Slot][1]
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
	st := n.proc
	if st.p != nil && st.p.Alive() {
		return fmt.Errorf("%s is running", n.ID)
	}
	if err := os.MkdirAll(st.dataDir, 0o755); err != nil {
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
	bin := b.bin
	if st.bin != "" {
		bin = st.bin
	}
	if b.oldBin != "" && bin == b.oldBin {
		args = append(args, b.cfg.legacyTimingArgs()...)
	} else {
		args = append(args, b.cfg.timingArgs()...)
		if b.respEnabled() {
			args = append(args, "--resp-addr", fmt.Sprintf("%s:%d", n.Host, respPort))
		}
	}
	args = append(args, n.ExtraArgs...)
	spec := proc.Spec{Path: bin, Args: args, Env: []string{"TICKETD_TOKENS=" + b.cfg.tokensEnv()},
		Log:    filepath.Join(b.dir, "logs", fmt.Sprintf("%s.run%d.log", n.ID, st.runs+1)),
		Header: true,
		// Own process group: a Ctrl-C of the harness is not sent to the
		// nodes; the harness stops them itself.
		OwnGroup: true}
	if b.fab != nil {
		// `ip netns exec` execs the binary: the PID is ticketd's own, so
		// signals reach it directly.
		spec.Prefix = []string{"ip", "netns", "exec", slotNS(n.Slot)}
	}
	p, err := proc.Start(spec)
	if err != nil {
		return fmt.Errorf("start %s: %w", n.ID, err)
	}
	st.p = p
	st.runs++
	if b.exits != nil {
		b.exits.watch(n.ID, st.runs, bin, p)
	}
	n.paused = false
	n.starts++
	return nil
}

func (b *procBackend) signal(n *Node, sig syscall.Signal) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	p := n.proc.p
	if p == nil || !p.Alive() {
		return fmt.Errorf("%s is not running", n.ID)
	}
	if b.exits != nil && sig != syscall.SIGSTOP && sig != syscall.SIGCONT {
		b.exits.stopAsked(p) // whatever its exit status, the harness ended it
	}
	if err := p.Signal(sig); err != nil {
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
	p := n.proc.p
	n.mu.Unlock()
	if p == nil {
		return nil
	}
	if err := p.Wait(timeout); err != nil {
		return fmt.Errorf("%s %w", n.ID, err)
	}
	return nil
}

func (b *procBackend) alive(n *Node) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.proc.p != nil && n.proc.p.Alive()
}

func (b *procBackend) wipe(n *Node) error {
	if b.alive(n) {
		return fmt.Errorf("wipe %s: still running", n.ID)
	}
	n.mu.Lock()
	n.wiped = true
	n.mu.Unlock()
	var err error
	if b.disks != nil {
		err = b.disks.remove(n.ID)
	}
	return errors.Join(err, os.RemoveAll(n.proc.dataDir))
}

func (b *procBackend) storage() (*disks, error) { return b.disks, b.noDisks }

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
	if b.disks != nil {
		if err := b.disks.teardown(); err != nil {
			fmt.Fprintf(os.Stderr, "jepsen: WARNING: %v\n", err)
		} else if !b.cfg.KeepData {
			// --keep-data keeps the images (disks/ID.img: ext4, mount -o loop).
			_ = os.RemoveAll(b.disks.dir)
		}
	}
	if !b.cfg.KeepData {
		_ = os.RemoveAll(filepath.Join(b.dir, "data"))
	}
	if b.lock != nil {
		b.lock.Close()
	}
}
