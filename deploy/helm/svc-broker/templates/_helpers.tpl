{{/* Names shared by the templates. */}}
{{- define "svc-broker.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 55 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 55 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "svc-broker.headless" -}}
{{- printf "%s-nodes" (include "svc-broker.fullname" .) -}}
{{- end -}}

{{- define "svc-broker.secretName" -}}
{{- default (printf "%s-cluster" (include "svc-broker.fullname" .)) .Values.cluster.existingSecret -}}
{{- end -}}

{{- define "svc-broker.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "svc-broker.selector" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* One pod's DNS name under the headless service: svc-broker.podHost (list $ ordinal). */}}
{{- define "svc-broker.podHost" -}}
{{- $root := index . 0 -}}
{{- printf "%s-%d.%s.%s.svc.%s" (include "svc-broker.fullname" $root) (index . 1) (include "svc-broker.headless" $root) $root.Release.Namespace $root.Values.cluster.clusterDomain -}}
{{- end -}}

{{/* The founding voters: id=host:internal-port for ordinals 0 .. founders-1, ids from 1. */}}
{{- define "svc-broker.bootstrap" -}}
{{- $root := . -}}
{{- $voters := list -}}
{{- range $ordinal := until (int .Values.cluster.founders) -}}
{{- $voters = append $voters (printf "%d=%s:%d" (add1 $ordinal) (include "svc-broker.podHost" (list $root $ordinal)) (int $root.Values.ports.internal)) -}}
{{- end -}}
{{- join "," $voters -}}
{{- end -}}
