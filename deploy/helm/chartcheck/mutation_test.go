package chartcheck

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// mutation is one deliberate break of the chart, and what checkChart must
// then report: each check can fail, and fails for the break it is about.
type mutation struct {
	file, old, new, want string
}

var mutations = []mutation{
	{"templates/statefulset.yaml", "podManagementPolicy: Parallel", "podManagementPolicy: OrderedReady", "podManagementPolicy"},
	{"templates/svc-peers.yaml", "publishNotReadyAddresses: true", "publishNotReadyAddresses: false", "peers Service: clusterIP"},
	{"templates/svc-standby.yaml", "  publishNotReadyAddresses: true\n", "", "standby Service"},
	{"templates/svc-client.yaml", "  type: {{ .Values.service.type }}", "  type: {{ .Values.service.type }}\n  publishNotReadyAddresses: true", "client Service: clusterIP"},
	{"templates/statefulset.yaml", "whenScaled: {{ .Values.persistence.retention.whenScaled }}", "whenScaled: Retain", "persistentVolumeClaimRetentionPolicy"},
	{"templates/pdb.yaml", `maxUnavailable: {{ include "ticketd.maxUnavailable" . }}`, "maxUnavailable: 1\n  minAvailable: 2", "minAvailable is set"},
	{"templates/pdb.yaml", `maxUnavailable: {{ include "ticketd.maxUnavailable" . }}`, "maxUnavailable: {{ sub .Values.replicas 2 }}", "PDB maxUnavailable"},
	{"templates/pdb.yaml", "unhealthyPodEvictionPolicy: IfHealthyBudget", "unhealthyPodEvictionPolicy: AlwaysAllow", "unhealthyPodEvictionPolicy"},
	{"templates/statefulset.yaml", "path: /readyz", "path: /livez", "readiness probe"},
	{"templates/statefulset.yaml", "path: /livez", "path: /readyz", "startup probe"},
	{"templates/statefulset.yaml", "{{- if .Values.probes.liveness.enabled }}", "{{- if true }}", "liveness probe is rendered"},
	{"templates/_helpers.tpl", "{{- range $i := until 3 -}}", "{{- range $i := until (int $.Values.replicas) -}}", "--initial-cluster"},
	{"templates/_helpers.tpl", `(printf "%s://%s-%d.%s:%d" $scheme`, `(printf "%s://%s-%d.%s:%d" "http"`, "--join"},
	{"templates/statefulset.yaml", "- --data-dir=/data", "- --data-dir=/data\n            - --note={{ .Values.replicas }}", "pod template differs"},
	{"templates/statefulset.yaml", "- --data-dir=/data", "- --data-dir=/data{{ if .Release.IsUpgrade }}x{{ end }}", "install and as an upgrade"},
	{"templates/statefulset.yaml", "- --id=$(POD_NAME)", "- --id=$(HOSTNAME)", "$(HOSTNAME)"},
	{"values.yaml", "readOnlyRootFilesystem: true", "readOnlyRootFilesystem: false", "container securityContext"},
	{"values.yaml", "type: RuntimeDefault", "type: Unconfined", "pod securityContext"},
	{"templates/hook-init.yaml", `{{- include "ticketd.containerSecurityContext" . | nindent 12 }}`, "allowPrivilegeEscalation: false", "r-ticketd-init/tls-init: container securityContext"},
	{"templates/statefulset.yaml", "containerPort:", "ContainerPort:", "strict decoding"},
	{"templates/svc-client.yaml", "spec:\n  type:", "spec:\n  tpye: ClusterIP\n  type:", "strict decoding"},
	{"templates/svc-client.yaml", "apiVersion: v1\nkind: Service", "apiVersion: example.com/v1\nkind: Service", "strict decoding"},
	{"templates/statefulset.yaml", "enableServiceLinks: false", "enableServiceLinks: true", "enableServiceLinks"},
	{"templates/statefulset.yaml", "automountServiceAccountToken: false", "automountServiceAccountToken: true", "automountServiceAccountToken"},
	{"templates/statefulset.yaml", "terminationGracePeriodSeconds: {{ add (int .Values.server.shutdownTimeoutSeconds) 10 }}", "terminationGracePeriodSeconds: 15", "terminationGracePeriodSeconds"},
	{"templates/networkpolicy.yaml", `{{- include "ticketd.serverSelector" . | nindent 14 }}`, `{{- include "ticketd.selectorLabels" . | nindent 14 }}`, "the Raft port admits"},
	{"templates/networkpolicy.yaml", `{{- include "ticketd.serverSelector" $ | nindent 14 }}`, `{{- include "ticketd.selectorLabels" $ | nindent 14 }}`, "with apiFrom set"},
	{"templates/networkpolicy.yaml", "            cidr: {{ . | quote }}", "            cidr: 0.0.0.0/0", "the Raft port admits"},
	{"templates/statefulset.yaml", "- topologyKey: {{ .Values.affinity.topologyKey }}", "- topologyKey: topology.kubernetes.io/zone", "anti-affinity"},
	{"templates/statefulset.yaml", "maxSkew: {{ .Values.topologySpread.maxSkew }}", "maxSkew: 2", "topologySpreadConstraints"},
	{"templates/hooks-rbac.yaml", `helm.sh/hook-weight: "-10"`, `helm.sh/hook-weight: "0"`, "hook-weight"},
	{"templates/hooks-rbac.yaml", "verbs: [get, update]", "verbs: [get, update, delete]", "Role rule"},
	{"templates/hooks-rbac.yaml", "verbs: [create]", "verbs: [create, list]", "Role rule"},
	{"templates/hook-init.yaml", "helm.sh/hook: pre-install,pre-upgrade", "helm.sh/hook: post-install", "init Job runs at"},
	{"templates/hook-init.yaml", `(printf "{id}.%s" $dom)`, `(printf "r-ticketd-0.%s" $dom)`, "--dns"},
	{"templates/statefulset.yaml", "mountPath: /tls\n              readOnly: true", "mountPath: /tls/ca.pem\n              subPath: ca.pem\n              readOnly: true", "subPath"},
	{"values.yaml", "podAnnotations: {}", "podAnnotations: {checksum/tls: abc}", "checksum"},
	{"templates/_helpers.tpl", "{{ .Values.image.repository }}:{{ $tag }}", "{{ .Values.image.repository }}:latest", "never latest"},
	{"templates/backup-cronjob.yaml", `image: {{ include "ticketd.image" . }}`, "image: ticketd:other", "same binary"},
	{"values.yaml", "limits:\n    memory: 1Gi", "limits:\n    cpu: \"1\"\n    memory: 1Gi", "CPU limit"},
	{"templates/hook-init.yaml", "              cpu: 50m\n", "", "want cpu and memory requests"},
	{"templates/_helpers.tpl", "    defaultMode: 0440\n{{- end -}}", "    defaultMode: 0444\n{{- end -}}", "defaultMode"},
	{"templates/statefulset.yaml", "  name: {{ $full }}\n", "  name: {{ $full }}\n  annotations:\n    helm.sh/hook: pre-install\n", "helm.sh/hook"},
	{"templates/servicemonitor.yaml", "jobLabel: ticketd.io/prometheus-job", "jobLabel: app.kubernetes.io/name", "ServiceMonitor jobLabel"},
	{"templates/svc-peers.yaml", "standby-{{ .Release.Name }}", "ticketd-standby-{{ .Release.Name }}", "job label"},
	{"templates/prometheusrule.yaml", "{{- toYaml $rules.groups | nindent 4 }}", "{{- toYaml (rest $rules.groups) | nindent 4 }}", "PrometheusRule groups differ"},
	{"templates/backup-cronjob.yaml", "- --keep={{ int .Values.backup.keep }}", "- --keep=24", "backup --keep"},
	{"templates/backup-pvc.yaml", "helm.sh/resource-policy: keep", "helm.sh/resource-policy: delete", "resource-policy"},
	{"values.schema.json", `"enum": [`, `"minimum": 1, "x": [`, "refused replicas 4 (schema)"},
	{"templates/_helpers.tpl", "(not (has (int .Values.replicas) (list 3 5)))", "false", "refused replicas 4 (template)"},
	{"templates/certmanager.yaml", "- {{ $full }}-{{ $i }}.{{ $dom }}", "- {{ $full }}-0.{{ $dom }}", "must name only its own pod"},
	{"templates/certmanager.yaml", "    - client auth\n", "", "usages"},
	{"templates/certmanager.yaml", "    name: {{ $full }}-ca\n    kind: Issuer", "    name: {{ $full }}-selfsigned\n    kind: Issuer", "issued by"},
	{"templates/certmanager.yaml", "  isCA: true", "  isCA: false", "CA Certificate"},
	{"templates/_helpers.tpl", "path: {{ $full }}-{{ $i }}-key.pem", "path: {{ $full }}-{{ $i }}.key", "projected tls volume"},
	{"templates/_helpers.tpl", "{{- if eq $i 0 }}", "{{- if eq $i 7 }}", "no ca.pem"},
	{"templates/_helpers.tpl", "    defaultMode: 0440\n    sources:", "    defaultMode: 0444\n    sources:", "projected volume tls: defaultMode"},
	{"templates/_helpers.tpl", "{{ include \"ticketd.fullname\" . }}-tls-0 ca.crt", "{{ include \"ticketd.fullname\" . }}-tls-0 ca.pem", "ServiceMonitor TLS"},
	{"templates/hook-reconcile.yaml", "helm.sh/hook: pre-upgrade,pre-rollback", "helm.sh/hook: pre-upgrade", "reconcile Job runs at"},
	{"templates/hook-reconcile.yaml", `helm.sh/hook-weight: "5"`, `helm.sh/hook-weight: "-5"`, "reconcile Job hook-weight"},
	{"templates/hook-reconcile.yaml", "helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded", "helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded,hook-failed", "reconcile Job hook-delete-policy"},
	{"templates/hook-reconcile.yaml", "backoffLimit: 3", "backoffLimit: 30", "reconcile Job backoffLimit"},
	{"templates/hook-reconcile.yaml", "- --replicas={{ int .Values.replicas }}", "- --replicas=3", "reconcile --replicas"},
	{"templates/hook-reconcile.yaml", "- --id-prefix={{ $full }}-", "- --id-prefix={{ $full }}", "reconcile --id-prefix"},
	{"templates/hook-reconcile.yaml", `- --addr={{ include "ticketd.seedURLs" . }}`, `- --addr={{ include "ticketd.clientURL" . }}`, "reconcile --addr"},
	{"templates/hook-reconcile.yaml", "- --timeout=10m", "- --timeout=10s", "reconcile --timeout"},
	{"templates/hook-reconcile.yaml", `{{- if eq .Values.role "primary" }}`, "{{- if true }}", "reconcile Job rendered for a standby"},
	{"templates/hook-reconcile.yaml", `{{- if eq .Values.role "primary" }}`, "{{- if false }}", "no reconcile Job"},
	{"templates/hook-reconcile.yaml", "automountServiceAccountToken: false", "automountServiceAccountToken: true", "r-ticketd-reconcile: automountServiceAccountToken"},
	{"templates/hook-reconcile.yaml", "mountPath: /etc/ticketd/auth", "mountPath: /auth", "reconcile Job mounts"},
	{"templates/svc-client.yaml", "    {{- end }}\n", "    {{- end }}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n", "rendered kinds"},
}

// TestMutations breaks the chart one way at a time, in a copy, and checks
// that checkChart reports the break: no check here passes whatever the
// chart says.
func TestMutations(t *testing.T) {
	for _, m := range mutations {
		t.Run(m.file+": "+m.want, func(t *testing.T) {
			t.Parallel()
			dir := copyChart(t)
			path := filepath.Join(dir, m.file)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), m.old) {
				t.Fatalf("the mutation does not apply: %s has no %q", m.file, m.old)
			}
			if err := os.WriteFile(path, []byte(strings.Replace(string(b), m.old, m.new, 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			ch, err := LoadChartFrom(dir)
			if err != nil {
				t.Fatalf("load the mutated chart: %v", err)
			}
			problems := checkChartUntil(ch, func(p string) bool { return strings.Contains(p, m.want) })
			for _, p := range problems {
				if strings.Contains(p, m.want) {
					return
				}
			}
			t.Errorf("replacing %q with %q in %s: no problem mentions %q; found %d others: %.2000s",
				m.old, m.new, m.file, m.want, len(problems), strings.Join(problems, "\n"))
		})
	}
}

// copyChart copies the chart to a temporary directory, symlinks resolved.
func copyChart(t *testing.T) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "ticketd")
	err := filepath.WalkDir(ChartDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(ChartDir, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(path) // follows symlinks
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}
