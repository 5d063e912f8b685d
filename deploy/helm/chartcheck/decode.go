package chartcheck

import (
	"fmt"

	certmanagerv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"sigs.k8s.io/yaml"
)

// scheme knows exactly the API groups the chart may render. An object of
// any other group or kind fails to decode.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		appsv1.AddToScheme, batchv1.AddToScheme, corev1.AddToScheme, networkingv1.AddToScheme,
		policyv1.AddToScheme, rbacv1.AddToScheme, monitoringv1.AddToScheme, certmanagerv1.AddToScheme,
	} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}()

// strict is apimachinery's strict YAML serializer: an unknown field, a
// field spelled in another case (ContainerPort for containerPort) or a
// duplicate field is an error, as `kubectl apply --validate=strict` makes
// it on a real API server.
var strict = json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme, scheme,
	json.SerializerOptions{Yaml: true, Strict: true})

// Decode decodes one YAML manifest strictly into its typed object, and also
// into an unstructured copy for its kind, name and annotations.
func Decode(doc []byte) (runtime.Object, *unstructured.Unstructured, error) {
	obj, gvk, err := strict.Decode(doc, nil, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("strict decoding: %w", err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(doc, &m); err != nil {
		return nil, nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	if u.GetName() == "" {
		return nil, nil, fmt.Errorf("%s has no metadata.name", gvk)
	}
	return obj, u, nil
}
