{{/*
Chart name, truncated to 63 characters (a label value limit).
*/}}
{{- define "wmap.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Full name of the release's resources: <release>-<chart>, or <release> when it already contains
the chart name; truncated to 63 characters.
*/}}
{{- define "wmap.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
helm.sh/chart label value: <chart>-<version>.
*/}}
{{- define "wmap.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Selector labels: stable for the life of a release (Deployment selectors are immutable).
*/}}
{{- define "wmap.selectorLabels" -}}
app.kubernetes.io/name: {{ include "wmap.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/*
Standard labels on every object.
*/}}
{{- define "wmap.labels" -}}
helm.sh/chart: {{ include "wmap.chart" . }}
{{ include "wmap.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: server
app.kubernetes.io/part-of: workload-map
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/*
The ServiceAccount the pods run as.
*/}}
{{- define "wmap.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "wmap.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
The image reference: repository@digest, or repository:tag (tag defaults to appVersion).
*/}}
{{- define "wmap.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/*
Name of the ConfigMap with extra definitions ("" when there is none).
*/}}
{{- define "wmap.definitionsConfigMap" -}}
{{- if .Values.extraDefinitionsConfigMap }}
{{- .Values.extraDefinitionsConfigMap }}
{{- else if .Values.extraDefinitions }}
{{- printf "%s-definitions" (include "wmap.fullname" .) }}
{{- end }}
{{- end }}

{{/*
Fail early on values the server would reject.
*/}}
{{- define "wmap.validate" -}}
{{- if not (has .Values.auth.mode (list "kubernetes" "none")) }}
{{- fail (printf "auth.mode must be kubernetes or none, got %q" .Values.auth.mode) }}
{{- end }}
{{- if not (has .Values.server.logFormat (list "json" "text")) }}
{{- fail (printf "server.logFormat must be json or text, got %q" .Values.server.logFormat) }}
{{- end }}
{{- if and .Values.impersonation.enabled (ne .Values.auth.mode "kubernetes") }}
{{- fail "impersonation.enabled needs auth.mode=kubernetes (the caller must be known to be impersonated)" }}
{{- end }}
{{- if and .Values.impersonation.enabled (not .Values.rbac.allowRegistration) }}
{{- fail "impersonation.enabled needs rbac.allowRegistration=true (impersonation is only used for Karta writes)" }}
{{- end }}
{{- end }}

{{/*
Pod anti-affinity spreading the replicas over nodes (kubernetes.io/hostname), soft or hard
(https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#inter-pod-affinity-and-anti-affinity).
*/}}
{{- define "wmap.podAntiAffinity" -}}
{{- $term := dict "topologyKey" "kubernetes.io/hostname" "labelSelector" (dict "matchLabels" (include "wmap.selectorLabels" . | fromYaml)) -}}
podAntiAffinity:
{{- if eq .Values.podAntiAffinity "hard" }}
  requiredDuringSchedulingIgnoredDuringExecution:
    {{- list $term | toYaml | nindent 4 }}
{{- else }}
  preferredDuringSchedulingIgnoredDuringExecution:
    {{- list (dict "weight" 100 "podAffinityTerm" $term) | toYaml | nindent 4 }}
{{- end }}
{{- end }}
