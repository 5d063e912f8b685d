{{/* Names. fullname is the release name when it already says ticketd. */}}
{{- define "ticketd.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "ticketd.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "ticketd.peers" -}}{{ include "ticketd.fullname" . }}-peers{{- end -}}

{{/* The pods' DNS domain: <pod>.<peers>.<ns>.svc.<clusterDomain>. */}}
{{- define "ticketd.peerDomain" -}}
{{ include "ticketd.peers" . }}.{{ .Release.Namespace }}.svc.{{ .Values.clusterDomain }}
{{- end -}}

{{- define "ticketd.scheme" -}}{{ if .Values.tls.enabled }}https{{ else }}http{{ end }}{{- end -}}

{{- define "ticketd.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "ticketd.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "ticketd.selectorLabels" -}}
app.kubernetes.io/name: {{ include "ticketd.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The server pods; hook and backup pods carry other components. */}}
{{- define "ticketd.serverSelector" -}}
{{ include "ticketd.selectorLabels" . }}
app.kubernetes.io/component: server
{{- end -}}

{{- define "ticketd.image" -}}
{{- $tag := .Values.image.tag | default .Chart.AppVersion -}}
{{- if eq $tag "latest" -}}
{{- fail "image.tag latest is refused: pin a release (or image.digest) so that every pod, hook and backup runs the same binary" -}}
{{- end -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ $tag }}
{{- end -}}
{{- end -}}

{{/* Seeds: ordinals 0-2, whatever replicas says, so that a scale changes no
pod's flags (DESIGN.md 3.2). Every pod gets the same list. */}}
{{- define "ticketd.initialCluster" -}}
{{- $full := include "ticketd.fullname" . -}}
{{- $dom := include "ticketd.peerDomain" . -}}
{{- $out := list -}}
{{- range $i := until 3 -}}
{{- $out = append $out (printf "%s-%d=%s-%d.%s:%d" $full $i $full $i $dom (int $.Values.ports.raft)) -}}
{{- end -}}
{{- join "," $out -}}
{{- end -}}

{{/* The seeds' API URLs: what every pod joins through, and what hooks ask. */}}
{{- define "ticketd.seedURLs" -}}
{{- $full := include "ticketd.fullname" . -}}
{{- $dom := include "ticketd.peerDomain" . -}}
{{- $scheme := include "ticketd.scheme" . -}}
{{- $out := list -}}
{{- range $i := until 3 -}}
{{- $out = append $out (printf "%s://%s-%d.%s:%d" $scheme $full $i $dom (int $.Values.ports.http)) -}}
{{- end -}}
{{- join "," $out -}}
{{- end -}}

{{/* The clients' URL, inside the cluster. */}}
{{- define "ticketd.clientURL" -}}
{{ include "ticketd.scheme" . }}://{{ include "ticketd.fullname" . }}.{{ .Release.Namespace }}.svc.{{ .Values.clusterDomain }}:{{ .Values.ports.http }}
{{- end -}}

{{- define "ticketd.authSecret" -}}
{{- .Values.auth.existingSecret | default (printf "%s-auth" (include "ticketd.fullname" .)) -}}
{{- end -}}

{{- define "ticketd.tlsSecret" -}}
{{- if eq .Values.tls.mode "existingSecret" -}}
{{- .Values.tls.existingSecret -}}
{{- else -}}
{{- include "ticketd.fullname" . }}-tls
{{- end -}}
{{- end -}}

{{- define "ticketd.caSecret" -}}{{ include "ticketd.fullname" . }}-ca{{- end -}}

{{/* Whether the init hook runs: with tls.mode=hook it makes the TLS
Secrets, and the tokens Secret unless auth.existingSecret is given. */}}
{{- define "ticketd.initHook" -}}
{{- if and .Values.tls.enabled (eq .Values.tls.mode "hook") -}}true{{- end -}}
{{- end -}}

{{/* maxUnavailable of the PDB: 1 unless overridden, never 0, never more
than the voters' fault tolerance (DESIGN.md 3.5). */}}
{{- define "ticketd.maxUnavailable" -}}
{{- $n := int .Values.replicas -}}
{{- $tol := div (sub $n 1) 2 -}}
{{- $mu := 1 -}}
{{- if not (kindIs "invalid" .Values.pdb.maxUnavailable) -}}
{{- $mu = int .Values.pdb.maxUnavailable -}}
{{- end -}}
{{- if or (lt $mu 1) (gt $mu $tol) -}}
{{- fail (printf "pdb.maxUnavailable %d: want 1 to %d for %d voters (0 blocks every drain; more costs quorum)" $mu $tol $n) -}}
{{- end -}}
{{- $mu -}}
{{- end -}}

{{/* Checks every template shares: the combinations the chart refuses. */}}
{{- define "ticketd.validate" -}}
{{- if not .Values.persistence.enabled -}}
{{- fail "persistence.enabled=false is refused: a voter restarted without its log and votes can elect a second leader and hand out IDs twice" -}}
{{- end -}}
{{- if and (eq .Values.role "primary") (not (has (int .Values.replicas) (list 3 5))) -}}
{{- fail (printf "replicas %v: want 3 or 5 voters (an even count tolerates no more failures than one fewer)" .Values.replicas) -}}
{{- end -}}
{{- if .Values.tls.clientAuth -}}
{{- fail "tls.clientAuth is refused: the kubelet's HTTPS probes present no client certificate, so every pod would turn not Ready" -}}
{{- end -}}
{{- if and .Values.tls.enabled (eq .Values.tls.mode "existingSecret") (not .Values.tls.existingSecret) -}}
{{- fail "tls.mode=existingSecret needs tls.existingSecret" -}}
{{- end -}}
{{- if lt (int .Values.tls.maxOrdinals) (int .Values.replicas) -}}
{{- fail (printf "tls.maxOrdinals %v is below replicas %v: ordinals without a certificate cannot start" .Values.tls.maxOrdinals .Values.replicas) -}}
{{- end -}}
{{- if and (not .Values.auth.existingSecret) (not (include "ticketd.initHook" .)) -}}
{{- fail "auth.existingSecret is needed unless tls.enabled and tls.mode=hook: the init hook that makes the tokens Secret runs only then" -}}
{{- end -}}
{{- if eq .Values.role "standby" -}}
{{- if or (not .Values.standby.join) (not .Values.standby.raftAdvertise) (not .Values.standby.httpAdvertise) -}}
{{- fail "role=standby needs standby.join, standby.raftAdvertise and standby.httpAdvertise" -}}
{{- end -}}
{{- if not .Values.auth.existingSecret -}}
{{- fail "role=standby needs auth.existingSecret holding the primary's tokens: the standby joins with its admin token" -}}
{{- end -}}
{{- if and .Values.tls.enabled (ne .Values.tls.mode "existingSecret") -}}
{{- fail "role=standby needs tls.mode=existingSecret: a certificate signed by the primary's CA for standby.raftAdvertise's name" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The pod securityContext shared by the server, hooks and backups. */}}
{{- define "ticketd.podSecurityContext" -}}
{{ toYaml .Values.podSecurityContext }}
{{- end -}}

{{- define "ticketd.containerSecurityContext" -}}
{{ toYaml .Values.securityContext }}
{{- end -}}

{{/* The Secret and key holding the CA certificate, for hooks, backups and
the ServiceMonitor: cert-manager puts it in every node Secret as ca.crt. */}}
{{- define "ticketd.caRef" -}}
{{- if eq .Values.tls.mode "certManager" -}}
{{ include "ticketd.fullname" . }}-tls-0 ca.crt
{{- else -}}
{{ include "ticketd.tlsSecret" . }} ca.pem
{{- end -}}
{{- end -}}

{{/* The TLS volume of a server pod: whole Secrets, never subPath, so the
kubelet's updates reach the files and ticketd reloads them. With
cert-manager, one Secret per ordinal is projected under the names the
flags use: /tls/<pod>.pem, /tls/<pod>-key.pem and /tls/ca.pem. */}}
{{- define "ticketd.tlsVolume" -}}
{{- $full := include "ticketd.fullname" . -}}
{{- if eq .Values.tls.mode "certManager" -}}
- name: tls
  projected:
    defaultMode: 0440
    sources:
      {{- range $i := until (int .Values.tls.maxOrdinals) }}
      - secret:
          name: {{ $full }}-tls-{{ $i }}
          items:
            - key: tls.crt
              path: {{ $full }}-{{ $i }}.pem
            - key: tls.key
              path: {{ $full }}-{{ $i }}-key.pem
            {{- if eq $i 0 }}
            - key: ca.crt
              path: ca.pem
            {{- end }}
      {{- end }}
{{- else -}}
- name: tls
  secret:
    secretName: {{ include "ticketd.tlsSecret" . }}
    defaultMode: 0440
{{- end -}}
{{- end -}}

{{/* ca.pem alone, for hooks and backups. */}}
{{- define "ticketd.caVolume" -}}
{{- $ref := splitList " " (include "ticketd.caRef" .) -}}
- name: tls
  secret:
    secretName: {{ index $ref 0 }}
    defaultMode: 0440
    items:
      - key: {{ index $ref 1 }}
        path: ca.pem
{{- end -}}

{{/* The admin token alone, for hooks and backups. */}}
{{- define "ticketd.adminTokenVolume" -}}
- name: auth
  secret:
    secretName: {{ include "ticketd.authSecret" . }}
    defaultMode: 0440
    items:
      - key: admin.token
        path: admin.token
{{- end -}}

{{- define "ticketd.tmpVolume" -}}
- name: tmp
  emptyDir:
    sizeLimit: 64Mi
{{- end -}}

{{/* Flags of client commands run in hooks and backups. */}}
{{- define "ticketd.clientTLSArgs" -}}
{{- if .Values.tls.enabled }}
- --ca=/tls/ca.pem
{{- end }}
- --token-file=/etc/ticketd/auth/admin.token
{{- end -}}
