// Package chartcheck renders the ticketd Helm chart (deploy/helm/ticketd)
// with Helm's own engine, decodes every manifest strictly into the
// Kubernetes API types and lets the tests in this module assert what the
// chart's DESIGN.md promises. It is a module of its own, outside go.work,
// so that the server's module never depends on Helm or client-go: run it
// with GOWORK=off (scripts/helm-check.sh does).
package chartcheck

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// ChartDir is the chart under test, relative to this module.
const ChartDir = "../ticketd"

// Release names the release every render uses: fullname "r-ticketd" in
// namespace "ns", as DESIGN.md's examples.
var Release = chartutil.ReleaseOptions{Name: "r", Namespace: "ns", Revision: 1, IsInstall: true}

// KubeVersion is the cluster version renders assume: the oldest the chart's
// kubeVersion admits is 1.27; 1.31 is a version platform teams run.
const KubeVersion = "v1.31.0"

// Capabilities is what the renders see: Kubernetes 1.31 with the
// prometheus-operator and cert-manager CRDs installed.
func Capabilities() (*chartutil.Capabilities, error) {
	kv, err := chartutil.ParseKubeVersion(KubeVersion)
	if err != nil {
		return nil, err
	}
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = *kv
	caps.APIVersions = append(append(chartutil.VersionSet{}, caps.APIVersions...),
		"monitoring.coreos.com/v1", "monitoring.coreos.com/v1/ServiceMonitor", "monitoring.coreos.com/v1/PrometheusRule",
		"cert-manager.io/v1", "cert-manager.io/v1/Certificate", "cert-manager.io/v1/Issuer")
	return caps, nil
}

// Object is one rendered manifest: the template it came from, its text and
// the typed object strict decoding made of it.
type Object struct {
	Template string
	Text     string
	Obj      runtime.Object
	Meta     *unstructured.Unstructured
}

// Kind is the object's kind, e.g. "StatefulSet".
func (o Object) Kind() string { return o.Meta.GetKind() }

// Name is the object's metadata.name.
func (o Object) Name() string { return o.Meta.GetName() }

// Hook is the object's helm.sh/hook annotation ("" for an ordinary
// resource).
func (o Object) Hook() string { return o.Meta.GetAnnotations()["helm.sh/hook"] }

// Rendered is one render of the chart.
type Rendered struct {
	Objects []Object
	Notes   string
}

// Find returns the one object of that kind and name, or an error.
func (r Rendered) Find(kind, name string) (Object, error) {
	for _, o := range r.Objects {
		if o.Kind() == kind && o.Name() == name {
			return o, nil
		}
	}
	return Object{}, fmt.Errorf("no %s %q among %v", kind, name, r.Names())
}

// OfKind returns every object of that kind, in render order.
func (r Rendered) OfKind(kind string) []Object {
	var out []Object
	for _, o := range r.Objects {
		if o.Kind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// Names lists "Kind/name" of every object, for messages.
func (r Rendered) Names() []string {
	var out []string
	for _, o := range r.Objects {
		out = append(out, o.Kind()+"/"+o.Name())
	}
	return out
}

// LoadChart loads the chart directory as `helm install` would (symlinks
// followed, .helmignore applied).
func LoadChart() (*chart.Chart, error) {
	return loader.Load(ChartDir)
}

// LoadChartFrom loads a chart from another directory (the mutation tests'
// copies).
func LoadChartFrom(dir string) (*chart.Chart, error) {
	return loader.Load(dir)
}

// Render renders the chart with the given values over values.yaml, as
// `helm template` does: values checked against values.schema.json, the
// chart's kubeVersion checked, missing values an error (engine Strict).
// Every manifest is decoded strictly (see Decode).
func Render(ch *chart.Chart, vals map[string]any, opts chartutil.ReleaseOptions) (Rendered, error) {
	return render(ch, vals, opts, false)
}

// RenderSkippingSchema renders as `helm template --skip-schema-validation`:
// what the templates themselves refuse, with values.schema.json out of the
// way.
func RenderSkippingSchema(ch *chart.Chart, vals map[string]any, opts chartutil.ReleaseOptions) (Rendered, error) {
	return render(ch, vals, opts, true)
}

func render(ch *chart.Chart, vals map[string]any, opts chartutil.ReleaseOptions, skipSchema bool) (Rendered, error) {
	caps, err := Capabilities()
	if err != nil {
		return Rendered{}, err
	}
	if ch.Metadata.KubeVersion != "" && !chartutil.IsCompatibleRange(ch.Metadata.KubeVersion, caps.KubeVersion.String()) {
		return Rendered{}, fmt.Errorf("chart requires kubeVersion %s, renders assume %s", ch.Metadata.KubeVersion, caps.KubeVersion.String())
	}
	top, err := chartutil.ToRenderValuesWithSchemaValidation(ch, vals, opts, caps, skipSchema)
	if err != nil {
		return Rendered{}, err
	}
	out, err := engine.Engine{Strict: true}.Render(ch, top)
	if err != nil {
		return Rendered{}, err
	}
	names := make([]string, 0, len(out))
	for name := range out {
		names = append(names, name)
	}
	sort.Strings(names)
	var r Rendered
	for _, name := range names {
		text := out[name]
		if filepath.Base(name) == "NOTES.txt" {
			r.Notes = text
			continue
		}
		docs, err := splitDocs(text)
		if err != nil {
			return Rendered{}, fmt.Errorf("%s: %w", name, err)
		}
		for _, doc := range docs {
			obj, meta, err := Decode([]byte(doc))
			if err != nil {
				return Rendered{}, fmt.Errorf("%s: %w\n%s", name, err, doc)
			}
			r.Objects = append(r.Objects, Object{Template: name, Text: doc, Obj: obj, Meta: meta})
		}
	}
	return r, nil
}

// splitDocs splits a rendered template into its YAML documents, dropping
// those that hold nothing but comments and blank lines (as Helm does).
func splitDocs(text string) ([]string, error) {
	rd := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(text)))
	var docs []string
	for {
		b, err := rd.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		if hasContent(b) {
			docs = append(docs, string(b))
		}
	}
}

func hasContent(doc []byte) bool {
	for _, line := range bytes.Split(doc, []byte("\n")) {
		t := bytes.TrimSpace(line)
		if len(t) > 0 && t[0] != '#' && !bytes.Equal(t, []byte("---")) {
			return true
		}
	}
	return false
}
