package rehearsal

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/client"
	"github.com/ticketd/ticketd/deploy/helm/chartcheck"
	"helm.sh/helm/v3/pkg/strvals"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
)

// bound is the SDK's call timeout in the rehearsal: no caller may wait
// longer, and none may fail, while pods are killed, restarted and scaled.
const bound = 5 * time.Second

// TestRehearsal is DESIGN.md §4.3: the chart's pods, started at once,
// then under Go SDK load through the client Service: the leader's pod
// killed and recreated on its volume at a new address, a rolling restart
// one pod at a time within the PDB, and 3 → 5 → 3 → 5 voters through the
// reconcile hook Job's own command (the leader first placed on ordinal 4,
// so that the hook must move it).
func TestRehearsal(t *testing.T) {
	if os.Getenv(inHubEnv) == "" {
		t.Skip("the rehearsal needs root and network namespaces: run it with " + enableEnv + "=1 (scripts/helm-check.sh does)")
	}
	h := newHarness(t)
	three, five := h.render("replicas=3"), h.render("replicas=5")

	step(t, "install: the init hook's certificates and tokens; pods 0-2 created at once (podManagementPolicy Parallel)")
	h.install(three)
	for i := 0; i < 3; i++ {
		h.create(i)
	}
	h.waitReady(90*time.Second, 0, 1, 2)
	h.waitVoters(30*time.Second, 3)
	h.admin = h.client("admin.token")
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	_, _, err := h.admin.CreateSequence(ctx, "orders", client.SequenceSettings{})
	cancel()
	if err != nil {
		t.Fatalf("create the sequence through the client Service: %v", err)
	}
	users := h.client("reserve.token")
	l := startLoad(users, "orders", bound)
	defer l.stop()
	h.serving(l, "after the install")

	leader := h.leader()
	step(t, "the leader's pod %s killed (SIGKILL, sandbox gone) and created again on its volume at a new address", leader.name)
	oldIP := leader.IP()
	h.killPod(leader)
	i := h.ordinal(leader.name)
	h.create(i)
	if ip := h.pods[i].IP(); ip == oldIP {
		t.Fatalf("%s came back at its old address %s; the rehearsal must move it", leader.name, ip)
	}
	h.waitReady(60*time.Second, i)
	h.serving(l, "after the kill")

	step(t, "rolling restart, highest ordinal first, each pod Ready before the next, within the PDB (maxUnavailable %d)", h.maxUnavailable(three))
	h.rollingRestart(three)
	h.serving(l, "after the rolling restart")

	step(t, "scale 3 -> 5: the reconcile hook (--replicas=5, nothing to remove), then ordinals 3 and 4 created at once and joining")
	h.scaleUp(five)
	h.serving(l, "at 5 voters")

	top := fmt.Sprintf("%s-4", h.sts.Name)
	step(t, "leadership handed to %s (ticketd leader transfer), so that the scale-down must move it off first", top)
	h.cli("leader", "transfer", "--to", top)
	h.waitLeader(5*time.Second, "= "+top, func(l string) bool { return l == top })
	h.serving(l, "after the transfer")

	step(t, "scale 5 -> 3: the reconcile hook's own command removes 4, then 3 (leadership moved off first), then the StatefulSet deletes them and their volumes")
	out := h.hook(three, "reconcile")
	if !strings.Contains(out, "leader") {
		t.Errorf("the hook's output says nothing of moving the leader off %s:\n%s", top, out)
	}
	h.waitVoters(10*time.Second, 3)
	h.waitLeader(5*time.Second, "among ordinals 0-2", func(l string) bool { return h.ordinal(l) < 3 })
	h.sts = statefulSet(t, three)
	var wg sync.WaitGroup
	for _, i := range []int{3, 4} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.deletePod(i)
		}()
	}
	wg.Wait()
	for _, i := range []int{3, 4} {
		if err := os.RemoveAll(filepath.Join(h.k.pvcs, h.claim(i))); err != nil { // persistence.retention.whenScaled: Delete
			t.Fatal(err)
		}
	}
	h.serving(l, "back at 3 voters")

	step(t, "scale 3 -> 5 again: ordinals 3 and 4 start on new, empty volumes and join afresh")
	h.scaleUp(five)
	h.serving(l, "at 5 voters again")

	l.stop()
	t.Logf("load: %s", l.summary())
	if problems := l.check(); len(problems) > 0 {
		t.Fatalf("the rehearsal broke a promise:\n  %s", strings.Join(problems, "\n  "))
	}
	if h.maxUnready > h.maxUnavailable(three) {
		t.Fatalf("%d pods were unavailable at once during the rolling restart; the PDB allows %d", h.maxUnready, h.maxUnavailable(three))
	}
}

func step(t *testing.T, format string, args ...any) {
	t.Helper()
	t.Logf("%s  "+format, append([]any{time.Now().Format("15:04:05.000")}, args...)...)
}

// harness is the cluster under rehearsal: the kubelet, the client Service,
// and the StatefulSet controller's state (which pods exist).
type harness struct {
	t      *testing.T
	dir    string
	k      *kubelet
	sts    *appsv1.StatefulSet
	svc    *service
	domain string // the headless Service's domain, from the pods' --raft-advertise
	ca     *x509.CertPool
	admin  *client.Client
	seeds  *client.Client // the admin at the seeds' URLs

	mu         sync.Mutex
	pods       map[int]*pod
	rolling    bool
	maxUnready int // pods unavailable at once while rolling
}

func newHarness(t *testing.T) *harness {
	root := t.TempDir()
	for _, d := range []string{filepath.Dir(root), root} { // the pods' user reads below it
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin := os.Getenv(binEnv)
	h := &harness{t: t, dir: root, pods: map[int]*pod{}, k: &kubelet{
		bin: bin, root: filepath.Join(root, "pods"), hosts: newHostsFile(), namespace: chartcheck.Release.Namespace,
		secrets: map[string]map[string][]byte{}, pvcs: filepath.Join(root, "pvcs"),
	}}
	t.Cleanup(h.teardown)
	return h
}

func (h *harness) teardown() {
	h.mu.Lock()
	pods := make([]*pod, 0, len(h.pods))
	for _, p := range h.pods {
		pods = append(pods, p)
	}
	h.mu.Unlock()
	for _, p := range pods {
		if h.t.Failed() {
			h.t.Logf("%s's log (last 30 lines):\n%s", p.name, tail(p.Log(), 30))
		}
		h.k.kill(p)
	}
	if h.svc != nil {
		h.svc.close()
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// render renders the chart as `helm template r --namespace ns --set SET`.
func (h *harness) render(set string) chartcheck.Rendered {
	h.t.Helper()
	ch, err := chartcheck.LoadChartFrom("../../ticketd")
	if err != nil {
		h.t.Fatal(err)
	}
	// TICKETD_REHEARSAL_SET adds values, to see the rehearsal catch a
	// broken pod template (README: what the rehearsal catches).
	if extra := os.Getenv("TICKETD_REHEARSAL_SET"); extra != "" {
		set += "," + extra
	}
	vals := map[string]any{}
	if err := strvals.ParseInto(set, vals); err != nil {
		h.t.Fatal(err)
	}
	r, err := chartcheck.Render(ch, vals, chartcheck.Release)
	if err != nil {
		h.t.Fatalf("render --set %s: %v", set, err)
	}
	return r
}

func statefulSet(t *testing.T, r chartcheck.Rendered) *appsv1.StatefulSet {
	t.Helper()
	objs := r.OfKind("StatefulSet")
	if len(objs) != 1 {
		t.Fatalf("%d StatefulSets rendered", len(objs))
	}
	return objs[0].Obj.(*appsv1.StatefulSet)
}

func (h *harness) job(r chartcheck.Rendered, suffix string) *batchv1.Job {
	h.t.Helper()
	for _, o := range r.OfKind("Job") {
		if strings.HasSuffix(o.Name(), "-"+suffix) {
			return o.Obj.(*batchv1.Job)
		}
	}
	h.t.Fatalf("no Job *-%s among %v", suffix, r.Names())
	return nil
}

func (h *harness) maxUnavailable(r chartcheck.Rendered) int {
	h.t.Helper()
	objs := r.OfKind("PodDisruptionBudget")
	if len(objs) != 1 || objs[0].Obj.(*policyv1.PodDisruptionBudget).Spec.MaxUnavailable == nil {
		h.t.Fatalf("want one PDB with maxUnavailable, got %v", r.Names())
	}
	return objs[0].Obj.(*policyv1.PodDisruptionBudget).Spec.MaxUnavailable.IntValue()
}

// install does what the install hook Job does, with files for Secrets:
// `ticketd tls init` with the hook's own --nodes and --dns (the same code
// issues the certificates; --k8s-secret only stores them elsewhere), and a
// tokens Secret of the shape the hook makes. Then the client Service.
func (h *harness) install(r chartcheck.Rendered) {
	t := h.t
	t.Helper()
	h.sts = statefulSet(t, r)
	hookC := h.job(r, "init").Spec.Template.Spec.Containers[0]
	var tlsSecret, caSecret, authSecret string
	args := []string{"tls", "init"}
	for _, a := range hookC.Args[2:] {
		name, value, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		switch name {
		case "k8s-secret":
			tlsSecret = value
		case "k8s-ca-secret":
			caSecret = value
		case "k8s-auth-secret":
			authSecret = value
		case "renew-before":
		case "nodes", "dns":
			args = append(args, a)
		default:
			t.Fatalf("the init hook passes %s, which the rehearsal does not know", a)
		}
	}
	if tlsSecret == "" || caSecret == "" || authSecret == "" {
		t.Fatalf("the init hook's args %q lack a Secret", hookC.Args)
	}
	// Only the kubelet's copies (pod_test.go volume) are for the pods.
	dir, keyDir := filepath.Join(h.dir, "secrets", tlsSecret), filepath.Join(h.dir, "secrets", caSecret)
	for _, d := range []string{dir, keyDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(h.k.bin, append(args, "--dir="+dir, "--ca-key-dir="+keyDir)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ticketd %s: %v\n%s", strings.Join(cmd.Args[1:], " "), err, out)
	}
	h.k.secrets[tlsSecret] = readDir(t, dir)
	h.k.secrets[caSecret] = readDir(t, keyDir)
	admin, reserve := token(t), token(t)
	h.k.secrets[authSecret] = map[string][]byte{
		"tokens":        []byte("# SCOPES TOKEN\nadmin " + admin + "\nreserve " + reserve + "\n"),
		"admin.token":   []byte(admin + "\n"),
		"reserve.token": []byte(reserve + "\n"),
	}
	h.ca = x509.NewCertPool()
	if !h.ca.AppendCertsFromPEM(h.k.secrets[tlsSecret]["ca.pem"]) {
		t.Fatal("no CA certificate in ca.pem")
	}
	h.domain = peerDomain(t, h.sts)
	h.startService(r)
}

// token is what the hook's newToken makes: 256 random bits, base64url.
func token(t *testing.T) string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

func readDir(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = b
	}
	return out
}

func peerDomain(t *testing.T, sts *appsv1.StatefulSet) string {
	t.Helper()
	for _, a := range sts.Spec.Template.Spec.Containers[0].Args {
		if rest, ok := strings.CutPrefix(a, "--raft-advertise=$(POD_NAME)."); ok {
			return rest[:strings.LastIndexByte(rest, ':')]
		}
	}
	t.Fatal("no --raft-advertise=$(POD_NAME).<domain> in the StatefulSet's args")
	return ""
}

// startService starts the client Service: its name (from NOTES' client
// URL) resolves to the cluster IP, where the proxy sends connections to
// the Ready pods' targetPort.
func (h *harness) startService(r chartcheck.Rendered) {
	t := h.t
	o, err := r.Find("Service", h.sts.Name)
	if err != nil {
		t.Fatal(err)
	}
	svc := o.Obj.(*corev1.Service)
	if svc.Spec.ClusterIP == corev1.ClusterIPNone || svc.Spec.PublishNotReadyAddresses {
		t.Fatalf("the client Service %s is headless or publishes pods that are not Ready", svc.Name)
	}
	port := svc.Spec.Ports[0]
	sel := svc.Spec.Selector
	if !selects(sel, h.sts.Spec.Template.Labels) {
		t.Fatalf("the client Service's selector %v does not select the StatefulSet's pods %v", sel, h.sts.Spec.Template.Labels)
	}
	target, err := containerPort(h.sts.Spec.Template.Spec.Containers[0], port.TargetPort.String())
	if err != nil {
		t.Fatal(err)
	}
	ns := chartcheck.Release.Namespace
	if err := h.k.hosts.set(serviceIP, svc.Name+"."+ns+".svc.cluster.local", svc.Name+"."+ns+".svc", svc.Name+"."+ns); err != nil {
		t.Fatal(err)
	}
	h.svc, err = newService(int(port.Port), func() []string {
		h.mu.Lock()
		defer h.mu.Unlock()
		var eps []string
		for _, i := range sortedInts(h.pods) {
			if p := h.pods[i]; p.Ready() {
				eps = append(eps, fmt.Sprintf("%s:%d", p.IP(), target))
			}
		}
		return eps
	})
	if err != nil {
		t.Fatal(err)
	}
}

func selects(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return len(sel) > 0
}

func sortedInts[V any](m map[int]V) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// clientURL is where NOTES.txt tells clients inside the cluster to go.
func (h *harness) clientURL() string {
	return fmt.Sprintf("https://%s.%s.svc.cluster.local:8080", h.sts.Name, chartcheck.Release.Namespace)
}

func (h *harness) client(tokenKey string) *client.Client {
	h.t.Helper()
	return h.clientAt([]string{h.clientURL()}, tokenKey)
}

func (h *harness) clientAt(urls []string, tokenKey string) *client.Client {
	h.t.Helper()
	auth := h.k.secrets[h.sts.Name+"-auth"][tokenKey]
	c, err := client.New(urls,
		client.WithTLSConfig(&tls.Config{RootCAs: h.ca, MinVersion: tls.VersionTLS12}),
		client.WithBearerToken(strings.TrimSpace(string(auth))),
		client.WithTimeout(time.Second), client.WithCallTimeout(bound))
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { _ = c.Close() })
	return c
}

func (h *harness) claim(i int) string {
	return fmt.Sprintf("%s-%s-%d", h.sts.Spec.VolumeClaimTemplates[0].Name, h.sts.Name, i)
}

func (h *harness) ordinal(name string) int {
	var i int
	if _, err := fmt.Sscanf(strings.TrimPrefix(name, h.sts.Name+"-"), "%d", &i); err != nil {
		h.t.Fatalf("pod name %s: %v", name, err)
	}
	return i
}

// create is the StatefulSet controller creating ordinal i from the
// current template, with its PVC, and its name in the headless Service.
func (h *harness) create(i int) {
	h.t.Helper()
	name := fmt.Sprintf("%s-%d", h.sts.Name, i)
	claims := map[string]string{h.sts.Spec.VolumeClaimTemplates[0].Name: h.claim(i)}
	svcName := h.sts.Spec.ServiceName
	dns := []string{name + "." + h.domain, name + "." + svcName + "." + h.k.namespace + ".svc"}
	p, err := h.k.run(name, *h.sts.Spec.Template.Spec.DeepCopy(), claims, dns, h.readinessChanged)
	if err != nil {
		h.t.Fatal(err)
	}
	h.mu.Lock()
	h.pods[i] = p
	h.mu.Unlock()
}

// readinessChanged records, while rolling, how many of the StatefulSet's
// ordinals are unavailable at once (missing or not Ready).
func (h *harness) readinessChanged() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.rolling {
		return
	}
	unready := int(*h.sts.Spec.Replicas)
	for i, p := range h.pods {
		if i < int(*h.sts.Spec.Replicas) && p.Ready() {
			unready--
		}
	}
	h.maxUnready = max(h.maxUnready, unready)
}

func (h *harness) waitReady(timeout time.Duration, ordinals ...int) {
	h.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var missing []string
		h.mu.Lock()
		for _, i := range ordinals {
			p := h.pods[i]
			select {
			case <-p.Exited():
				h.mu.Unlock()
				h.t.Fatalf("%s exited (%v):\n%s", p.name, p.ExitErr(), tail(p.Log(), 30))
			default:
			}
			if !p.Ready() {
				missing = append(missing, p.name)
			}
		}
		h.mu.Unlock()
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("not Ready within %v: %v", timeout, missing)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// cluster asks the seeds (the StatefulSet's --join URLs, as the hook
// does) as the admin. Not through the client Service: its connections stay
// with one pod, which may be a member just removed that does not know it.
func (h *harness) cluster() (voters []string, leader string, err error) {
	if h.seeds == nil {
		var urls []string
		for _, a := range h.sts.Spec.Template.Spec.Containers[0].Args {
			if v, ok := strings.CutPrefix(a, "--join="); ok {
				urls = strings.Split(v, ",")
			}
		}
		if len(urls) == 0 {
			h.t.Fatal("no --join in the StatefulSet's args")
		}
		h.seeds = h.clientAt(urls, "admin.token")
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	st, err := h.seeds.Cluster(ctx)
	if err != nil {
		return nil, "", err
	}
	for _, m := range st.Members {
		if m.Voter {
			voters = append(voters, m.ID)
		}
	}
	slices.Sort(voters)
	return voters, st.Leader, nil
}

// waitLeader waits until the cluster names a leader that ok accepts.
func (h *harness) waitLeader(timeout time.Duration, what string, ok func(string) bool) string {
	h.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		_, leader, err := h.cluster()
		if err == nil && leader != "" && ok(leader) {
			return leader
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("no leader %s within %v: %q (%v)", what, timeout, leader, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (h *harness) waitVoters(timeout time.Duration, n int) {
	h.t.Helper()
	var want []string
	for i := 0; i < n; i++ {
		want = append(want, fmt.Sprintf("%s-%d", h.sts.Name, i))
	}
	deadline := time.Now().Add(timeout)
	for {
		voters, leader, err := h.cluster()
		if err == nil && slices.Equal(voters, want) && leader != "" {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("voters not %v within %v: %v (leader %q, %v)", want, timeout, voters, leader, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (h *harness) leader() *pod {
	h.t.Helper()
	leader := h.waitLeader(bound, "known", func(string) bool { return true })
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range h.pods {
		if p.name == leader {
			return p
		}
	}
	h.t.Fatalf("the leader %q is no pod of the rehearsal", leader)
	return nil
}

func (h *harness) killPod(p *pod) {
	h.k.kill(p)
	h.mu.Lock()
	delete(h.pods, h.ordinal(p.name))
	h.mu.Unlock()
}

// deletePod deletes ordinal i gracefully (SIGTERM, the pod's grace period).
func (h *harness) deletePod(i int) {
	h.mu.Lock()
	p := h.pods[i]
	h.mu.Unlock()
	h.k.terminate(p, -1)
	if err := p.ExitErr(); err != nil {
		h.t.Errorf("%s did not exit cleanly on SIGTERM: %v\n%s", p.name, err, tail(p.Log(), 20))
	}
	h.mu.Lock()
	delete(h.pods, i)
	h.mu.Unlock()
	h.readinessChanged()
}

// rollingRestart is the StatefulSet controller's RollingUpdate after a
// change of the pod template: from the highest ordinal down, delete a pod,
// create it again, and wait until it is Ready before the next. A pod is
// deleted only while the PDB allows a disruption, as `kubectl drain` would
// also wait.
func (h *harness) rollingRestart(r chartcheck.Rendered) {
	h.mu.Lock()
	h.rolling = true
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.rolling = false
		h.mu.Unlock()
	}()
	mu := h.maxUnavailable(r)
	for i := int(*h.sts.Spec.Replicas) - 1; i >= 0; i-- {
		h.waitDisruptionAllowed(mu, 30*time.Second)
		h.deletePod(i)
		h.create(i)
		h.waitReady(60*time.Second, i)
		step(h.t, "  %s restarted at %s and Ready", h.pods[i].name, h.pods[i].IP())
	}
}

// scaleUp is `helm upgrade --set replicas=5` from 3: the reconcile hook
// first (it has nothing to remove), then the StatefulSet controller
// creating ordinals 3 and 4 at once (Parallel); they join through --join.
func (h *harness) scaleUp(five chartcheck.Rendered) {
	h.t.Helper()
	_ = h.hook(five, "reconcile")
	h.sts = statefulSet(h.t, five)
	h.create(3)
	h.create(4)
	h.waitReady(90*time.Second, 3, 4)
	h.waitVoters(60*time.Second, 5)
}

func (h *harness) waitDisruptionAllowed(maxUnavailable int, timeout time.Duration) {
	h.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		h.mu.Lock()
		unready := int(*h.sts.Spec.Replicas)
		for i, p := range h.pods {
			if i < int(*h.sts.Spec.Replicas) && p.Ready() {
				unready--
			}
		}
		h.mu.Unlock()
		if unready+1 <= maxUnavailable {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("the PDB allowed no disruption for %v (%d unavailable)", timeout, unready)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// hook runs a hook Job of the render as the Job controller would: its pod
// in a sandbox of its own, retried up to backoffLimit, bounded by
// activeDeadlineSeconds; it must succeed.
func (h *harness) hook(r chartcheck.Rendered, suffix string) string {
	h.t.Helper()
	job := h.job(r, suffix)
	deadline := 10 * time.Minute
	if job.Spec.ActiveDeadlineSeconds != nil {
		deadline = time.Duration(*job.Spec.ActiveDeadlineSeconds) * time.Second
	}
	tries := 1
	if job.Spec.BackoffLimit != nil {
		tries += int(*job.Spec.BackoffLimit)
	}
	var errs []error
	for try := 1; try <= tries; try++ {
		p, err := h.k.run(fmt.Sprintf("%s-%d", job.Name, try), *job.Spec.Template.Spec.DeepCopy(), nil, nil, nil)
		if err != nil {
			h.t.Fatal(err)
		}
		select {
		case <-p.Exited():
		case <-time.After(deadline):
			h.k.kill(p)
			h.t.Fatalf("Job %s passed its activeDeadlineSeconds %v:\n%s", job.Name, deadline, tail(p.Log(), 30))
		}
		log := p.Log()
		h.k.kill(p)
		if p.ExitErr() == nil {
			step(h.t, "  Job %s succeeded:\n%s", job.Name, strings.TrimSpace(log))
			return log
		}
		errs = append(errs, fmt.Errorf("try %d: %v\n%s", try, p.ExitErr(), tail(log, 20)))
	}
	h.t.Fatalf("Job %s failed %d times: %v", job.Name, tries, errors.Join(errs...))
	return ""
}

// cli runs a ticketd client command as an operator would, from inside
// the cluster's network, against the client Service, as the admin.
func (h *harness) cli(args ...string) {
	h.t.Helper()
	ca := filepath.Join(h.dir, "secrets", h.sts.Name+"-tls", "ca.pem")
	tok := filepath.Join(h.dir, "secrets", "admin.token")
	if err := os.WriteFile(tok, h.k.secrets[h.sts.Name+"-auth"]["admin.token"], 0o600); err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.k.bin, append(args, "--addr="+h.clientURL(), "--ca="+ca, "--token-file="+tok)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		h.t.Fatalf("ticketd %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	step(h.t, "  ticketd %s: %s", strings.Join(args, " "), strings.TrimSpace(string(out)))
}

// serving waits until a few more Reserve calls have succeeded: the
// cluster serves now, not only before.
func (h *harness) serving(l *load, when string) {
	h.t.Helper()
	start := l.successes()
	deadline := time.Now().Add(bound)
	for l.successes() < start+20 {
		if time.Now().After(deadline) {
			h.t.Fatalf("%s: fewer than 20 reservations in %v (%s)", when, bound, l.summary())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
