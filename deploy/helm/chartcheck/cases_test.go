package chartcheck

import (
	"fmt"
	"reflect"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/strvals"
	appsv1 "k8s.io/api/apps/v1"
)

// renderCase is one set of values of the render matrix, given as
// `helm --set` would take it.
type renderCase struct {
	name string
	set  string
}

// primaryStandby is what a standby release needs: the primary's API, its
// own external names, the primary's tokens and a certificate of its CA.
const standbySet = "role=standby,standby.join={https://ticketd.primary.example:8080},standby.raftAdvertise=dr.example:8090," +
	"standby.httpAdvertise=dr.example:8080,auth.existingSecret=primary-auth,tls.mode=existingSecret,tls.existingSecret=dr-tls"

// matrix is every option of values.yaml at least once (DESIGN.md 4.2).
var matrix = []renderCase{
	{"defaults", ""},
	{"replicas 5", "replicas=5"},
	{"replicas 5 maxUnavailable 2", "replicas=5,pdb.maxUnavailable=2"},
	{"tls off", "tls.enabled=false,auth.existingSecret=tokens"},
	{"tls existingSecret", "tls.mode=existingSecret,tls.existingSecret=my-tls,auth.existingSecret=tokens"},
	{"auth existingSecret", "auth.existingSecret=tokens"},
	{"cert-manager", "tls.mode=certManager,auth.existingSecret=tokens"},
	{"cert-manager, corporate issuer, 5", "replicas=5,tls.mode=certManager,tls.certManager.issuerRef.name=corp-ca,tls.certManager.issuerRef.kind=ClusterIssuer,auth.existingSecret=tokens,metrics.serviceMonitor.enabled=true,backup.enabled=true"},
	{"monitoring", "metrics.serviceMonitor.enabled=true,metrics.prometheusRule.enabled=true"},
	{"monitoring tls off", "metrics.serviceMonitor.enabled=true,tls.enabled=false,auth.existingSecret=tokens"},
	{"backup", "backup.enabled=true,backup.keep=48"},
	{"backup tls off", "backup.enabled=true,tls.enabled=false,auth.existingSecret=tokens"},
	{"apiFrom", "networkPolicy.apiFrom[0].namespaceSelector.matchLabels.team=payments"},
	{"raftExtraFrom", "networkPolicy.raftExtraFrom={10.20.0.0/16,10.21.0.0/16}"},
	{"networkPolicy off", "networkPolicy.enabled=false"},
	{"liveness", "probes.liveness.enabled=true"},
	{"anti-affinity preferred", "affinity.podAntiAffinity=preferred"},
	{"anti-affinity none", "affinity.podAntiAffinity=none,topologySpread.enabled=false"},
	{"partition 2", "updateStrategy.partition=2"},
	{"resp", "ports.resp=6379"},
	{"digest", "image.digest=sha256:" + strings.Repeat("ab", 32)},
	{"raft tuning", "server.raft.heartbeatTimeout=1s,server.raft.electionTimeout=1s,server.raft.leaderLeaseTimeout=800ms,server.extraArgs={--snapshot-threshold=16384}"},
	{"pdb off", "pdb.enabled=false"},
	{"rehearsal listen on pod IP", "listenAddress=$(POD_IP)"},
	{"standby", standbySet},
	{"everything on, 5", "replicas=5,metrics.serviceMonitor.enabled=true,metrics.prometheusRule.enabled=true,backup.enabled=true,probes.liveness.enabled=true,ports.resp=6379,networkPolicy.apiFrom[0].podSelector.matchLabels.app=orders"},
}

// failCase is a set of values the chart must refuse, and a piece of the
// message that says why, from values.schema.json (so that `helm lint` and
// `helm install` refuse it before rendering) and from the templates' own
// `fail` (so that --skip-schema-validation does not get it through). An
// empty templateWant: the schema alone refuses it.
type failCase struct {
	name, set, schemaWant, templateWant string
}

var refused = []failCase{
	{"replicas 4", "replicas=4", "/replicas", "want 3 or 5 voters"},
	{"replicas 1", "replicas=1", "/replicas", "want 3 or 5 voters"},
	{"maxUnavailable 0", "pdb.maxUnavailable=0", "/pdb/maxUnavailable", "want 1 to 1 for 3 voters"},
	{"maxUnavailable 3 of 5", "replicas=5,pdb.maxUnavailable=3", "/pdb/maxUnavailable", "want 1 to 2 for 5 voters"},
	{"maxUnavailable 2 of 3", "pdb.maxUnavailable=2", "/pdb/maxUnavailable", "want 1 to 1 for 3 voters"},
	{"client auth", "tls.clientAuth=true", "/tls/clientAuth", "tls.clientAuth is refused"},
	{"no persistence", "persistence.enabled=false", "/persistence/enabled", "persistence.enabled=false is refused"},
	{"standby without join", strings.Replace(standbySet, "standby.join={https://ticketd.primary.example:8080},", "", 1), "/standby", "needs standby.join"},
	{"standby with the hook's CA", strings.Replace(standbySet, "tls.mode=existingSecret,", "", 1), "/tls/mode", "role=standby needs tls.mode=existingSecret"},
	{"standby without the primary's tokens", strings.Replace(standbySet, "auth.existingSecret=primary-auth,", "", 1), "/auth", "auth.existingSecret"},
	{"tag latest", "image.tag=latest", "/image/tag", "image.tag latest is refused"},
	{"tls off, no tokens", "tls.enabled=false", "/auth/existingSecret", "auth.existingSecret is needed"},
	{"cert-manager without tokens", "tls.mode=certManager", "/auth/existingSecret", "auth.existingSecret is needed"},
	{"existingSecret mode without a secret", "tls.mode=existingSecret,auth.existingSecret=tokens", "/tls/existingSecret", "tls.mode=existingSecret needs tls.existingSecret"},
	{"certificates for fewer ordinals", "replicas=5,tls.maxOrdinals=3", "/tls/maxOrdinals", "tls.maxOrdinals 3 is below replicas 5"},
	{"misspelt value", "replica=5", "replica", ""},
	{"retention policy typo", "persistence.retention.whenScaled=delete", "/persistence/retention/whenScaled", ""},
}

// values parses a --set string.
func values(set string) (map[string]any, error) {
	v := map[string]any{}
	if set == "" {
		return v, nil
	}
	if err := strvals.ParseInto(set, v); err != nil {
		return nil, fmt.Errorf("--set %q: %w", set, err)
	}
	return v, nil
}

// rc is one render of one case, with the values it was rendered from
// (values.yaml and the case's, coalesced as Helm does).
type rc struct {
	name string
	r    Rendered
	v    chartutil.Values
}

func (c *rc) full() string { return "r-ticketd" }

func (c *rc) val(path string) any {
	x, err := c.v.PathValue(path)
	if err != nil {
		return nil
	}
	return x
}

func (c *rc) str(path string) string {
	if x, ok := c.val(path).(string); ok {
		return x
	}
	return ""
}

func (c *rc) num(path string) int64 {
	switch x := c.val(path).(type) {
	case int64:
		return x
	case float64:
		return int64(x)
	case int:
		return int64(x)
	}
	return -1
}

func (c *rc) on(path string) bool { x, _ := c.val(path).(bool); return x }

func (c *rc) standby() bool { return c.str("role") == "standby" }

func (c *rc) initHook() bool { return c.on("tls.enabled") && c.str("tls.mode") == "hook" }

// problems collects what a check found, prefixed with the case.
type problems struct {
	prefix string
	list   []string
}

func (p *problems) add(format string, args ...any) {
	p.list = append(p.list, p.prefix+fmt.Sprintf(format, args...))
}

// renderBoth renders a case as an install and as an upgrade. The chart
// renders nothing differently for the two; the check says so.
func renderBoth(ch *chart.Chart, rcase renderCase) (*rc, error) {
	vals, err := values(rcase.set)
	if err != nil {
		return nil, err
	}
	install, err := Render(ch, vals, Release)
	if err != nil {
		return nil, err
	}
	up := Release
	up.IsInstall, up.IsUpgrade, up.Revision = false, true, 2
	upgrade, err := Render(ch, vals, up)
	if err != nil {
		return nil, fmt.Errorf("as an upgrade: %w", err)
	}
	if a, b := texts(install), texts(upgrade); !reflect.DeepEqual(a, b) {
		return nil, fmt.Errorf("renders differently as an install and as an upgrade")
	}
	merged, err := chartutil.CoalesceValues(ch, vals)
	if err != nil {
		return nil, err
	}
	return &rc{name: rcase.name, r: install, v: merged}, nil
}

func texts(r Rendered) []string {
	var out []string
	for _, o := range r.Objects {
		out = append(out, o.Text)
	}
	return out
}

// checkChart renders every case of the matrix and runs every check on
// each, then the checks across cases and the refused values. It returns
// every problem found; none for a chart that keeps DESIGN.md's promises.
func checkChart(ch *chart.Chart) []string { return checkChartUntil(ch, nil) }

// checkChartUntil is checkChart that stops at the first problem found
// accepts (nil: never), as a mutation's test needs only its own problem.
func checkChartUntil(ch *chart.Chart, found func(problem string) bool) []string {
	var all []string
	add := func(ps ...string) bool {
		all = append(all, ps...)
		for _, p := range ps {
			if found != nil && found(p) {
				return true
			}
		}
		return false
	}
	renders := map[string]*rc{}
	for _, rcase := range matrix {
		c, err := renderBoth(ch, rcase)
		if err != nil {
			if add(fmt.Sprintf("%s: render: %v", rcase.name, err)) {
				return all
			}
			continue
		}
		renders[rcase.name] = c
		p := &problems{prefix: rcase.name + ": "}
		for _, check := range checks {
			check(c, p)
		}
		if add(p.list...) {
			return all
		}
	}
	p := &problems{}
	checkSameTemplate(renders["defaults"], renders["replicas 5"], p)
	checkSameTemplate(renders["defaults"], renders["pdb off"], p)
	if add(p.list...) {
		return all
	}
	for _, f := range refused {
		vals, err := values(f.set)
		if err != nil {
			if add(fmt.Sprintf("refused %s: %v", f.name, err)) {
				return all
			}
			continue
		}
		_, err = Render(ch, vals, Release)
		if add(refusal("refused "+f.name+" (schema)", f.set, f.schemaWant, err)...) {
			return all
		}
		if f.templateWant != "" {
			_, err = RenderSkippingSchema(ch, vals, Release)
			if add(refusal("refused "+f.name+" (template)", f.set, f.templateWant, err)...) {
				return all
			}
		}
	}
	return all
}

func refusal(name, set, want string, err error) []string {
	switch {
	case err == nil:
		return []string{fmt.Sprintf("%s: --set %s renders, but the chart must refuse it", name, set)}
	case !strings.Contains(err.Error(), want):
		return []string{fmt.Sprintf("%s: refused, but not for %q: %v", name, want, err)}
	}
	return nil
}

// checkSameTemplate: the pod template must not depend on anything a scale
// or a budget change touches, or that change would roll every pod
// (DESIGN.md F11).
func checkSameTemplate(a, b *rc, p *problems) {
	if a == nil || b == nil {
		p.add("same template: a render is missing")
		return
	}
	sa, errA := statefulSet(a)
	sb, errB := statefulSet(b)
	if errA != nil || errB != nil {
		p.add("same template: %v %v", errA, errB)
		return
	}
	if !reflect.DeepEqual(sa.Spec.Template, sb.Spec.Template) {
		p.add("the StatefulSet's pod template differs between %q and %q: that change would roll every pod", a.name, b.name)
	}
}

func statefulSet(c *rc) (*appsv1.StatefulSet, error) {
	o, err := c.r.Find("StatefulSet", c.full())
	if err != nil {
		return nil, err
	}
	return o.Obj.(*appsv1.StatefulSet), nil
}
