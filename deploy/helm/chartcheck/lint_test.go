package chartcheck

import (
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
)

// TestLint is `helm lint --strict` through Helm's own linter, for every
// case of the matrix: any message at warning or above fails.
func TestLint(t *testing.T) {
	kv, err := chartutil.ParseKubeVersion(KubeVersion)
	if err != nil {
		t.Fatal(err)
	}
	for _, rcase := range matrix {
		vals, err := values(rcase.set)
		if err != nil {
			t.Fatal(err)
		}
		linter := lint.AllWithKubeVersion(ChartDir, vals, Release.Namespace, kv)
		for _, m := range linter.Messages {
			if m.Severity >= support.WarningSev {
				t.Errorf("%s: %s", rcase.name, m)
			}
		}
	}
}

// TestLint_CatchesRefusedValues: the same linter fails the refused values,
// so that TestLint could fail at all.
func TestLint_CatchesRefusedValues(t *testing.T) {
	kv, err := chartutil.ParseKubeVersion(KubeVersion)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range refused {
		vals, err := values(f.set)
		if err != nil {
			t.Fatal(err)
		}
		linter := lint.AllWithKubeVersion(ChartDir, vals, Release.Namespace, kv)
		if linter.HighestSeverity < support.ErrorSev {
			t.Errorf("refused %s: helm lint finds nothing wrong with --set %s", f.name, f.set)
		}
	}
}
