package chartcheck

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// checks run on every render of the matrix. Each reads what the values
// say and reports where the objects say otherwise.
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
	if c.on("backup.enabled") && !c.standby() {
		want["CronJob"], want["PersistentVolumeClaim"] = 1, 1
	}
	if c.on("metrics.serviceMonitor.enabled") && !c.standby() {
		want["ServiceMonitor"] = 1
	}
	if c.on("metrics.prometheusRule.enabled") && !c.standby() {
		want["PrometheusRule"] = 1
	}
	got := map[string]int{}
	for _, o := range c.r.Objects {
		got[o.Kind()]++
		isHook := o.Hook() != ""
		wantHook := o.Meta.GetLabels()["app.kubernetes.io/component"] == "hook"
		if isHook != wantHook {
			p.add("%s/%s: helm.sh/hook %q, but only the init hook's Job and RBAC may be hooks", o.Kind(), o.Name(), o.Hook())
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

// pods returns every pod spec the chart renders, by object.
func pods(c *rc) map[string]*corev1.PodSpec {
	out := map[string]*corev1.PodSpec{}
	for _, o := range c.r.Objects {
		switch x := o.Obj.(type) {
		case *appsv1.StatefulSet:
			out[o.Kind()+"/"+o.Name()] = &x.Spec.Template.Spec
		case *batchv1.Job:
			out[o.Kind()+"/"+o.Name()] = &x.Spec.Template.Spec
		case *batchv1.CronJob:
			out[o.Kind()+"/"+o.Name()] = &x.Spec.JobTemplate.Spec.Template.Spec
		case *corev1.Pod:
			out[o.Kind()+"/"+o.Name()] = &x.Spec
		}
	}
	return out
}

// checkPodSpecs: the bar every pod of the chart meets, the server's and
// every hook's and backup's alike (DESIGN.md 3.2).
func checkPodSpecs(c *rc, p *problems) {
	images := map[string]bool{}
	for name, ps := range pods(c) {
		sc := ps.SecurityContext
		switch {
		case sc == nil:
			p.add("%s: no pod securityContext", name)
		case sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot,
			sc.RunAsUser == nil || *sc.RunAsUser != 65532,
			sc.RunAsGroup == nil || *sc.RunAsGroup != 65532,
			sc.FSGroup == nil || *sc.FSGroup != 65532,
			sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault:
			p.add("%s: pod securityContext %+v: want runAsNonRoot, user, group and fsGroup 65532, seccomp RuntimeDefault", name, sc)
		}
		if ps.HostNetwork || ps.HostPID || ps.HostIPC {
			p.add("%s: host namespaces", name)
		}
		if ps.EnableServiceLinks == nil || *ps.EnableServiceLinks {
			p.add("%s: enableServiceLinks must be false: a Service named ticketd would set TICKETD_* flags", name)
		}
		hook := ps.ServiceAccountName == "r-ticketd-hook"
		if ps.AutomountServiceAccountToken == nil || *ps.AutomountServiceAccountToken != hook {
			p.add("%s: automountServiceAccountToken %v: only the init hook talks to the Kubernetes API", name, ps.AutomountServiceAccountToken)
		}
		vols := map[string]corev1.Volume{}
		for _, v := range ps.Volumes {
			vols[v.Name] = v
			if v.HostPath != nil {
				p.add("%s: hostPath volume %s", name, v.Name)
			}
			if v.Secret != nil && (v.Secret.DefaultMode == nil || *v.Secret.DefaultMode != 0o440) {
				p.add("%s: secret volume %s: defaultMode want 0440, readable by group 65532 only (F8)", name, v.Name)
			}
		}
		if strings.HasPrefix(name, "StatefulSet/") {
			s, _ := statefulSet(c)
			for _, t := range s.Spec.VolumeClaimTemplates {
				vols[t.Name] = corev1.Volume{Name: t.Name}
			}
		}
		tmp := false
		for _, ctr := range append(slices.Clone(ps.InitContainers), ps.Containers...) {
			cs := ctr.SecurityContext
			if cs == nil || cs.ReadOnlyRootFilesystem == nil || !*cs.ReadOnlyRootFilesystem ||
				cs.AllowPrivilegeEscalation == nil || *cs.AllowPrivilegeEscalation ||
				cs.Capabilities == nil || !slices.Contains(cs.Capabilities.Drop, "ALL") || len(cs.Capabilities.Add) != 0 ||
				(cs.Privileged != nil && *cs.Privileged) {
				p.add("%s/%s: container securityContext %+v: want readOnlyRootFilesystem, no privilege escalation, capabilities drop ALL", name, ctr.Name, cs)
			}
			images[ctr.Image] = true
			img := ctr.Image
			if !strings.Contains(img, "@sha256:") {
				i := strings.LastIndex(img, ":")
				if i < 0 || strings.Contains(img[i:], "/") || img[i+1:] == "latest" || img[i+1:] == "" {
					p.add("%s/%s: image %q: want a pinned tag or digest, never latest", name, ctr.Name, img)
				}
			}
			req, lim := ctr.Resources.Requests, ctr.Resources.Limits
			if req.Cpu().IsZero() || req.Memory().IsZero() || lim.Memory().IsZero() {
				p.add("%s/%s: resources %+v: want cpu and memory requests and a memory limit", name, ctr.Name, ctr.Resources)
			}
			if !lim.Cpu().IsZero() {
				p.add("%s/%s: a CPU limit: CFS throttling delays heartbeats past the election timeout", name, ctr.Name)
			}
			for _, m := range ctr.VolumeMounts {
				if m.SubPath != "" || m.SubPathExpr != "" {
					p.add("%s/%s: mount %s uses subPath: the kubelet never updates it, so certificates would not rotate (F15)", name, ctr.Name, m.Name)
				}
				v, ok := vols[m.Name]
				if !ok {
					p.add("%s/%s: mount %s has no volume", name, ctr.Name, m.Name)
				}
				if (v.Secret != nil || v.Projected != nil) && !m.ReadOnly {
					p.add("%s/%s: secret mount %s is not readOnly", name, ctr.Name, m.Name)
				}
				if m.MountPath == "/tmp" && v.EmptyDir != nil {
					tmp = true
				}
			}
		}
		if !tmp {
			p.add("%s: no emptyDir at /tmp: the root filesystem is read-only", name)
		}
	}
	if len(images) != 1 {
		p.add("images %v: every pod, hook and backup must run the same binary", images)
	}
}

func services(c *rc, p *problems) (peerSvc, client *corev1.Service) {
	po, err := c.r.Find("Service", peers)
	if err != nil {
		p.add("%v", err)
		return nil, nil
	}
	co, err := c.r.Find("Service", "r-ticketd")
	if err != nil {
		p.add("%v", err)
		return nil, nil
	}
	return po.Obj.(*corev1.Service), co.Obj.(*corev1.Service)
}

// checkServices: a headless peers Service that publishes not-Ready pods
// (F2) and a client Service of Ready pods only (F17).
func checkServices(c *rc, p *problems) {
	ps, cs := services(c, p)
	if ps == nil {
		return
	}
	s, err := statefulSet(c)
	if err != nil {
		return
	}
	podLabels := s.Spec.Template.Labels
	if ps.Spec.ClusterIP != corev1.ClusterIPNone || !ps.Spec.PublishNotReadyAddresses {
		p.add("peers Service: clusterIP %q publishNotReadyAddresses %v, want None and true: peers must find each other before any is Ready", ps.Spec.ClusterIP, ps.Spec.PublishNotReadyAddresses)
	}
	if cs.Spec.ClusterIP == corev1.ClusterIPNone || cs.Spec.PublishNotReadyAddresses {
		p.add("client Service: clusterIP %q publishNotReadyAddresses %v: clients must reach Ready pods only", cs.Spec.ClusterIP, cs.Spec.PublishNotReadyAddresses)
	}
	if string(cs.Spec.Type) != c.str("service.type") {
		p.add("client Service type %s, want %s", cs.Spec.Type, c.str("service.type"))
	}
	for _, svc := range []*corev1.Service{ps, cs} {
		if !selects(svc.Spec.Selector, podLabels) || !reflect.DeepEqual(svc.Spec.Selector, serverSelector) {
			p.add("Service %s selector %v does not select exactly the server pods", svc.Name, svc.Spec.Selector)
		}
	}
	portsOf := func(svc *corev1.Service) map[string]int32 {
		m := map[string]int32{}
		for _, pt := range svc.Spec.Ports {
			m[pt.Name] = pt.Port
			if pt.TargetPort != intstr.FromString(pt.Name) {
				p.add("Service %s port %s targets %v, want the container port named %s", svc.Name, pt.Name, pt.TargetPort.String(), pt.Name)
			}
		}
		return m
	}
	wantPeers := map[string]int32{"http": int32(c.num("ports.http")), "raft": int32(c.num("ports.raft"))}
	if got := portsOf(ps); !reflect.DeepEqual(got, wantPeers) {
		p.add("peers Service ports %v, want %v", got, wantPeers)
	}
	wantClient := map[string]int32{"http": int32(c.num("ports.http"))}
	if r := c.num("ports.resp"); r > 0 {
		wantClient["resp"] = int32(r)
	}
	if got := portsOf(cs); !reflect.DeepEqual(got, wantClient) {
		p.add("client Service ports %v, want %v (never raft)", got, wantClient)
	}
}

// checkPDB: policy/v1, maxUnavailable only, 1 unless overridden, never 0
// (F9, F10).
func checkPDB(c *rc, p *problems) {
	list := c.r.OfKind("PodDisruptionBudget")
	if !c.on("pdb.enabled") || c.standby() {
		if len(list) != 0 {
			p.add("a PodDisruptionBudget is rendered while disabled or for a standby")
		}
		return
	}
	if len(list) != 1 {
		p.add("want one PodDisruptionBudget, got %d", len(list))
		return
	}
	pdb, ok := list[0].Obj.(*policyv1.PodDisruptionBudget)
	if !ok {
		p.add("PodDisruptionBudget is %T, want policy/v1", list[0].Obj)
		return
	}
	want := int64(1)
	if x := c.num("pdb.maxUnavailable"); x > 0 {
		want = x
	}
	mu := pdb.Spec.MaxUnavailable
	if mu == nil || mu.Type != intstr.Int || int64(mu.IntVal) != want {
		p.add("PDB maxUnavailable %v, want %d", mu, want)
	}
	if tol := (c.num("replicas") - 1) / 2; mu != nil && (mu.IntVal < 1 || int64(mu.IntVal) > tol) {
		p.add("PDB maxUnavailable %d outside 1..%d: 0 blocks every drain, more costs quorum", mu.IntVal, tol)
	}
	if pdb.Spec.MinAvailable != nil {
		p.add("PDB minAvailable is set: switching between the two fails an upgrade (F9)")
	}
	if pdb.Spec.UnhealthyPodEvictionPolicy == nil || *pdb.Spec.UnhealthyPodEvictionPolicy != policyv1.IfHealthyBudget {
		p.add("PDB unhealthyPodEvictionPolicy %v, want IfHealthyBudget", pdb.Spec.UnhealthyPodEvictionPolicy)
	}
	if pdb.Spec.Selector == nil || !reflect.DeepEqual(pdb.Spec.Selector.MatchLabels, serverSelector) {
		p.add("PDB selector %v, want the server pods", pdb.Spec.Selector)
	}
}

// checkNetworkPolicy: the Raft port admits the members (and the extra
// CIDRs) only; the API admits what apiFrom says.
func checkNetworkPolicy(c *rc, p *problems) {
	list := c.r.OfKind("NetworkPolicy")
	if !c.on("networkPolicy.enabled") {
		if len(list) != 0 {
			p.add("a NetworkPolicy is rendered while disabled")
		}
		return
	}
	if len(list) != 1 {
		p.add("want one NetworkPolicy, got %d", len(list))
		return
	}
	np := list[0].Obj.(*networkingv1.NetworkPolicy)
	if !reflect.DeepEqual(np.Spec.PodSelector.MatchLabels, serverSelector) || !reflect.DeepEqual(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) {
		p.add("NetworkPolicy selects %v for %v, want the server pods, Ingress", np.Spec.PodSelector.MatchLabels, np.Spec.PolicyTypes)
	}
	var raft, api []networkingv1.NetworkPolicyIngressRule
	for _, r := range np.Spec.Ingress {
		names := map[string]bool{}
		for _, pt := range r.Ports {
			if pt.Port == nil || pt.Port.Type != intstr.String {
				p.add("NetworkPolicy port %v: want a named port", pt.Port)
				continue
			}
			names[pt.Port.StrVal] = true
		}
		switch {
		case names["raft"] && len(names) == 1:
			raft = append(raft, r)
		case names["http"] && !names["raft"]:
			api = append(api, r)
		default:
			p.add("NetworkPolicy rule on ports %v: the Raft port must have a rule of its own", names)
		}
	}
	if len(raft) != 1 {
		p.add("want one NetworkPolicy rule for the Raft port, got %d", len(raft))
	} else {
		want := []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: serverSelector}}}
		if extra, ok := c.val("networkPolicy.raftExtraFrom").([]any); ok {
			for _, cidr := range extra {
				want = append(want, networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: cidr.(string)}})
			}
		}
		if !reflect.DeepEqual(raft[0].From, want) {
			p.add("the Raft port admits %+v, want exactly the members and raftExtraFrom %+v", raft[0].From, want)
		}
	}
	if len(api) != 1 {
		p.add("want one NetworkPolicy rule for the API port, got %d", len(api))
		return
	}
	apiFrom, _ := c.val("networkPolicy.apiFrom").([]any)
	if len(apiFrom) == 0 {
		if len(api[0].From) != 0 {
			p.add("apiFrom is empty, but the API admits only %+v", api[0].From)
		}
		return
	}
	// The members and this release's hooks and backups come along, or
	// forwarding, joins and backups would break.
	members, jobs := false, false
	for _, peer := range api[0].From {
		if peer.PodSelector != nil && reflect.DeepEqual(peer.PodSelector.MatchLabels, serverSelector) && peer.NamespaceSelector == nil {
			members = true
		}
		if peer.PodSelector != nil && peer.NamespaceSelector == nil {
			for _, e := range peer.PodSelector.MatchExpressions {
				if e.Key == "app.kubernetes.io/component" && slices.Contains(e.Values, "backup") && slices.Contains(e.Values, "hook") {
					jobs = true
				}
			}
		}
	}
	if !members || !jobs || len(api[0].From) != len(apiFrom)+2 {
		p.add("with apiFrom set, the API must admit apiFrom, the members and the hook and backup pods; admits %+v", api[0].From)
	}
}

// checkInitHook: the init Job and its RBAC (DESIGN.md 3.7): weights in
// order, a Role naming only the release's Secrets, and the Secrets the
// pods mount being the ones the Job makes.
func checkInitHook(c *rc, p *problems) {
	jobs := c.r.OfKind("Job")
	if !c.initHook() {
		if len(jobs) != 0 || len(c.r.OfKind("Role")) != 0 {
			p.add("an init hook is rendered, but tls.mode is not hook")
		}
		return
	}
	if len(jobs) != 1 {
		p.add("want one init Job, got %d", len(jobs))
		return
	}
	jo := jobs[0]
	weight := func(o Object) int {
		w, err := strconv.Atoi(o.Meta.GetAnnotations()["helm.sh/hook-weight"])
		if err != nil {
			p.add("%s/%s: helm.sh/hook-weight %q", o.Kind(), o.Name(), o.Meta.GetAnnotations()["helm.sh/hook-weight"])
		}
		return w
	}
	events := func(o Object) []string {
		ev := strings.Split(o.Hook(), ",")
		slices.Sort(ev)
		return ev
	}
	want := []string{"pre-install", "pre-upgrade"}
	if !reflect.DeepEqual(events(jo), want) {
		p.add("init Job runs at %v, want %v", events(jo), want)
	}
	for _, kind := range []string{"ServiceAccount", "Role", "RoleBinding"} {
		o, err := c.r.Find(kind, "r-ticketd-hook")
		if err != nil {
			p.add("%v", err)
			continue
		}
		if !reflect.DeepEqual(events(o), want) {
			p.add("%s runs at %v, want %v", kind, events(o), want)
		}
		if weight(o) >= weight(jo) {
			p.add("%s hook-weight %d is not below the init Job's %d: the Job would run before its permissions exist", kind, weight(o), weight(jo))
		}
		if !strings.Contains(o.Meta.GetAnnotations()["helm.sh/hook-delete-policy"], "before-hook-creation") {
			p.add("%s: hook-delete-policy without before-hook-creation: the next upgrade would fail on it", kind)
		}
	}
	if !strings.Contains(jo.Meta.GetAnnotations()["helm.sh/hook-delete-policy"], "before-hook-creation") {
		p.add("init Job: hook-delete-policy without before-hook-creation")
	}
	job := jo.Obj.(*batchv1.Job)
	if len(job.Spec.Template.Spec.Containers) != 1 {
		p.add("init Job: want one container")
		return
	}
	a, pos := args(job.Spec.Template.Spec.Containers[0].Args)
	if !reflect.DeepEqual(pos, []string{"tls", "init"}) {
		p.add("init Job runs %v, want ticketd tls init", pos)
	}
	var nodes []string
	for i := 0; i < int(c.num("tls.maxOrdinals")); i++ {
		nodes = append(nodes, fmt.Sprintf("r-ticketd-%d", i))
	}
	if a["nodes"] != strings.Join(nodes, ",") {
		p.add("init Job --nodes=%s, want every possible ordinal %v so that a scale-up needs no certificate", a["nodes"], nodes)
	}
	dns := strings.Split(a["dns"], ",")
	for _, name := range []string{"{id}." + peers + "." + ns + ".svc.cluster.local", "r-ticketd." + ns + ".svc", "r-ticketd." + ns + ".svc.cluster.local"} {
		if !slices.Contains(dns, name) {
			p.add("init Job --dns lacks %s: nodes dial it and the certificate must name it", name)
		}
	}
	for _, d := range dns {
		if strings.HasPrefix(d, "r-ticketd-") {
			p.add("init Job --dns names %s on every certificate: each node's certificate must name only its own pod (F18)", d)
		}
	}
	if a["k8s-secret"] != "r-ticketd-tls" || a["k8s-ca-secret"] != "r-ticketd-ca" {
		p.add("init Job Secrets --k8s-secret=%s --k8s-ca-secret=%s", a["k8s-secret"], a["k8s-ca-secret"])
	}
	wantAuth := ""
	if c.str("auth.existingSecret") == "" {
		wantAuth = "r-ticketd-auth"
	}
	if a["k8s-auth-secret"] != wantAuth {
		p.add("init Job --k8s-auth-secret=%q, want %q", a["k8s-auth-secret"], wantAuth)
	}
	if job.Spec.Template.Spec.ServiceAccountName != "r-ticketd-hook" {
		p.add("init Job runs as %q", job.Spec.Template.Spec.ServiceAccountName)
	}
	// RBAC: get and update by name on exactly the Secrets the Job names;
	// create (which cannot be limited by name) and nothing else.
	ro, err := c.r.Find("Role", "r-ticketd-hook")
	if err != nil {
		return
	}
	role := ro.Obj.(*rbacv1.Role)
	named := []string{a["k8s-secret"], a["k8s-ca-secret"]}
	if wantAuth != "" {
		named = append(named, wantAuth)
	}
	slices.Sort(named)
	var sawNamed, sawCreate bool
	for _, r := range role.Rules {
		verbs := slices.Clone(r.Verbs)
		slices.Sort(verbs)
		names := slices.Clone(r.ResourceNames)
		slices.Sort(names)
		if !reflect.DeepEqual(r.APIGroups, []string{""}) || !reflect.DeepEqual(r.Resources, []string{"secrets"}) {
			p.add("Role rule %+v: want secrets in the core group only", r)
		}
		switch {
		case reflect.DeepEqual(verbs, []string{"get", "update"}) && reflect.DeepEqual(names, named):
			sawNamed = true
		case reflect.DeepEqual(verbs, []string{"create"}) && len(names) == 0:
			sawCreate = true
		default:
			p.add("Role rule %+v: want get/update on %v by name, and create", r, named)
		}
	}
	if !sawNamed || !sawCreate {
		p.add("Role %+v: want get/update on %v by name, and create", role.Rules, named)
	}
	rbo, err := c.r.Find("RoleBinding", "r-ticketd-hook")
	if err == nil {
		rb := rbo.Obj.(*rbacv1.RoleBinding)
		if rb.RoleRef.Kind != "Role" || rb.RoleRef.Name != "r-ticketd-hook" || len(rb.Subjects) != 1 ||
			rb.Subjects[0].Kind != "ServiceAccount" || rb.Subjects[0].Name != "r-ticketd-hook" || rb.Subjects[0].Namespace != ns {
			p.add("RoleBinding %+v does not bind the hook's Role to its ServiceAccount", rb)
		}
	}
	// The servers mount the Secrets the Job makes, never the CA's.
	s, err := statefulSet(c)
	if err != nil {
		return
	}
	mounted := map[string]bool{}
	for _, v := range s.Spec.Template.Spec.Volumes {
		if v.Secret != nil {
			mounted[v.Secret.SecretName] = true
		}
	}
	if !mounted[a["k8s-secret"]] || mounted[a["k8s-ca-secret"]] {
		p.add("server pods mount %v: want %s, never the CA key's %s", mounted, a["k8s-secret"], a["k8s-ca-secret"])
	}
	if wantAuth != "" && !mounted[wantAuth] {
		p.add("server pods mount %v, not the tokens Secret %s the Job makes", mounted, wantAuth)
	}
}

// checkBackup: the CronJob of DESIGN.md 3.9, writing to a PVC Helm keeps.
func checkBackup(c *rc, p *problems) {
	list := c.r.OfKind("CronJob")
	if !c.on("backup.enabled") || c.standby() {
		if len(list) != 0 {
			p.add("a backup CronJob is rendered while disabled")
		}
		return
	}
	if len(list) != 1 {
		p.add("want one backup CronJob, got %d", len(list))
		return
	}
	cj := list[0].Obj.(*batchv1.CronJob)
	if cj.Spec.ConcurrencyPolicy != batchv1.ForbidConcurrent || cj.Spec.Schedule != c.str("backup.schedule") {
		p.add("backup CronJob: concurrency %s schedule %q, want Forbid and %q", cj.Spec.ConcurrencyPolicy, cj.Spec.Schedule, c.str("backup.schedule"))
	}
	ps := cj.Spec.JobTemplate.Spec.Template.Spec
	if len(ps.Containers) != 1 {
		p.add("backup: want one container")
		return
	}
	a, pos := args(ps.Containers[0].Args)
	scheme := "http"
	if c.on("tls.enabled") {
		scheme = "https"
		if a["ca"] != "/tls/ca.pem" {
			p.add("backup --ca=%q", a["ca"])
		}
	}
	want := map[string]string{
		"addr":       scheme + "://r-ticketd." + ns + ".svc.cluster.local:" + strconv.FormatInt(c.num("ports.http"), 10),
		"out-dir":    "/backups",
		"keep":       strconv.FormatInt(c.num("backup.keep"), 10),
		"token-file": "/etc/ticketd/auth/admin.token",
	}
	for k, v := range want {
		if a[k] != v {
			p.add("backup --%s=%q, want %q", k, a[k], v)
		}
	}
	if !reflect.DeepEqual(pos, []string{"backup"}) {
		p.add("backup runs %v", pos)
	}
	var claim string
	for _, v := range ps.Volumes {
		if v.PersistentVolumeClaim != nil {
			claim = v.PersistentVolumeClaim.ClaimName
		}
	}
	o, err := c.r.Find("PersistentVolumeClaim", "r-ticketd-backups")
	if err != nil || claim != "r-ticketd-backups" {
		p.add("backups go to claim %q; want r-ticketd-backups, rendered (%v)", claim, err)
	} else if o.Meta.GetAnnotations()["helm.sh/resource-policy"] != "keep" {
		p.add("backup PVC without helm.sh/resource-policy: keep: uninstall would delete the backups")
	}
}

// checkMonitoring: a ServiceMonitor whose job name the rules select, and
// the repository's own rules.
func checkMonitoring(c *rc, p *problems) {
	ps, _ := services(c, p)
	if ps == nil {
		return
	}
	job := ps.Labels["ticketd.io/prometheus-job"]
	if c.standby() == strings.HasPrefix(job, "ticketd") {
		p.add("peers Service job label %q: the rules count every job named ticketd* as a cluster's voters; a standby must not be one", job)
	}
	sms := c.r.OfKind("ServiceMonitor")
	if c.on("metrics.serviceMonitor.enabled") && !c.standby() {
		if len(sms) != 1 {
			p.add("want one ServiceMonitor, got %d", len(sms))
			return
		}
		sm := sms[0].Obj.(*monitoringv1.ServiceMonitor)
		if sm.Spec.JobLabel != "ticketd.io/prometheus-job" || !selects(sm.Spec.Selector.MatchLabels, ps.Labels) {
			p.add("ServiceMonitor jobLabel %q selector %v: want the peers Service (labels %v) and its job label", sm.Spec.JobLabel, sm.Spec.Selector.MatchLabels, ps.Labels)
		}
		if len(sm.Spec.Endpoints) != 1 {
			p.add("ServiceMonitor: want one endpoint")
			return
		}
		ep := sm.Spec.Endpoints[0]
		if ep.Port != "http" || ep.Path != "/metrics" || string(ep.Interval) != c.str("metrics.serviceMonitor.interval") {
			p.add("ServiceMonitor endpoint %s %s every %s", ep.Port, ep.Path, ep.Interval)
		}
		if ep.Authorization == nil || ep.Authorization.Credentials == nil || ep.Authorization.Credentials.Key != "reserve.token" ||
			ep.Authorization.Credentials.Name != authSecret(c) {
			p.add("ServiceMonitor authorization %+v: want the reserve token of %s", ep.Authorization, authSecret(c))
		}
		if c.on("tls.enabled") {
			if ep.Scheme == nil || string(*ep.Scheme) != "https" || ep.TLSConfig == nil || ep.TLSConfig.CA.Secret == nil ||
				ep.TLSConfig.CA.Secret.Key != "ca.pem" || ep.TLSConfig.ServerName == nil || *ep.TLSConfig.ServerName != "r-ticketd."+ns+".svc" {
				p.add("ServiceMonitor TLS: scheme %v tlsConfig %+v: want https, ca.pem of the TLS Secret, serverName r-ticketd.ns.svc", ep.Scheme, ep.TLSConfig)
			}
		} else if ep.TLSConfig != nil {
			p.add("ServiceMonitor tlsConfig with TLS off")
		}
	} else if len(sms) != 0 {
		p.add("a ServiceMonitor is rendered while disabled")
	}
	rules := c.r.OfKind("PrometheusRule")
	if c.on("metrics.prometheusRule.enabled") && !c.standby() {
		if len(rules) != 1 {
			p.add("want one PrometheusRule, got %d", len(rules))
			return
		}
		want, err := repoRules()
		if err != nil {
			p.add("%v", err)
			return
		}
		got := rules[0].Obj.(*monitoringv1.PrometheusRule).Spec
		if !reflect.DeepEqual(got, want) {
			p.add("PrometheusRule groups differ from deploy/prometheus/ticketd-rules.yml")
		}
	}
}

func authSecret(c *rc) string {
	if s := c.str("auth.existingSecret"); s != "" {
		return s
	}
	return "r-ticketd-auth"
}
