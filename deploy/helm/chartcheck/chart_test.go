package chartcheck

import (
	"os"
	"strings"
	"sync"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v3/pkg/chart"
	"sigs.k8s.io/yaml"
)

// RulesFile is the repository's Prometheus rules, which the chart's
// files/ticketd-rules.yml links to.
const RulesFile = "../../prometheus/ticketd-rules.yml"

var loaded = sync.OnceValues(LoadChart)

func chartT(t *testing.T) *chart.Chart {
	t.Helper()
	ch, err := loaded()
	if err != nil {
		t.Fatalf("load %s: %v", ChartDir, err)
	}
	return ch
}

// renderT renders the chart with `helm --set` values, failing the test on
// any error.
func renderT(t *testing.T, set string) Rendered {
	t.Helper()
	vals, err := values(set)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Render(chartT(t), vals, Release)
	if err != nil {
		t.Fatalf("render --set %q: %v", set, err)
	}
	return r
}

// repoRules decodes the repository's rules file strictly into the
// PrometheusRule spec the chart's PrometheusRule must equal.
func repoRules() (monitoringv1.PrometheusRuleSpec, error) {
	var spec monitoringv1.PrometheusRuleSpec
	b, err := os.ReadFile(RulesFile)
	if err != nil {
		return spec, err
	}
	err = yaml.UnmarshalStrict(b, &spec)
	return spec, err
}

// TestChart renders every case of the matrix as an install and as an
// upgrade, decodes every object strictly, and runs every check: the
// promises of DESIGN.md, each read against the values of the case.
func TestChart(t *testing.T) {
	for _, problem := range checkChart(chartT(t)) {
		t.Error(problem)
	}
}

// TestChart_RulesFileIsTheRepositorys: files/ticketd-rules.yml is the
// repository's rules (a symlink, followed by Helm's loader), not a copy
// that could go stale.
func TestChart_RulesFileIsTheRepositorys(t *testing.T) {
	ch := chartT(t)
	want, err := os.ReadFile(RulesFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range ch.Files {
		if f.Name == "files/ticketd-rules.yml" {
			if string(f.Data) != string(want) {
				t.Fatalf("the chart's files/ticketd-rules.yml differs from %s", RulesFile)
			}
			return
		}
	}
	t.Fatal("the chart has no files/ticketd-rules.yml")
}

// TestChart_Notes: NOTES.txt renders, warns against shrinking first, and
// says where the CA is in each TLS mode.
func TestChart_Notes(t *testing.T) {
	for _, tc := range []struct{ set, ca string }{
		{"", `get secret r-ticketd-tls -o jsonpath='{.data.ca\.pem}'`},
		{"tls.mode=certManager,auth.existingSecret=tokens", `get secret r-ticketd-tls-0 -o jsonpath='{.data.ca\.crt}'`},
	} {
		r := renderT(t, tc.set)
		for _, want := range []string{"r-ticketd-0 to r-ticketd-2", "Never lower replicas first", "https://r-ticketd.ns.svc.cluster.local:8080", tc.ca} {
			if !strings.Contains(r.Notes, want) {
				t.Errorf("--set %q: NOTES.txt lacks %q:\n%s", tc.set, want, r.Notes)
			}
		}
	}
}
