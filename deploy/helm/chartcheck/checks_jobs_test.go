package chartcheck

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	batchv1 "k8s.io/api/batch/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// checkInitHook: the init Job and its RBAC (DESIGN.md 3.7): weights in
// order, a Role naming only the release's Secrets, and the Secrets the
// pods mount being the ones the Job makes.
func checkInitHook(c *rc, p *problems) {
	var jobs []Object
	for _, o := range c.r.OfKind("Job") {
		if o.Name() != "r-ticketd-reconcile" {
			jobs = append(jobs, o)
		}
	}
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

// checkReconcileHook: the scale-down Job of DESIGN.md 3.4. It runs before
// every upgrade and rollback, after the init hook (which may make the token
// it reads), and removes the voters at ordinals >= replicas through the
// seeds' API. A standby release has no voters of its own: no hook.
func checkReconcileHook(c *rc, p *problems) {
	o, err := c.r.Find("Job", "r-ticketd-reconcile")
	if c.standby() {
		if err == nil {
			p.add("reconcile Job rendered for a standby: it would remove the primary's voters")
		}
		return
	}
	if err != nil {
		p.add("no reconcile Job: a scale-down would shrink the StatefulSet with no member removed (F4)")
		return
	}
	ann := o.Meta.GetAnnotations()
	ev := strings.Split(o.Hook(), ",")
	slices.Sort(ev)
	if want := []string{"pre-rollback", "pre-upgrade"}; !reflect.DeepEqual(ev, want) {
		p.add("reconcile Job runs at %v, want %v", ev, want)
	}
	if ann["helm.sh/hook-weight"] != "5" {
		p.add("reconcile Job hook-weight %q, want \"5\", after the init hook's", ann["helm.sh/hook-weight"])
	}
	if init, err := c.r.Find("Job", "r-ticketd-init"); err == nil {
		iw, _ := strconv.Atoi(init.Meta.GetAnnotations()["helm.sh/hook-weight"])
		rw, _ := strconv.Atoi(ann["helm.sh/hook-weight"])
		if rw <= iw {
			p.add("reconcile Job hook-weight %d is not above the init Job's %d", rw, iw)
		}
	}
	if ann["helm.sh/hook-delete-policy"] != "before-hook-creation,hook-succeeded" {
		p.add("reconcile Job hook-delete-policy %q, want before-hook-creation,hook-succeeded (a failed Job is kept)", ann["helm.sh/hook-delete-policy"])
	}
	job := o.Obj.(*batchv1.Job)
	if job.Spec.BackoffLimit == nil || *job.Spec.BackoffLimit != 3 || job.Spec.ActiveDeadlineSeconds == nil || *job.Spec.ActiveDeadlineSeconds != 900 {
		p.add("reconcile Job backoffLimit %v activeDeadlineSeconds %v, want 3 and 900", job.Spec.BackoffLimit, job.Spec.ActiveDeadlineSeconds)
	}
	ps := job.Spec.Template.Spec
	if len(ps.Containers) != 1 {
		p.add("reconcile Job: want one container")
		return
	}
	a, pos := args(ps.Containers[0].Args)
	if !reflect.DeepEqual(pos, []string{"members", "reconcile"}) {
		p.add("reconcile Job runs %v, want ticketd members reconcile", pos)
	}
	scheme := "http"
	if c.on("tls.enabled") {
		scheme = "https"
	}
	var seeds []string
	for i := 0; i < 3; i++ {
		seeds = append(seeds, fmt.Sprintf("%s://r-ticketd-%d.%s.%s.svc.cluster.local:%d", scheme, i, peers, ns, c.num("ports.http")))
	}
	want := map[string]string{
		"replicas":   strconv.FormatInt(c.num("replicas"), 10),
		"id-prefix":  "r-ticketd-",
		"addr":       strings.Join(seeds, ","),
		"token-file": "/etc/ticketd/auth/admin.token",
		"timeout":    "10m",
	}
	if c.on("tls.enabled") {
		want["ca"] = "/tls/ca.pem"
	}
	for k, v := range want {
		if a[k] != v {
			p.add("reconcile --%s=%q, want %q", k, a[k], v)
		}
	}
	if len(a) != len(want) {
		p.add("reconcile args %v, want exactly %v", a, want)
	}
	// The token and the CA are mounted where the flags point.
	mounts := map[string]string{}
	for _, m := range ps.Containers[0].VolumeMounts {
		mounts[m.MountPath] = m.Name
	}
	secrets := map[string]string{}
	for _, v := range ps.Volumes {
		if v.Secret != nil && len(v.Secret.Items) == 1 {
			secrets[v.Name] = v.Secret.SecretName + "/" + v.Secret.Items[0].Key + ">" + v.Secret.Items[0].Path
		}
	}
	if got, want := secrets[mounts["/etc/ticketd/auth"]], authSecret(c)+"/admin.token>admin.token"; got != want {
		p.add("reconcile Job mounts %q at /etc/ticketd/auth, want %s", got, want)
	}
	if c.on("tls.enabled") {
		if got, want := secrets[mounts["/tls"]], caSecret(c)+"/"+caKey(c)+">ca.pem"; got != want {
			p.add("reconcile Job mounts %q at /tls, want %s", got, want)
		}
	} else if _, ok := mounts["/tls"]; ok {
		p.add("reconcile Job mounts /tls with TLS off")
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
				ep.TLSConfig.CA.Secret.Key != caKey(c) || ep.TLSConfig.CA.Secret.Name != caSecret(c) || ep.TLSConfig.ServerName == nil || *ep.TLSConfig.ServerName != "r-ticketd."+ns+".svc" {
				p.add("ServiceMonitor TLS: scheme %v tlsConfig %+v: want https, %s of %s, serverName r-ticketd.ns.svc", ep.Scheme, ep.TLSConfig, caKey(c), caSecret(c))
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

// caSecret and caKey: where the CA certificate is: ca.pem of the TLS
// Secret, or ca.crt of ordinal 0's Secret under cert-manager.
func caSecret(c *rc) string {
	switch c.str("tls.mode") {
	case "certManager":
		return "r-ticketd-tls-0"
	case "existingSecret":
		return c.str("tls.existingSecret")
	}
	return "r-ticketd-tls"
}

func caKey(c *rc) string {
	if c.str("tls.mode") == "certManager" {
		return "ca.crt"
	}
	return "ca.pem"
}
