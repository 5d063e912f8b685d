package rehearsal

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// kubelet runs pods as a kubelet would, as far as ticketd can tell: the
// container's args and env expanded from the pod's fields and Secrets, its
// volumes as directories with the owners and modes the kubelet gives them,
// its user and groups from the securityContext, its probes run on their
// periods, and a deletion as SIGTERM, the grace period, then SIGKILL.
//
// The container is the image's: a root filesystem holding /ticketd and
// nothing else (FROM scratch), read-only as readOnlyRootFilesystem says,
// with the volumes bind-mounted at their mountPaths, so the rendered args
// run verbatim (containerScript).
type kubelet struct {
	bin       string // ticketd, the image's entrypoint (Dockerfile: ENTRYPOINT ["/ticketd"])
	root      string // pods' directories
	hosts     *hostsFile
	namespace string
	secrets   map[string]map[string][]byte // the namespace's Secrets
	pvcs      string                       // where PersistentVolumeClaims live, one directory each

	mu      sync.Mutex
	nextBox int
}

// pod is one running pod.
type pod struct {
	name string
	spec corev1.PodSpec
	box  *sandbox
	dir  string
	cmd  *exec.Cmd
	log  *os.File

	exited  chan struct{}
	exitErr error
	started atomic.Bool // the startup probe has passed
	ready   atomic.Bool // the readiness probe passes and the pod is not terminating
	ending  atomic.Bool // deleted: never Ready again
	stop    context.CancelFunc
	probes  sync.WaitGroup
	onReady func() // called when readiness changes
}

// IP is the pod's address (status.podIP).
func (p *pod) IP() string { return p.box.ip }

// Ready is the pod's Ready condition.
func (p *pod) Ready() bool { return p.ready.Load() }

// run creates the pod: a sandbox with a new address, its DNS name
// published (a headless Service with publishNotReadyAddresses publishes a
// pod's address as soon as it has one), its volumes, and its one container
// started. claims maps volume names to PVC names (StatefulSet pods).
func (k *kubelet) run(name string, spec corev1.PodSpec, claims map[string]string, dnsNames []string, onReady func()) (*pod, error) {
	if len(spec.Containers) != 1 {
		return nil, fmt.Errorf("pod %s: %d containers; the rehearsal runs one", name, len(spec.Containers))
	}
	k.mu.Lock()
	k.nextBox++
	n := k.nextBox
	k.mu.Unlock()
	box, err := newSandbox(n, k.hosts)
	if err != nil {
		return nil, err
	}
	p := &pod{name: name, spec: spec, box: box, dir: filepath.Join(k.root, fmt.Sprintf("%s.%d", name, n)), exited: make(chan struct{}), onReady: onReady}
	if err := k.start(p, claims); err != nil {
		box.remove(k.hosts)
		return nil, fmt.Errorf("pod %s: %w", name, err)
	}
	if len(dnsNames) > 0 {
		if err := k.hosts.set(box.ip, dnsNames...); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func (k *kubelet) start(p *pod, claims map[string]string) error {
	c := p.spec.Containers[0]
	sec := p.spec.SecurityContext
	if sec == nil || sec.RunAsUser == nil || sec.RunAsGroup == nil || sec.FSGroup == nil {
		return fmt.Errorf("the pod's securityContext sets no runAsUser, runAsGroup and fsGroup; the rehearsal runs nothing as root")
	}
	uid, gid, fsGroup := *sec.RunAsUser, *sec.RunAsGroup, *sec.FSGroup
	volumes := map[string]string{}
	for _, v := range p.spec.Volumes {
		dir, err := k.volume(p, v, fsGroup)
		if err != nil {
			return fmt.Errorf("volume %s: %w", v.Name, err)
		}
		volumes[v.Name] = dir
	}
	for name, claim := range claims { // volumeClaimTemplates
		dir := filepath.Join(k.pvcs, claim)
		if err := mkdirOwned(dir, fsGroup); err != nil {
			return err
		}
		volumes[name] = dir
	}
	var mounts []mount
	for _, m := range c.VolumeMounts {
		dir, ok := volumes[m.Name]
		if !ok {
			return fmt.Errorf("mount %s: no volume %q", m.MountPath, m.Name)
		}
		if m.SubPath != "" {
			return fmt.Errorf("mount %s uses subPath, which the kubelet never updates; the chart must not", m.MountPath)
		}
		mounts = append(mounts, mount{path: m.MountPath, dir: dir, readOnly: m.ReadOnly})
	}
	env, err := k.env(p, c)
	if err != nil {
		return err
	}
	args := make([]string, 0, len(c.Args))
	for _, a := range c.Args {
		args = append(args, expand(a, env))
	}
	if len(c.Command) > 0 {
		return fmt.Errorf("the container sets command %q; the image's entrypoint is ticketd", c.Command)
	}
	readOnlyRoot := c.SecurityContext != nil && c.SecurityContext.ReadOnlyRootFilesystem != nil && *c.SecurityContext.ReadOnlyRootFilesystem
	if err := os.MkdirAll(filepath.Join(p.dir, "root"), 0o755); err != nil {
		return err
	}
	log, err := os.Create(filepath.Join(p.dir, "log"))
	if err != nil {
		return err
	}
	script := containerScript(filepath.Join(p.dir, "root"), k.bin, mounts, readOnlyRoot, uid, gid, fsGroup)
	cmd := exec.Command(p.box.exec()[0], append(append(p.box.exec()[1:], "/usr/bin/sh", "-ec", script, "container"), args...)...)
	cmd.Env = []string{podMarker + p.name}
	for _, name := range sortedKeys(env) {
		cmd.Env = append(cmd.Env, name+"="+env[name])
	}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		log.Close()
		return err
	}
	p.cmd, p.log = cmd, log
	go func() {
		p.exitErr = cmd.Wait()
		p.setReady(false)
		close(p.exited)
	}()
	ctx, cancel := context.WithCancel(context.Background())
	p.stop = cancel
	p.probes.Add(1)
	go func() {
		defer p.probes.Done()
		p.probe(ctx, c)
	}()
	return nil
}

// volume makes the directory of one volume as the kubelet would: an
// emptyDir fresh for each pod, a PVC's directory kept across pods (group
// fsGroup, setgid, as fsGroupChangePolicy does), a Secret's keys as files
// of mode defaultMode, owned by root and group fsGroup.
func (k *kubelet) volume(p *pod, v corev1.Volume, fsGroup int64) (string, error) {
	dir := filepath.Join(p.dir, "volumes", v.Name)
	switch {
	case v.EmptyDir != nil:
		return dir, mkdirOwned(dir, fsGroup)
	case v.Secret != nil:
		data, ok := k.secrets[v.Secret.SecretName]
		if !ok {
			return "", fmt.Errorf("no Secret %q (the pod would stay in ContainerCreating)", v.Secret.SecretName)
		}
		mode := int32(0o644)
		if v.Secret.DefaultMode != nil {
			mode = *v.Secret.DefaultMode
		}
		files := map[string]string{}
		if len(v.Secret.Items) == 0 {
			for key := range data {
				files[key] = key
			}
		}
		for _, it := range v.Secret.Items {
			if _, ok := data[it.Key]; !ok {
				return "", fmt.Errorf("Secret %q has no key %q", v.Secret.SecretName, it.Key)
			}
			files[it.Key] = it.Path
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
		for key, path := range files {
			f := filepath.Join(dir, path)
			if err := os.WriteFile(f, data[key], 0o600); err != nil {
				return "", err
			}
			if err := os.Chown(f, 0, int(fsGroup)); err != nil {
				return "", err
			}
			if err := os.Chmod(f, os.FileMode(mode)); err != nil {
				return "", err
			}
		}
		return dir, nil
	default:
		return "", fmt.Errorf("a kind of volume the rehearsal does not know (%+v)", v.VolumeSource)
	}
}

type mount struct {
	path, dir string
	readOnly  bool
}

// containerScript is what a container runtime does before it execs the
// entrypoint, in the mount namespace `ip netns exec` made for the pod: a
// tmpfs root with the binary at /ticketd, the pod's hosts file at
// /etc/hosts (no nsswitch.conf and no resolv.conf, as in the image, so
// Go's resolver reads the hosts file first), /proc, a few devices and the
// volumes; the root remounted read-only; then chroot as the pod's user,
// its group and fsGroup, and exec with the rendered args ("$@").
func containerScript(root, bin string, mounts []mount, readOnlyRoot bool, uid, gid, fsGroup int64) string {
	q := func(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
	var b strings.Builder
	fmt.Fprintf(&b, "r=%s\nmount -t tmpfs -o size=1m,mode=755 rootfs \"$r\"\n", q(root))
	b.WriteString("mkdir -p \"$r/etc\" \"$r/proc\" \"$r/dev\"\n")
	b.WriteString(": >\"$r/ticketd\"; mount --bind -o ro " + q(bin) + " \"$r/ticketd\"\n")
	b.WriteString(": >\"$r/etc/hosts\"; mount --bind /etc/hosts \"$r/etc/hosts\"\n")
	b.WriteString("mount -t proc proc \"$r/proc\"\n")
	for _, d := range []string{"null", "zero", "random", "urandom"} {
		fmt.Fprintf(&b, ": >\"$r/dev/%s\"; mount --bind /dev/%s \"$r/dev/%s\"\n", d, d, d)
	}
	for _, m := range mounts {
		target := "\"$r\"" + q(m.path)
		fmt.Fprintf(&b, "mkdir -p %s; mount --bind %s %s\n", target, q(m.dir), target)
		if m.readOnly {
			fmt.Fprintf(&b, "mount -o remount,bind,ro %s\n", target)
		}
	}
	if readOnlyRoot {
		b.WriteString("mount -o remount,ro \"$r\"\n")
	}
	fmt.Fprintf(&b, "exec /usr/sbin/chroot --userspec=%d:%d --groups=%d \"$r\" /ticketd \"$@\"\n", uid, gid, fsGroup)
	return b.String()
}

func mkdirOwned(dir string, gid int64) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.Chown(dir, 0, int(gid)); err != nil {
		return err
	}
	return os.Chmod(dir, 0o2775)
}

// env is the container's environment as the kubelet makes it: values with
// $(VAR) of earlier variables expanded, the downward API's fields, Secret
// keys and the memory limit in bytes.
func (k *kubelet) env(p *pod, c corev1.Container) (map[string]string, error) {
	env := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			env[e.Name] = expand(e.Value, env)
			continue
		}
		switch from := e.ValueFrom; {
		case from.FieldRef != nil:
			switch from.FieldRef.FieldPath {
			case "metadata.name":
				env[e.Name] = p.name
			case "metadata.namespace":
				env[e.Name] = k.namespace
			case "status.podIP":
				env[e.Name] = p.box.ip
			default:
				return nil, fmt.Errorf("env %s: field %s is not one the rehearsal knows", e.Name, from.FieldRef.FieldPath)
			}
		case from.ResourceFieldRef != nil:
			q, ok := c.Resources.Limits[corev1.ResourceName(strings.TrimPrefix(from.ResourceFieldRef.Resource, "limits."))]
			if !ok {
				return nil, fmt.Errorf("env %s: no %s on the container", e.Name, from.ResourceFieldRef.Resource)
			}
			env[e.Name] = strconv.FormatInt(q.Value(), 10)
		case from.SecretKeyRef != nil:
			v, ok := k.secrets[from.SecretKeyRef.Name][from.SecretKeyRef.Key]
			if !ok {
				return nil, fmt.Errorf("env %s: no key %s in Secret %s", e.Name, from.SecretKeyRef.Key, from.SecretKeyRef.Name)
			}
			env[e.Name] = string(v)
		default:
			return nil, fmt.Errorf("env %s: a source the rehearsal does not know", e.Name)
		}
	}
	return env, nil
}

// expand is the kubelet's $(VAR) expansion: a defined variable is
// replaced, an undefined one left as written, $$ is a literal $.
func expand(s string, env map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := env[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// probe runs the startup probe, then the readiness probe, on their periods
// (the kubelet skips TLS verification of an HTTPS probe).
func (p *pod) probe(ctx context.Context, c corev1.Container) {
	startup, readiness := c.StartupProbe, c.ReadinessProbe
	if readiness == nil {
		p.setReady(true)
		return
	}
	if startup != nil {
		for fails := 0; ; {
			if p.wait(ctx, startup.PeriodSeconds) != nil {
				return
			}
			if p.get(ctx, c, startup) {
				break
			}
			if fails++; fails >= int(startup.FailureThreshold) {
				fmt.Fprintf(p.log, "rehearsal: startup probe failed %d times; the kubelet would restart the container\n", fails)
				return
			}
		}
	}
	p.started.Store(true)
	fails := 0
	for {
		if p.get(ctx, c, readiness) {
			fails = 0
			p.setReady(true)
		} else if fails++; fails >= int(readiness.FailureThreshold) {
			p.setReady(false)
		}
		if p.wait(ctx, readiness.PeriodSeconds) != nil {
			return
		}
	}
}

func (p *pod) wait(ctx context.Context, seconds int32) error {
	t := time.NewTimer(time.Duration(max(seconds, 1)) * time.Second)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-p.exited:
		return fmt.Errorf("exited")
	case <-t.C:
		return nil
	}
}

func (p *pod) get(ctx context.Context, c corev1.Container, pr *corev1.Probe) bool {
	h := pr.HTTPGet
	if h == nil {
		return false
	}
	port, err := containerPort(c, h.Port.String())
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(max(pr.TimeoutSeconds, 1))*time.Second)
	defer cancel()
	url := fmt.Sprintf("%s://%s%s", strings.ToLower(string(h.Scheme)), net.JoinHostPort(p.box.ip, strconv.Itoa(port)), h.Path)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true} // #nosec G402 -- as the kubelet's probes
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode >= 200 && resp.StatusCode < 400
}

func (p *pod) setReady(v bool) {
	select {
	case <-p.exited:
		v = false
	default:
	}
	if p.ending.Load() {
		v = false
	}
	if p.ready.Swap(v) != v && p.onReady != nil {
		p.onReady()
	}
}

// containerPort resolves a probe's or Service's port: a number, or the
// name of one of the container's ports.
func containerPort(c corev1.Container, port string) (int, error) {
	if n, err := strconv.Atoi(port); err == nil {
		return n, nil
	}
	for _, cp := range c.Ports {
		if cp.Name == port {
			return int(cp.ContainerPort), nil
		}
	}
	return 0, fmt.Errorf("container %s has no port named %q", c.Name, port)
}

// terminate deletes the pod as the kubelet does: out of the Service's
// endpoints at once, SIGTERM, SIGKILL after the grace period; then its
// sandbox and DNS name are gone. grace < 0 uses the pod's own.
func (k *kubelet) terminate(p *pod, grace time.Duration) {
	p.setTerminating()
	if grace < 0 {
		grace = 30 * time.Second
		if s := p.spec.TerminationGracePeriodSeconds; s != nil {
			grace = time.Duration(*s) * time.Second
		}
	}
	if grace > 0 {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	select {
	case <-p.exited:
	case <-time.After(grace):
	}
	k.kill(p)
}

// kill ends the pod with SIGKILL and removes its sandbox: a node lost, or
// `kubectl delete pod --grace-period=0 --force`.
func (k *kubelet) kill(p *pod) {
	p.setTerminating()
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.exited
	p.stop()
	p.probes.Wait()
	_ = k.hosts.drop(p.box.ip)
	p.box.remove(k.hosts)
	p.log.Close()
}

func (p *pod) setTerminating() {
	p.ending.Store(true)
	if p.ready.Swap(false) && p.onReady != nil {
		p.onReady()
	}
	p.stop()
}

// Exited is closed when the container has exited; ExitErr is then its
// status.
func (p *pod) Exited() <-chan struct{} { return p.exited }
func (p *pod) ExitErr() error          { return p.exitErr }

// Log is the container's output so far.
func (p *pod) Log() string {
	b, _ := os.ReadFile(filepath.Join(p.dir, "log"))
	return string(b)
}
