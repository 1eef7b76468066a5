{{/* Labels of the top-level objects; pod labels stay the ones the selectors use. */}}
{{- define "listener-operator.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "listener-operator.image" -}}
{{ .repository }}:{{ .tag }}
{{- end }}

{{- define "listener-operator.imagePullSecrets" -}}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
listener-operator.files renders the objects of a file under files/ (copied
from config/ by `make helm-sync`), in the release's namespace and with the
chart's labels added. Arguments: (list $ "files/x.yaml").
*/}}
{{- define "listener-operator.files" -}}
{{- $root := index . 0 }}
{{- range $doc := regexSplit "(?m)^---\\s*$" ($root.Files.Get (index . 1)) -1 }}
{{- $obj := fromYaml $doc }}
{{- if $obj }}
{{- if $obj.metadata.namespace }}
{{- $_ := set $obj.metadata "namespace" $root.Release.Namespace }}
{{- end }}
{{- $labels := merge (default dict $obj.metadata.labels) (fromYaml (include "listener-operator.labels" $root)) }}
{{- $_ := set $obj.metadata "labels" $labels }}
{{- if $obj.webhooks }}
{{- range $w := $obj.webhooks }}
{{- if $w.clientConfig.service }}
{{- $_ := set $w.clientConfig.service "namespace" $root.Release.Namespace }}
{{- end }}
{{- end }}
{{- if eq $root.Values.certMode "cert-manager" }}
{{- $_ := set $obj.metadata "annotations" (merge (default dict $obj.metadata.annotations) (dict "cert-manager.io/inject-ca-from" (printf "%s/listener-operator-ca" $root.Release.Namespace))) }}
{{- end }}
{{- end }}
---
{{ toYaml $obj }}
{{- end }}
{{- end }}
{{- end }}
