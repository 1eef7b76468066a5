{{/* The app name (label app.kubernetes.io/name). */}}
{{- define "listener-operator.name" -}}
{{- default "listener-operator" .Values.nameOverride | trunc 40 | trimSuffix "-" }}
{{- end }}

{{/*
The prefix of every object name. It does not depend on the release name, so
that the names docs/install.md uses hold for any release.
*/}}
{{- define "listener-operator.fullname" -}}
{{- default (include "listener-operator.name" .) .Values.fullnameOverride | trunc 40 | trimSuffix "-" }}
{{- end }}

{{/*
listener-operator.rename turns a name of the generated manifests
(listener-operator[-suffix]) into this release's (<fullname>[-suffix]).
Arguments: (list $ "name").
*/}}
{{- define "listener-operator.rename" -}}
{{- $root := index . 0 }}{{ $n := index . 1 }}
{{- if hasPrefix "listener-operator" $n }}
{{- printf "%s%s" (include "listener-operator.fullname" $root) (trimPrefix "listener-operator" $n) }}
{{- else }}
{{- $n }}
{{- end }}
{{- end }}

{{/* Labels of the top-level objects: the chart's and .Values.labels. */}}
{{- define "listener-operator.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- with .Values.labels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Selector labels of a component. Arguments: (list $ "component"). */}}
{{- define "listener-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "listener-operator.name" (index . 0) }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end }}

{{/* Labels and annotations of a component's pod template. Arguments: (list $ "component" podAnnotations). */}}
{{- define "listener-operator.podMetadata" -}}
{{- $root := index . 0 }}
labels:
  {{- include "listener-operator.selectorLabels" (list $root (index . 1)) | nindent 2 }}
  {{- with $root.Values.labels }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- with index . 2 }}
annotations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/*
Service account names. The chart creates three (least privilege: each
workload is bound only to its own ClusterRole). With serviceAccount.create
false, serviceAccount.name names the account of every workload, as in the
existing chart (stackabletech #418: one account they bring): the CSI ones
take it unless csiProvisioner/csiNodeDriver.serviceAccountName say otherwise.
*/}}
{{- define "listener-operator.serviceAccountName" -}}
{{- default (include "listener-operator.fullname" .) .Values.serviceAccount.name }}
{{- end }}
{{- define "listener-operator.sharedServiceAccountName" -}}
{{- if not .Values.serviceAccount.create }}{{ .Values.serviceAccount.name }}{{ end }}
{{- end }}
{{- define "listener-operator.csiControllerServiceAccountName" -}}
{{- coalesce .Values.csiProvisioner.serviceAccountName (include "listener-operator.sharedServiceAccountName" .) (printf "%s-csi-controller" (include "listener-operator.fullname" .)) }}
{{- end }}
{{- define "listener-operator.csiNodeServiceAccountName" -}}
{{- coalesce .Values.csiNodeDriver.serviceAccountName (include "listener-operator.sharedServiceAccountName" .) (printf "%s-csi-node" (include "listener-operator.fullname" .)) }}
{{- end }}

{{/* The pod spec fields every component has. Arguments: (list $ componentValues). */}}
{{- define "listener-operator.podScheduling" -}}
{{- $root := index . 0 }}{{ $c := index . 1 }}
{{- with $root.Values.image.pullSecrets }}
imagePullSecrets:
{{- toYaml . | nindent 0 }}
{{- end }}
{{- with $c.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with $c.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $c.tolerations }}
tolerations:
{{- toYaml . | nindent 0 }}
{{- end }}
{{- with $c.podSecurityContext }}
securityContext:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* Flags every subcommand takes: logging (logging.*, else telemetry.consoleLog.*: _compat.tpl). */}}
{{- define "listener-operator.logArgs" -}}
{{- with include "listener-operator.logLevel" . }}
- --zap-log-level={{ . }}
{{- end }}
{{- with include "listener-operator.logFormat" . }}
- --zap-encoder={{ . }}
{{- end }}
{{- end }}

{{/* The names cert-manager's objects get. */}}
{{- define "listener-operator.servingCertificate" -}}
{{ include "listener-operator.fullname" . }}-serving-cert
{{- end }}
{{- define "listener-operator.caCertificate" -}}
{{- if .Values.certManager.issuerRef }}
{{- include "listener-operator.servingCertificate" . }}
{{- else }}
{{- include "listener-operator.fullname" . }}-ca
{{- end }}
{{- end }}

{{/*
listener-operator.files renders the objects of a file under files/ (copied
from config/ by `make helm-sync`) for this release: in the release's
namespace, named after fullname, with the chart's labels, and for webhook
configurations the release namespace excluded, the timeout and (with
cert-manager) cainjector's annotation. Arguments: (list $ "files/x.yaml").
*/}}
{{- define "listener-operator.files" -}}
{{- $root := index . 0 }}
{{- $name := include "listener-operator.name" $root }}
{{- range $doc := regexSplit "(?m)^---\\s*$" ($root.Files.Get (index . 1)) -1 }}
{{- $obj := fromYaml $doc }}
{{- if $obj }}
{{- if $obj.metadata.namespace }}
{{- $_ := set $obj.metadata "namespace" $root.Release.Namespace }}
{{- end }}
{{- $_ := set $obj.metadata "name" (include "listener-operator.rename" (list $root $obj.metadata.name)) }}
{{- $labels := merge (default dict $obj.metadata.labels) (fromYaml (include "listener-operator.labels" $root)) }}
{{- if hasKey $labels "app.kubernetes.io/name" }}
{{- $_ := set $labels "app.kubernetes.io/name" $name }}
{{- end }}
{{- $_ := set $obj.metadata "labels" $labels }}
{{- if and (hasKey $obj "rules") (not $root.Values.gatewayAPI.enabled) }}
{{- /* gatewayAPI.enabled: false leaves out the Gateway API rules (gateway classes). */}}
{{- $kept := list }}
{{- range $r := $obj.rules }}
{{- if not (has "gateway.networking.k8s.io" (default list $r.apiGroups)) }}
{{- $kept = append $kept $r }}
{{- end }}
{{- end }}
{{- $_ := set $obj "rules" $kept }}
{{- end }}
{{- range $r := $obj.rules }}
{{- if $r.resourceNames }}
{{- $names := list }}
{{- range $n := $r.resourceNames }}
{{- $names = append $names (include "listener-operator.rename" (list $root $n)) }}
{{- end }}
{{- $_ := set $r "resourceNames" $names }}
{{- end }}
{{- end }}
{{- if eq $obj.kind "Service" }}
{{- $_ := set $obj.spec.selector "app.kubernetes.io/name" $name }}
{{- range $p := $obj.spec.ports }}
{{- if eq $p.name "webhook" }}
{{- $_ := set $p "targetPort" (int $root.Values.webhook.port) }}
{{- end }}
{{- end }}
{{- end }}
{{- if eq $obj.kind "ValidatingAdmissionPolicy" }}
{{- range $c := $obj.spec.matchConditions }}
{{- if eq $c.name "manager-service-account" }}
{{- $_ := set $c "expression" (printf "request.userInfo.username == 'system:serviceaccount:%s:%s'" $root.Release.Namespace (include "listener-operator.serviceAccountName" $root)) }}
{{- end }}
{{- end }}
{{- end }}
{{- if eq $obj.kind "FlowSchema" }}
{{- range $r := $obj.spec.rules }}
{{- range $s := $r.subjects }}
{{- if eq $s.kind "ServiceAccount" }}
{{- $_ := set $s.serviceAccount "name" (include "listener-operator.serviceAccountName" $root) }}
{{- $_ := set $s.serviceAccount "namespace" $root.Release.Namespace }}
{{- end }}
{{- end }}
{{- range $rr := $r.resourceRules }}
{{- $_ := set $rr "namespaces" (list $root.Release.Namespace) }}
{{- end }}
{{- end }}
{{- end }}
{{- if eq $obj.kind "ValidatingAdmissionPolicyBinding" }}
{{- $_ := set $obj.spec "policyName" (include "listener-operator.rename" (list $root $obj.spec.policyName)) }}
{{- end }}
{{- if $obj.webhooks }}
{{- range $w := $obj.webhooks }}
{{- if $w.clientConfig.service }}
{{- $_ := set $w.clientConfig.service "namespace" $root.Release.Namespace }}
{{- $_ := set $w.clientConfig.service "name" (include "listener-operator.rename" (list $root $w.clientConfig.service.name)) }}
{{- end }}
{{- with $root.Values.webhook.timeoutSeconds }}
{{- $_ := set $w "timeoutSeconds" (int .) }}
{{- end }}
{{- if and $w.namespaceSelector $w.namespaceSelector.matchExpressions }}
{{- range $e := $w.namespaceSelector.matchExpressions }}
{{- if and (eq $e.key "kubernetes.io/metadata.name") (eq $e.operator "NotIn") }}
{{- $values := list }}
{{- range $v := $e.values }}
{{- $values = append $values (ternary $root.Release.Namespace $v (eq $v "listener-operator")) }}
{{- end }}
{{- $_ := set $e "values" $values }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- if eq $root.Values.certMode "cert-manager" }}
{{- $_ := set $obj.metadata "annotations" (merge (default dict $obj.metadata.annotations) (dict "cert-manager.io/inject-ca-from" (printf "%s/%s" $root.Release.Namespace (include "listener-operator.caCertificate" $root)))) }}
{{- end }}
{{- end }}
---
{{ toYaml $obj }}
{{- end }}
{{- end }}
{{- end }}

{{/* The metrics flags of every component (docs/install.md, "Metrics"). */}}
{{- define "listener-operator.metricsArgs" -}}
- --metrics-bind-address=:8443
{{- if not .Values.metrics.secure }}
- --metrics-secure=false
{{- end }}
{{- end }}
