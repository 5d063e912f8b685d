//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// dockerBackend runs the containers of deploy/docker-compose*.yml under the
// compose project "tjepsen", plus containers it starts itself (same image,
// same network) for nodes that join later. Containers FROM scratch have no
// shell: everything is done from the host — `docker kill -s KILL/STOP/CONT`
// for signals, iptables and the delayer inside a container's network
// namespace entered by PID (nsenter, setns). The harness reaches the nodes
// at their addresses on the project's own network.
type dockerBackend struct {
	cfg      *config
	image    string
	files    []string // -f arguments of docker-compose
	network  string
	lock     *os.File
	extraEnv []string

	mu    sync.Mutex
	known map[string]bool // container addresses of this run
}

type ctrState struct {
	service string // compose service, "" for a container the harness runs
	name    string // container name or ID
	volume  string
	ip      string
	pid     int
	waitCh  chan struct{}
}

const (
	project     = prefix // docker-compose project name
	labelKey    = prefix
	dockerHTTP  = 8080
	dockerRaft  = 8090
	dockerShort = 30 * time.Second
)

func docker(timeout time.Duration, args ...string) (string, error) {
	out, err := cmdRun(timeout, "docker", args...)
	return strings.TrimSpace(out), err
}

func newDockerBackend(cfg *config) (backend, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("--docker needs root: it enters the containers' network namespaces (nsenter) for partitions and delays")
	}
	if _, err := docker(10*time.Second, "version", "--format", "{{.Server.Version}}"); err != nil {
		return nil, fmt.Errorf("docker is not usable: %w", err)
	}
	if _, err := exec.LookPath("docker-compose"); err != nil {
		return nil, errors.New("docker-compose (v1) not found")
	}
	lock, err := lockRun()
	if err != nil {
		return nil, err
	}
	base := filepath.Join(cfg.root, "deploy", "docker-compose.yml")
	if cfg.Nodes == 5 {
		base = filepath.Join(cfg.root, "deploy", "docker-compose.5.yml")
	}
	b := &dockerBackend{cfg: cfg, lock: lock, network: project + "_ticketd", known: map[string]bool{}}
	b.image = cfg.Image
	if b.image == "" {
		b.image = "ticketd:jepsen"
		if cfg.faultsBuild() {
			b.image = "ticketd:jepsen-faults"
		}
	}
	// The compose command carries each node's addresses and initial
	// cluster; timings and planted faults come in as TICKETD_* variables
	// (every flag reads one), through an override file in the run folder.
	b.extraEnv = flagsEnv(cfg.timingArgs())
	b.extraEnv = append(b.extraEnv, "TICKETD_TOKENS="+cfg.tokensEnv())
	var ov strings.Builder
	ov.WriteString("version: \"2.4\"\nservices:\n")
	for i := 1; i <= cfg.Nodes; i++ {
		fmt.Fprintf(&ov, "  n%d:\n    image: %q\n    labels: {%s: \"1\"}\n    environment:\n", i, b.image, labelKey)
		for _, kv := range b.extraEnv {
			k, v, _ := strings.Cut(kv, "=")
			fmt.Fprintf(&ov, "      %s: %q\n", k, v)
		}
	}
	override := filepath.Join(cfg.Out, "docker-compose.override.yml")
	if err := os.WriteFile(override, []byte(ov.String()), 0o644); err != nil {
		lock.Close()
		return nil, err
	}
	b.files = []string{"-f", base, "-f", override}
	b.cleanup()
	return b, nil
}

func (b *dockerBackend) compose(timeout time.Duration, args ...string) (string, error) {
	out, err := cmdRun(timeout, "docker-compose", append(append([]string{"-p", project}, b.files...), args...)...)
	return strings.TrimSpace(out), err
}

// cleanup removes the project and every container and volume the harness
// labelled, from this run or a crashed earlier one.
func (b *dockerBackend) cleanup() {
	_, _ = b.compose(2*time.Minute, "down", "-v", "--remove-orphans", "-t", "2")
	if out, err := docker(dockerShort, "ps", "-aq", "--filter", "label="+labelKey); err == nil && out != "" {
		_, _ = docker(2*time.Minute, append([]string{"rm", "-f", "-v"}, strings.Fields(out)...)...)
	}
	if out, err := docker(dockerShort, "volume", "ls", "-q", "--filter", "label="+labelKey); err == nil && out != "" {
		_, _ = docker(2*time.Minute, append([]string{"volume", "rm", "-f"}, strings.Fields(out)...)...)
	}
}

func (b *dockerBackend) name() string {
	return fmt.Sprintf("docker-compose project %s (%s, image %s)", project, filepath.Base(b.files[1]), b.image)
}

func (b *dockerBackend) prepare(ctx context.Context) error {
	if err := b.prepareImage(ctx); err != nil {
		return err
	}
	// The compose file's tls-init service makes the CA and the
	// certificates of its nodes (Raft mTLS, as in production); `up
	// --no-deps` would skip it.
	if _, err := b.compose(2*time.Minute, "run", "--rm", "-T", "--no-deps", "tls-init"); err != nil {
		return fmt.Errorf("TLS material for the cluster: %w", err)
	}
	return nil
}

// ensureCert makes a Raft certificate for a node the compose file does not
// name, in the project's tls volume (the CA key stays in its ca volume).
func (b *dockerBackend) ensureCert(id string) error {
	_, err := docker(time.Minute, "run", "--rm", "--network", "none", "--label", labelKey+"=1",
		"-v", project+"_tls:/tls", "-v", project+"_ca:/ca", b.image,
		"tls", "init", "--dir", "/tls", "--ca-key-dir", "/ca", "--nodes", id)
	return err
}

func (b *dockerBackend) prepareImage(ctx context.Context) error {
	if b.cfg.Image != "" {
		if _, err := docker(dockerShort, "image", "inspect", b.image); err != nil {
			return err
		}
		return ensureEnvFile(b.cfg.root)
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(cctx, filepath.Join(b.cfg.root, "scripts", "docker-build.sh"))
	cmd.Dir = b.cfg.root
	cmd.Env = append(os.Environ(), "IMAGE="+b.image)
	if b.cfg.faultsBuild() {
		cmd.Env = append(cmd.Env, "TAGS=ticketd_faults")
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("scripts/docker-build.sh: %v\n%s", err, out)
	}
	// docker-build.sh starts by removing build/docker, env file included.
	return ensureEnvFile(b.cfg.root)
}

func (b *dockerBackend) newNode(slot int, id string, boot bootMode) (*Node, error) {
	n := &Node{Slot: slot, ID: id, Host: id, Boot: boot, ctr: &ctrState{}}
	if boot == bootInitial {
		n.ctr.service = id
		n.ctr.volume = project + "_" + id + "-data"
	} else {
		n.ctr.name = project + "-x-" + id
		n.ctr.volume = project + "-x-" + id
	}
	return n, nil
}

func (b *dockerBackend) raftAddr(n *Node) string { return fmt.Sprintf("%s:%d", n.Host, dockerRaft) }
func (b *dockerBackend) httpAdvertise(n *Node) string {
	return fmt.Sprintf("%s:%d", n.Host, dockerHTTP)
}

func (b *dockerBackend) apiHostPort(n *Node) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ctr.ip == "" {
		return fmt.Sprintf("unstarted-%s:%d", n.ID, dockerHTTP) // the dial guard refuses it
	}
	return fmt.Sprintf("%s:%d", n.ctr.ip, dockerHTTP)
}

func (b *dockerBackend) start(ctx context.Context, n *Node, _ string) error {
	n.mu.Lock()
	if n.running {
		n.mu.Unlock()
		return fmt.Errorf("%s is running", n.ID)
	}
	st := n.ctr
	n.mu.Unlock()
	switch {
	case st.name != "":
		if _, err := docker(dockerShort, "start", st.name); err != nil {
			if !strings.Contains(err.Error(), "No such container") {
				return err
			}
			if err := b.runExtra(n); err != nil {
				return err
			}
		}
	default: // a compose service's first start
		if _, err := b.compose(2*time.Minute, "up", "-d", "--no-deps", "--no-build", st.service); err != nil {
			if strings.Contains(err.Error(), "port is already allocated") || strings.Contains(err.Error(), "address already in use") {
				return fmt.Errorf("%w\n(another cluster publishes the compose file's ports 127.0.0.1:1818N; stop it with scripts/docker-down.sh)", err)
			}
			return err
		}
		id, err := b.compose(dockerShort, "ps", "-q", st.service)
		if err != nil || id == "" {
			return fmt.Errorf("container of %s: %v", st.service, err)
		}
		n.mu.Lock()
		st.name = id
		n.mu.Unlock()
	}
	return b.afterStart(n)
}

// runExtra creates and starts a container for a node that joins later.
func (b *dockerBackend) runExtra(n *Node) error {
	st := n.ctr
	if _, err := docker(dockerShort, "volume", "create", "--label", labelKey+"=1", st.volume); err != nil {
		return err
	}
	if err := b.ensureCert(n.ID); err != nil {
		return fmt.Errorf("certificate for %s: %w", n.ID, err)
	}
	args := []string{"run", "-d", "--name", st.name, "--label", labelKey + "=1",
		"--network", b.network, "--network-alias", n.Host, "--hostname", n.Host,
		"-v", st.volume + ":/data", "-v", project + "_tls:/tls:ro"}
	for _, kv := range b.extraEnv {
		args = append(args, "-e", kv)
	}
	args = append(args, b.image, "serve", "--id", n.ID, "--data-dir", "/data",
		"--http-addr", fmt.Sprintf("0.0.0.0:%d", dockerHTTP), "--raft-addr", fmt.Sprintf("0.0.0.0:%d", dockerRaft),
		"--http-advertise", b.httpAdvertise(n), "--raft-advertise", b.raftAddr(n),
		"--raft-tls-cert", "/tls/"+n.ID+".pem", "--raft-tls-key", "/tls/"+n.ID+"-key.pem", "--raft-tls-ca", "/tls/ca.pem",
		"--join", strings.Join(n.JoinURLs, ","))
	_, err := docker(time.Minute, args...)
	return err
}

// afterStart reads the container's PID and address and watches for its
// exit.
func (b *dockerBackend) afterStart(n *Node) error {
	st := n.ctr
	out, err := docker(dockerShort, "inspect", "-f",
		fmt.Sprintf(`{{.State.Pid}} {{(index .NetworkSettings.Networks %q).IPAddress}}`, b.network), st.name)
	if err != nil {
		return err
	}
	f := strings.Fields(out)
	if len(f) != 2 {
		return fmt.Errorf("inspect %s: %q", n.ID, out)
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil || pid <= 0 {
		return fmt.Errorf("%s is not running (pid %q)", n.ID, f[0])
	}
	if net.ParseIP(f[1]) == nil {
		return fmt.Errorf("%s has no address on %s: %q", n.ID, b.network, f[1])
	}
	b.mu.Lock()
	b.known[f[1]] = true
	b.mu.Unlock()
	waitCh := make(chan struct{})
	n.mu.Lock()
	st.pid, st.ip, st.waitCh = pid, f[1], waitCh
	n.running, n.paused = true, false
	n.starts++
	n.mu.Unlock()
	go func() {
		// `docker wait` returns when the container stops.
		for i := 0; i < 1000; i++ {
			if _, err := docker(24*time.Hour, "wait", st.name); err == nil || !b.containerRunning(st.name) {
				break
			}
			time.Sleep(time.Second)
		}
		n.mu.Lock()
		if st.waitCh == waitCh {
			n.running = false
			st.pid = 0
		}
		n.mu.Unlock()
		close(waitCh)
	}()
	return nil
}

func (b *dockerBackend) containerRunning(name string) bool {
	out, err := docker(dockerShort, "inspect", "-f", "{{.State.Running}}", name)
	return err == nil && out == "true"
}

var dockerSig = map[syscall.Signal]string{syscall.SIGKILL: "KILL", syscall.SIGSTOP: "STOP", syscall.SIGCONT: "CONT", syscall.SIGTERM: "TERM", syscall.SIGQUIT: "QUIT"}

func (b *dockerBackend) signal(n *Node, sig syscall.Signal) error {
	n.mu.Lock()
	running, name := n.running, n.ctr.name
	n.mu.Unlock()
	if !running {
		return fmt.Errorf("%s is not running", n.ID)
	}
	s, ok := dockerSig[sig]
	if !ok {
		return fmt.Errorf("signal %v not supported", sig)
	}
	if _, err := docker(dockerShort, "kill", "-s", s, name); err != nil {
		return err
	}
	n.mu.Lock()
	switch sig {
	case syscall.SIGSTOP:
		n.paused = true
	case syscall.SIGCONT:
		n.paused = false
	}
	n.mu.Unlock()
	return nil
}

func (b *dockerBackend) waitExit(n *Node, timeout time.Duration) error {
	n.mu.Lock()
	ch := n.ctr.waitCh
	n.mu.Unlock()
	if ch == nil {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("%s did not exit within %v", n.ID, timeout)
	}
}

func (b *dockerBackend) alive(n *Node) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.running
}

// wipe removes the stopped container and its volume: the node's data is
// gone, and a new identity comes back in a new container.
func (b *dockerBackend) wipe(n *Node) error {
	if b.alive(n) {
		return fmt.Errorf("wipe %s: still running", n.ID)
	}
	n.mu.Lock()
	n.wiped = true
	name, vol := n.ctr.name, n.ctr.volume
	n.mu.Unlock()
	b.saveLog(filepath.Join(b.cfg.Out, "logs"), n)
	var errs []error
	if name != "" {
		if _, err := docker(time.Minute, "rm", "-f", name); err != nil {
			errs = append(errs, err)
		}
	}
	if _, err := docker(time.Minute, "volume", "rm", "-f", vol); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (b *dockerBackend) netns(n *Node) (string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.running || n.ctr.pid <= 0 {
		return "", fmt.Errorf("%s is not running", n.ID)
	}
	return fmt.Sprintf("/proc/%d/ns/net", n.ctr.pid), nil
}

func (b *dockerBackend) storage() (*disks, error) { return nil, errNoStorageFaults }

func (b *dockerBackend) nodeIP(n *Node) (string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ctr.ip == "" {
		return "", fmt.Errorf("%s has no address", n.ID)
	}
	return n.ctr.ip, nil
}

func (b *dockerBackend) iface() string { return "eth0" }

// dial reaches the containers at their addresses on the project's network
// (from the host, over the network's bridge), and nothing else.
func (b *dockerBackend) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if err := allowOnly(addr, func(ip net.IP) bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.known[ip.String()]
	}); err != nil {
		return nil, err
	}
	return (&net.Dialer{Timeout: 2 * time.Second}).DialContext(ctx, network, addr)
}

func (b *dockerBackend) saveLog(dir string, n *Node) {
	n.mu.Lock()
	name := n.ctr.name
	n.mu.Unlock()
	if name == "" {
		return
	}
	_ = os.MkdirAll(dir, 0o755)
	out, err := cmdRun(time.Minute, "docker", "logs", name)
	if err != nil && out == "" {
		return
	}
	_ = os.WriteFile(filepath.Join(dir, n.ID+".log"), []byte(out), 0o644)
}

func (b *dockerBackend) collectLogs(dir string, nodes []*Node) {
	for _, n := range nodes {
		if !n.isWiped() {
			b.saveLog(dir, n)
		}
	}
}

func (b *dockerBackend) teardown() {
	b.cleanup()
	if b.lock != nil {
		b.lock.Close()
	}
}

// ensureEnvFile makes sure the env_file the compose files name exists
// (scripts/docker-up.sh writes it with the demo cluster's tokens; compose
// refuses to start without it). If missing, it is written in the same
// format with fresh tokens. The harness's own tokens override it through
// the environment of its override file.
func ensureEnvFile(root string) error {
	p := filepath.Join(root, "build", "docker", "ticketd.env")
	if fileExists(p) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	admin, reserve := newToken(), newToken()
	if err := os.WriteFile(p, []byte("TICKETD_TOKENS=admin "+admin+";reserve "+reserve+"\n"), 0o600); err != nil {
		return err
	}
	_ = os.WriteFile(filepath.Join(root, "build", "docker", "admin.token"), []byte(admin+"\n"), 0o600)
	return os.WriteFile(filepath.Join(root, "build", "docker", "reserve.token"), []byte(reserve+"\n"), 0o600)
}
