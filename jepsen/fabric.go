//go:build linux

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ticketd/ticketd/jepsen/netfault"
)

// Everything the harness creates on the host carries this prefix, so that
// a later run can find and remove what a crashed run left behind.
const (
	prefix     = "tjepsen"
	hubNS      = prefix + "-hub"
	subnet     = "10.231.77" // a /24 that exists only inside our namespaces
	hubIP      = subnet + ".1"
	bridgeName = "br0" // inside hubNS, so no name clash on the host
	lockPath   = "/run/" + prefix + ".lock"
)

// fabric is the private network of process mode: one network namespace per
// node slot (tjepsen-s1, ...), each with a veth whose other end sits on a
// bridge inside a hub namespace (tjepsen-hub). The harness's own client
// sockets are opened inside the hub, so nodes and clients talk over
// 10.231.77.0/24, an address range that exists in none of the host's
// namespaces: the host's routing, firewall and Docker's iptables never see
// this traffic, and a partition is an iptables DROP inside a node's own
// namespace.
type fabric struct {
	slots map[int]bool
}

func slotNS(slot int) string    { return fmt.Sprintf("%s-s%d", prefix, slot) }
func slotIP(slot int) string    { return fmt.Sprintf("%s.%d", subnet, 10+slot) }
func nsPath(name string) string { return "/run/netns/" + name }

// cmdRun runs a short host command with a timeout and returns its
// combined output.
func cmdRun(timeout time.Duration, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}

func ip(args ...string) error {
	_, err := cmdRun(10*time.Second, "ip", args...)
	return err
}

// lockRun takes the host-wide lock that one jepsen run holds for its
// lifetime (the names of namespaces and the Docker project are fixed). The
// lock dies with the process, so a crashed run never blocks the next.
func lockRun() (*os.File, error) {
	f, err := os.OpenFile(lockPath, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", lockPath, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("another jepsen run holds %s (only one run at a time per host: they share namespace and project names)", lockPath)
	}
	_ = f.Truncate(0)
	_, _ = f.WriteString(strconv.Itoa(os.Getpid()) + "\n")
	return f, nil
}

// cleanupStaleNetns removes every tjepsen-* namespace, killing what still
// runs in it: under the run lock, anything with our prefix is a leftover of
// a run that died.
func cleanupStaleNetns() error {
	out, err := cmdRun(10*time.Second, "ip", "netns", "list")
	if err != nil {
		return err
	}
	var errs []error
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], prefix+"-") {
			continue
		}
		name := f[0]
		killNetnsPids(name)
		if err := ip("netns", "del", name); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func killNetnsPids(name string) {
	for i := 0; i < 20; i++ {
		out, err := cmdRun(5*time.Second, "ip", "netns", "pids", name)
		if err != nil || strings.TrimSpace(out) == "" {
			return
		}
		for _, p := range strings.Fields(out) {
			if pid, err := strconv.Atoi(p); err == nil && pid > 1 && pid != os.Getpid() {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// newFabric creates the hub namespace and its bridge.
func newFabric() (*fabric, error) {
	f := &fabric{slots: map[int]bool{}}
	steps := [][]string{
		{"netns", "add", hubNS},
		{"-n", hubNS, "link", "set", "lo", "up"},
		{"-n", hubNS, "link", "add", bridgeName, "type", "bridge"},
		{"-n", hubNS, "addr", "add", hubIP + "/24", "dev", bridgeName},
		{"-n", hubNS, "link", "set", bridgeName, "up"},
	}
	for _, s := range steps {
		if err := ip(s...); err != nil {
			f.teardown()
			return nil, err
		}
	}
	return f, nil
}

// addSlot creates a node slot's namespace and wires it to the bridge.
func (f *fabric) addSlot(slot int) error {
	if f.slots[slot] {
		return nil
	}
	ns := slotNS(slot)
	veth := fmt.Sprintf("vs%d", slot)
	steps := [][]string{
		{"netns", "add", ns},
		{"-n", ns, "link", "set", "lo", "up"},
		{"-n", hubNS, "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns},
		{"-n", hubNS, "link", "set", veth, "master", bridgeName},
		{"-n", hubNS, "link", "set", veth, "up"},
		{"-n", ns, "addr", "add", slotIP(slot) + "/24", "dev", "eth0"},
		{"-n", ns, "link", "set", "eth0", "up"},
	}
	f.slots[slot] = true
	for _, s := range steps {
		if err := ip(s...); err != nil {
			return fmt.Errorf("slot %d: %w", slot, err)
		}
	}
	return nil
}

// teardown deletes every namespace of the fabric (and with them the veths,
// the bridge and the iptables rules inside), killing what runs there.
func (f *fabric) teardown() {
	_ = cleanupStaleNetns()
}

// dial opens a TCP connection from inside the hub namespace, to an
// address of the fabric only.
func (f *fabric) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if err := allowOnly(addr, func(ip net.IP) bool { return strings.HasPrefix(ip.String(), subnet+".") }); err != nil {
		return nil, err
	}
	var c net.Conn
	err := netfault.InNetns(nsPath(hubNS), func() error {
		var err error
		c, err = (&net.Dialer{Timeout: 2 * time.Second}).DialContext(ctx, network, addr)
		return err
	})
	return c, err
}

// allowOnly refuses any address the run did not make: the harness talks to
// its own nodes and to nothing else.
func allowOnly(addr string, ok func(net.IP) bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	ip := net.ParseIP(host)
	if ip == nil || !ok(ip) {
		return fmt.Errorf("refusing to dial %s: not an address of this run's nodes", addr)
	}
	return nil
}
