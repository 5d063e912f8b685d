package chartcheck

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// checks run on every render of the matrix. Each reads what the values
// say and reports where the objects say otherwise.
// The StatefulSet's are in this file; checks_pods_test.go holds the bar
// every pod meets, checks_network_test.go the Services, budget and
// NetworkPolicy, checks_jobs_test.go the hook, backup and monitoring,
// checks_tls_test.go cert-manager's.
var checks = []func(*rc, *problems){
	checkKinds,
	checkStatefulSet,
	checkServerArgs,
	checkProbes,
	checkScheduling,
	checkPodSpecs,
	checkServices,
	checkPDB,
	checkNetworkPolicy,
	checkInitHook,
	checkReconcileHook,
	checkCertManager,
	checkBackup,
	checkMonitoring,
}

const (
	peers = "r-ticketd-peers"
	ns    = "ns"
)

var serverSelector = map[string]string{
	"app.kubernetes.io/name":      "ticketd",
	"app.kubernetes.io/instance":  "r",
	"app.kubernetes.io/component": "server",
}

// args splits "--name=value" arguments into a map; a bare "--name" maps to
// "true". The first argument, the subcommand, is left out.
func args(list []string) (map[string]string, []string) {
	m := map[string]string{}
	var pos []string
	for _, a := range list {
		if !strings.HasPrefix(a, "--") {
			pos = append(pos, a)
			continue
		}
		k, v, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !ok {
			v = "true"
		}
		m[k] = v
	}
	return m, pos
}

// checkKinds: the chart renders only what the values ask for, and the
// StatefulSet, Services and budget are ordinary resources, never hooks
// (Helm never updates a hook resource).
func checkKinds(c *rc, p *problems) {
	want := map[string]int{"StatefulSet": 1, "Service": 2}
	if c.standby() {
		want["Service"] = 3
	}
	if c.on("pdb.enabled") && !c.standby() {
		want["PodDisruptionBudget"] = 1
	}
	if c.on("networkPolicy.enabled") {
		want["NetworkPolicy"] = 1
	}
	if c.initHook() {
		want["Job"], want["ServiceAccount"], want["Role"], want["RoleBinding"] = 1, 1, 1, 1
	}
	if !c.standby() {
		want["Job"]++ // the reconcile hook
	}
	if c.on("backup.enabled") && !c.standby() {
		want["CronJob"], want["PersistentVolumeClaim"] = 1, 1
	}
	if c.on("metrics.serviceMonitor.enabled") && !c.standby() {
		want["ServiceMonitor"] = 1
	}
	if c.on("metrics.prometheusRule.enabled") && !c.standby() {
		want["PrometheusRule"] = 1
	}
	if c.on("tls.enabled") && c.str("tls.mode") == "certManager" {
		want["Certificate"] = int(c.num("tls.maxOrdinals"))
		if c.str("tls.certManager.issuerRef.name") == "" {
			want["Certificate"]++
			want["Issuer"] = 2
		}
	}
	got := map[string]int{}
	for _, o := range c.r.Objects {
		got[o.Kind()]++
		isHook := o.Hook() != ""
		wantHook := o.Meta.GetLabels()["app.kubernetes.io/component"] == "hook"
		if isHook != wantHook {
			p.add("%s/%s: helm.sh/hook %q, but only the init hook's Job and RBAC and the reconcile Job may be hooks", o.Kind(), o.Name(), o.Hook())
		}
	}
	if !reflect.DeepEqual(got, want) {
		p.add("rendered kinds %v, want %v", got, want)
	}
}

func checkStatefulSet(c *rc, p *problems) {
	s, err := statefulSet(c)
	if err != nil {
		p.add("%v", err)
		return
	}
	sp := s.Spec
	if sp.PodManagementPolicy != appsv1.ParallelPodManagement {
		p.add("podManagementPolicy %q, want Parallel: with OrderedReady pod-1 waits for pod-0, which waits for a quorum (F1)", sp.PodManagementPolicy)
	}
	if sp.ServiceName != peers {
		p.add("serviceName %q, want %q", sp.ServiceName, peers)
	}
	wantReplicas := int32(c.num("replicas"))
	if c.standby() {
		wantReplicas = 1
	}
	if sp.Replicas == nil || *sp.Replicas != wantReplicas {
		p.add("replicas %v, want %d", sp.Replicas, wantReplicas)
	}
	if sp.UpdateStrategy.Type != appsv1.RollingUpdateStatefulSetStrategyType || sp.UpdateStrategy.RollingUpdate == nil ||
		sp.UpdateStrategy.RollingUpdate.Partition == nil || int64(*sp.UpdateStrategy.RollingUpdate.Partition) != c.num("updateStrategy.partition") {
		p.add("updateStrategy %+v, want RollingUpdate with partition %d", sp.UpdateStrategy, c.num("updateStrategy.partition"))
	}
	if sp.UpdateStrategy.RollingUpdate != nil && sp.UpdateStrategy.RollingUpdate.MaxUnavailable != nil {
		p.add("rollingUpdate.maxUnavailable is set: one pod at a time, each gated on /readyz")
	}
	ret := sp.PersistentVolumeClaimRetentionPolicy
	if ret == nil || string(ret.WhenScaled) != c.str("persistence.retention.whenScaled") || string(ret.WhenDeleted) != c.str("persistence.retention.whenDeleted") {
		p.add("persistentVolumeClaimRetentionPolicy %+v, want whenScaled %s, whenDeleted %s", ret, c.str("persistence.retention.whenScaled"), c.str("persistence.retention.whenDeleted"))
	}
	if c.str("persistence.retention.whenScaled") == "" && (ret == nil || ret.WhenScaled != appsv1.DeletePersistentVolumeClaimRetentionPolicyType) {
		p.add("whenScaled must default to Delete (F5)")
	}
	if len(sp.VolumeClaimTemplates) != 1 || sp.VolumeClaimTemplates[0].Name != "data" {
		p.add("volumeClaimTemplates: want one, named data")
	} else if q := sp.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage]; q.String() != c.str("persistence.size") {
		p.add("data volume %s, want %s", q.String(), c.str("persistence.size"))
	}
	if !selects(sp.Selector.MatchLabels, sp.Template.Labels) || !reflect.DeepEqual(sp.Selector.MatchLabels, serverSelector) {
		p.add("selector %v does not select the pod labels %v, or is not the server selector", sp.Selector.MatchLabels, sp.Template.Labels)
	}
	for k := range sp.Template.Annotations {
		if strings.Contains(strings.ToLower(k), "checksum") {
			p.add("pod template annotation %q: a checksum of a Secret or ConfigMap rolls every pod when it changes; certificates reload without one (F15)", k)
		}
	}
	ps := sp.Template.Spec
	grace := int64(-1)
	if ps.TerminationGracePeriodSeconds != nil {
		grace = *ps.TerminationGracePeriodSeconds
	}
	if len(ps.Containers) == 1 {
		a, _ := args(ps.Containers[0].Args)
		d, err := time.ParseDuration(a["shutdown-timeout"])
		if err != nil || grace <= int64(d.Seconds()) {
			p.add("terminationGracePeriodSeconds %d is not longer than --shutdown-timeout %q: the kubelet would kill a node handing over leadership", grace, a["shutdown-timeout"])
		}
	}
}

// selects reports whether every label of sel is in labels.
func selects(sel, labels map[string]string) bool {
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func serverContainer(c *rc, p *problems) *corev1.Container {
	s, err := statefulSet(c)
	if err != nil {
		p.add("%v", err)
		return nil
	}
	if len(s.Spec.Template.Spec.Containers) != 1 {
		p.add("want one container, got %d", len(s.Spec.Template.Spec.Containers))
		return nil
	}
	return &s.Spec.Template.Spec.Containers[0]
}

// checkServerArgs: the flags of DESIGN.md 3.2. Every pod gets the same
// list, so nothing in it may name an ordinal except through $(POD_NAME).
func checkServerArgs(c *rc, p *problems) {
	ctr := serverContainer(c, p)
	if ctr == nil {
		return
	}
	if len(ctr.Command) != 0 {
		p.add("command %v: the image's entrypoint is /ticketd, and there is no shell", ctr.Command)
	}
	a, pos := args(ctr.Args)
	if !reflect.DeepEqual(pos, []string{"serve"}) {
		p.add("positional args %v, want [serve]", pos)
	}
	if len(a) != len(slices.DeleteFunc(slices.Clone(ctr.Args), func(s string) bool { return !strings.HasPrefix(s, "--") })) {
		p.add("a flag is given twice: %v", ctr.Args)
	}
	scheme := "http"
	if c.on("tls.enabled") {
		scheme = "https"
	}
	dom := peers + "." + ns + ".svc.cluster.local"
	httpPort, raftPort := c.num("ports.http"), c.num("ports.raft")
	want := map[string]string{
		"id":       "$(POD_NAME)",
		"data-dir": "/data",
	}
	listen := c.str("listenAddress")
	want["http-addr"] = fmt.Sprintf("%s:%d", listen, httpPort)
	want["raft-addr"] = fmt.Sprintf("%s:%d", listen, raftPort)
	if c.standby() {
		want["http-advertise"] = c.str("standby.httpAdvertise")
		want["raft-advertise"] = c.str("standby.raftAdvertise")
		want["standby"] = "true"
		want["join"] = "https://ticketd.primary.example:8080"
		if _, ok := a["initial-cluster"]; ok {
			p.add("a standby bootstraps nothing: no --initial-cluster")
		}
	} else {
		want["http-advertise"] = fmt.Sprintf("$(POD_NAME).%s:%d", dom, httpPort)
		want["raft-advertise"] = fmt.Sprintf("$(POD_NAME).%s:%d", dom, raftPort)
		// The seeds: ordinals 0-2, whatever replicas says.
		var seeds, urls []string
		for i := 0; i < 3; i++ {
			seeds = append(seeds, fmt.Sprintf("r-ticketd-%d=r-ticketd-%d.%s:%d", i, i, dom, raftPort))
			urls = append(urls, fmt.Sprintf("%s://r-ticketd-%d.%s:%d", scheme, i, dom, httpPort))
		}
		want["initial-cluster"] = strings.Join(seeds, ",")
		want["join"] = strings.Join(urls, ",")
		checkInitialCluster(a["initial-cluster"], int(c.num("replicas")), p)
	}
	want["tokens-file"] = "/etc/ticketd/auth/tokens"
	if c.on("tls.enabled") {
		for _, pre := range []string{"tls-", "raft-tls-"} {
			want[pre+"cert"] = "/tls/$(POD_NAME).pem"
			want[pre+"key"] = "/tls/$(POD_NAME)-key.pem"
			want[pre+"ca"] = "/tls/ca.pem"
		}
		if _, ok := a["insecure-plaintext-raft"]; ok {
			p.add("--insecure-plaintext-raft with TLS on")
		}
	} else {
		want["insecure-plaintext-raft"] = "true"
	}
	if c.num("ports.resp") > 0 {
		want["resp-addr"] = fmt.Sprintf("%s:%d", listen, c.num("ports.resp"))
	}
	for k, v := range want {
		if a[k] != v {
			p.add("--%s=%q, want %q", k, a[k], v)
		}
	}
	for _, k := range []string{"tls-client-auth", "dev", "bootstrap"} {
		if _, ok := a[k]; ok {
			p.add("--%s must never be rendered", k)
		}
	}
	// $(VAR) references: only the pod's identity, each defined in env.
	env := map[string]corev1.EnvVar{}
	for _, e := range ctr.Env {
		env[e.Name] = e
	}
	for _, arg := range ctr.Args {
		for _, ref := range varRefs(arg) {
			if _, ok := env[ref]; !ok {
				p.add("arg %q refers to $(%s), which the container's env does not define", arg, ref)
			}
		}
	}
	fields := map[string]string{"POD_NAME": "metadata.name", "POD_NAMESPACE": "metadata.namespace", "POD_IP": "status.podIP"}
	for name, path := range fields {
		e, ok := env[name]
		if !ok || e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != path {
			p.add("env %s: want fieldRef %s", name, path)
		}
	}
	if e, ok := env["GOMEMLIMIT"]; !ok || e.ValueFrom == nil || e.ValueFrom.ResourceFieldRef == nil || e.ValueFrom.ResourceFieldRef.Resource != "limits.memory" {
		p.add("env GOMEMLIMIT: want resourceFieldRef limits.memory")
	}
	ports := map[string]int32{}
	for _, pt := range ctr.Ports {
		ports[pt.Name] = pt.ContainerPort
	}
	if ports["http"] != int32(httpPort) || ports["raft"] != int32(raftPort) {
		p.add("container ports %v, want http %d and raft %d", ports, httpPort, raftPort)
	}
}

// checkInitialCluster parses the seed list as `ticketd serve` does
// (cluster.ParseInitialCluster: id=host:port, comma-separated) and checks
// that it names ordinals 0-2 only, never the replica count.
func checkInitialCluster(s string, replicas int, p *problems) {
	ids := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		id, addr, ok := strings.Cut(strings.TrimSpace(part), "=")
		host, port, okPort := strings.Cut(addr, ":")
		if !ok || id == "" || !okPort || host == "" {
			p.add("--initial-cluster entry %q is not id=host:port", part)
			continue
		}
		if _, err := strconv.ParseUint(port, 10, 16); err != nil {
			p.add("--initial-cluster entry %q: port %q", part, port)
		}
		if !strings.HasPrefix(host, id+".") {
			p.add("--initial-cluster entry %q: the host is not the pod's own DNS name", part)
		}
		if ids[id] {
			p.add("--initial-cluster names %s twice", id)
		}
		ids[id] = true
	}
	want := map[string]bool{"r-ticketd-0": true, "r-ticketd-1": true, "r-ticketd-2": true}
	if !reflect.DeepEqual(ids, want) {
		p.add("--initial-cluster names %v, want the seeds r-ticketd-0..2 for %d replicas: a list of every ordinal would roll all pods on a scale and let new ordinals bootstrap a cluster of their own (F11, F12)", ids, replicas)
	}
}

func varRefs(s string) []string {
	var out []string
	for {
		i := strings.Index(s, "$(")
		if i < 0 {
			return out
		}
		j := strings.Index(s[i:], ")")
		if j < 0 {
			return out
		}
		out = append(out, s[i+2:i+j])
		s = s[i+j+1:]
	}
}

// checkProbes: DESIGN.md 3.6. Readiness on /readyz; startup on /livez
// only; no liveness probe unless asked for (F13).
func checkProbes(c *rc, p *problems) {
	ctr := serverContainer(c, p)
	if ctr == nil {
		return
	}
	scheme := corev1.URISchemeHTTP
	if c.on("tls.enabled") {
		scheme = corev1.URISchemeHTTPS
	}
	probe := func(name string, pr *corev1.Probe, path, values string) {
		if pr == nil || pr.HTTPGet == nil {
			p.add("%s probe: want httpGet %s", name, path)
			return
		}
		g := pr.HTTPGet
		if g.Path != path || g.Port != intstr.FromString("http") || g.Scheme != scheme {
			p.add("%s probe: %s %s on port %v, want %s %s on port http", name, g.Scheme, g.Path, g.Port.String(), scheme, path)
		}
		if int64(pr.PeriodSeconds) != c.num(values+".periodSeconds") || int64(pr.TimeoutSeconds) != c.num(values+".timeoutSeconds") ||
			int64(pr.FailureThreshold) != c.num(values+".failureThreshold") {
			p.add("%s probe: period %d timeout %d threshold %d, not what %s says", name, pr.PeriodSeconds, pr.TimeoutSeconds, pr.FailureThreshold, values)
		}
	}
	probe("readiness", ctr.ReadinessProbe, "/readyz", "probes.readiness")
	probe("startup", ctr.StartupProbe, "/livez", "probes.startup")
	if ctr.StartupProbe != nil && int64(ctr.StartupProbe.PeriodSeconds*ctr.StartupProbe.FailureThreshold) < 600 && c.name == "defaults" {
		p.add("startup probe allows %d s, want 10 minutes for a snapshot restore", ctr.StartupProbe.PeriodSeconds*ctr.StartupProbe.FailureThreshold)
	}
	if c.on("probes.liveness.enabled") {
		probe("liveness", ctr.LivenessProbe, "/livez", "probes.liveness")
	} else if ctr.LivenessProbe != nil {
		p.add("a liveness probe is rendered while probes.liveness.enabled is false")
	}
}

// checkScheduling: anti-affinity and topology spread as the values say.
func checkScheduling(c *rc, p *problems) {
	s, err := statefulSet(c)
	if err != nil {
		return
	}
	ps := s.Spec.Template.Spec
	mode := c.str("affinity.podAntiAffinity")
	key := c.str("affinity.topologyKey")
	var req []corev1.PodAffinityTerm
	var pref []corev1.WeightedPodAffinityTerm
	if ps.Affinity != nil && ps.Affinity.PodAntiAffinity != nil {
		req = ps.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
		pref = ps.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution
	}
	term := func(t corev1.PodAffinityTerm) bool {
		return t.TopologyKey == key && t.LabelSelector != nil && reflect.DeepEqual(t.LabelSelector.MatchLabels, serverSelector)
	}
	switch mode {
	case "required":
		if len(req) != 1 || !term(req[0]) || len(pref) != 0 {
			p.add("anti-affinity: want one required term on %s selecting the server pods, got required %+v preferred %+v", key, req, pref)
		}
	case "preferred":
		if len(pref) != 1 || !term(pref[0].PodAffinityTerm) || len(req) != 0 {
			p.add("anti-affinity: want one preferred term on %s selecting the server pods, got required %+v preferred %+v", key, req, pref)
		}
	default:
		if ps.Affinity != nil {
			p.add("anti-affinity none, but affinity %+v", ps.Affinity)
		}
	}
	if c.on("topologySpread.enabled") {
		ts := ps.TopologySpreadConstraints
		if len(ts) != 1 || ts[0].TopologyKey != c.str("topologySpread.topologyKey") || int64(ts[0].MaxSkew) != c.num("topologySpread.maxSkew") ||
			string(ts[0].WhenUnsatisfiable) != c.str("topologySpread.whenUnsatisfiable") || ts[0].LabelSelector == nil ||
			!reflect.DeepEqual(ts[0].LabelSelector.MatchLabels, serverSelector) {
			p.add("topologySpreadConstraints %+v, not what topologySpread says", ts)
		}
	} else if len(ps.TopologySpreadConstraints) != 0 {
		p.add("topology spread rendered while disabled")
	}
}
