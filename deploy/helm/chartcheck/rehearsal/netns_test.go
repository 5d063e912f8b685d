package rehearsal

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The pods' network: one namespace per pod (tkube-p<N>, a new N for every
// pod created, as a rescheduled pod is a new sandbox), each with a veth
// whose other end is on a bridge inside the hub namespace (tkube-hub),
// where the test process runs. 10.231.79.0/24 exists in none of the host's
// namespaces, so nothing of the host's routing, firewall or Docker sees it.
const (
	prefix    = "tkube"
	hubNS     = prefix + "-hub"
	subnet    = "10.231.79"
	hubIP     = subnet + ".1"
	serviceIP = subnet + ".2" // the client Service's cluster IP (service_test.go)
	bridge    = "br0"
)

func podNS(n int) string        { return fmt.Sprintf("%s-p%d", prefix, n) }
func podIP(n int) string        { return fmt.Sprintf("%s.%d", subnet, 10+n) }
func hostsDir(ns string) string { return "/etc/netns/" + ns }

// host runs a short command and returns its combined output.
func host(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}

func ipSteps(steps ...[]string) error {
	for _, s := range steps {
		if _, err := host("ip", s...); err != nil {
			return err
		}
	}
	return nil
}

// makeHub makes the hub namespace, its bridge with the hub's and the
// Service's addresses, and the hub's hosts file (filled in as pods come).
func makeHub() error {
	if err := os.MkdirAll(hostsDir(hubNS), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(hostsDir(hubNS), "hosts"), []byte(hostsHeader), 0o644); err != nil {
		return err
	}
	return ipSteps(
		[]string{"netns", "add", hubNS},
		[]string{"-n", hubNS, "link", "set", "lo", "up"},
		[]string{"-n", hubNS, "link", "add", bridge, "type", "bridge"},
		[]string{"-n", hubNS, "addr", "add", hubIP + "/24", "dev", bridge},
		[]string{"-n", hubNS, "addr", "add", serviceIP + "/24", "dev", bridge},
		[]string{"-n", hubNS, "link", "set", bridge, "up"},
	)
}

// removeLeftovers deletes every namespace and hosts directory of this
// package, this run's or one that died, and kills what still runs in them.
func removeLeftovers() {
	killMarked()
	names, _ := filepath.Glob("/run/netns/" + prefix + "-*")
	for _, path := range names {
		_, _ = host("ip", "netns", "del", filepath.Base(path))
		_ = os.Remove(path)
	}
	dirs, _ := filepath.Glob("/etc/netns/" + prefix + "-*")
	for _, d := range dirs {
		_ = os.RemoveAll(d)
	}
}

// podMarker is in the env of every process the rehearsal starts, so that a
// later run finds and kills what a crashed run left.
const podMarker = "TKUBE_REHEARSAL_POD="

func killMarked() {
	procs, _ := filepath.Glob("/proc/[0-9]*/environ")
	for _, p := range procs {
		env, err := os.ReadFile(p)
		if err != nil || !bytes.Contains(env, []byte("\x00"+podMarker)) && !bytes.HasPrefix(env, []byte(podMarker)) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p))); err == nil && pid != os.Getpid() {
			if proc, err := os.FindProcess(pid); err == nil {
				_ = proc.Kill()
			}
		}
	}
}

// sandbox is one pod's network namespace.
type sandbox struct {
	ns, ip string
}

// newSandbox makes namespace n with its veth on the hub's bridge. It runs
// inside the hub: the veth is made here and its pod end moved.
func newSandbox(n int, hosts *hostsFile) (*sandbox, error) {
	s := &sandbox{ns: podNS(n), ip: podIP(n)}
	veth := fmt.Sprintf("tkv%d", n)
	if err := hosts.addNamespace(s.ns); err != nil {
		return nil, err
	}
	err := ipSteps(
		[]string{"netns", "add", s.ns},
		[]string{"-n", s.ns, "link", "set", "lo", "up"},
		[]string{"link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", s.ns},
		[]string{"link", "set", veth, "master", bridge, "up"},
		[]string{"-n", s.ns, "addr", "add", s.ip + "/24", "dev", "eth0"},
		[]string{"-n", s.ns, "link", "set", "eth0", "up"},
	)
	if err != nil {
		s.remove(hosts)
		return nil, err
	}
	return s, nil
}

// remove deletes the namespace (its veth goes with it) once nothing runs
// in it.
func (s *sandbox) remove(hosts *hostsFile) {
	if out, err := host("ip", "netns", "pids", s.ns); err == nil {
		for _, p := range strings.Fields(out) {
			if pid, err := strconv.Atoi(p); err == nil {
				if proc, err := os.FindProcess(pid); err == nil {
					_ = proc.Kill()
				}
			}
		}
	}
	_, _ = host("ip", "netns", "del", s.ns)
	hosts.removeNamespace(s.ns)
}

// exec is the wrapper that starts a command in the sandbox: `ip netns exec`
// enters the namespace, mounts the namespace's hosts file on /etc/hosts and
// execs, so the process's PID is the command's own.
func (s *sandbox) exec() []string { return []string{"ip", "netns", "exec", s.ns} }

const hostsHeader = "127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n"

// hostsFile is the cluster's DNS as every namespace sees it: the headless
// Service's per-pod names and the client Service's name. One content is
// written to the hosts file of every namespace, in place (the same inode),
// because `ip netns exec` bind-mounts the file: a replaced file would not
// reach processes already running. Go's resolver (CGO_ENABLED=0, as the
// image's binary) reads /etc/hosts again when its mtime changes, at most
// every 5 s: the same order of staleness as a cluster DNS's TTL.
type hostsFile struct {
	mu         sync.Mutex
	names      map[string][]string // address -> names
	namespaces map[string]bool
}

func newHostsFile() *hostsFile {
	return &hostsFile{names: map[string][]string{}, namespaces: map[string]bool{hubNS: true}}
}

func (h *hostsFile) set(addr string, names ...string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.names[addr] = names
	return h.writeLocked()
}

func (h *hostsFile) drop(addr string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.names, addr)
	return h.writeLocked()
}

func (h *hostsFile) addNamespace(ns string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := os.MkdirAll(hostsDir(ns), 0o755); err != nil {
		return err
	}
	h.namespaces[ns] = true
	return h.writeLocked()
}

func (h *hostsFile) removeNamespace(ns string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.namespaces, ns)
	_ = os.RemoveAll(hostsDir(ns))
}

func (h *hostsFile) writeLocked() error {
	var b strings.Builder
	b.WriteString(hostsHeader)
	addrs := make([]string, 0, len(h.names))
	for a := range h.names {
		addrs = append(addrs, a)
	}
	sort.Strings(addrs)
	for _, a := range addrs {
		fmt.Fprintf(&b, "%s %s\n", a, strings.Join(h.names[a], " "))
	}
	for ns := range h.namespaces {
		// O_TRUNC keeps the inode: the bind mounts see the new content.
		f, err := os.OpenFile(filepath.Join(hostsDir(ns), "hosts"), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return err
		}
		_, werr := f.WriteString(b.String())
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return werr
		}
	}
	return nil
}
