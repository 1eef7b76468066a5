{{/*
Values of the existing (stackabletech) chart, folded into this chart's.

Their values files install unchanged (deploy/testdata/stackable-*.yaml):
- since their 25.11: csiNodeDriver.nodeDriverRegistrar (the name here too;
  csiNodeDriver.nodeRegistrar, this chart's first spelling, stays an alias);
- their 25.7 shape, which their 25.11 split (their CHANGELOG, #334), mapped
  the way they mapped it: controller.resources -> csiProvisioner.controllerService,
  csiProvisioner.image/resources -> csiProvisioner.externalProvisioner,
  csiNodeDriverRegistrar -> csiNodeDriver.nodeDriverRegistrar,
  node.driver -> csiNodeDriver.nodeService, and the top-level podAnnotations,
  podSecurityContext, securityContext to both CSI workloads (their only
  pods). Their top-level placement keys (nodeSelector, tolerations,
  affinity) place every workload of this chart: both CSI workloads, the
  operator's own Deployment (webhooks, reconcilers), which is new here, and
  the `helm test` pod (listener-operator.legacyPlacement), as "run the
  operator on these nodes" means to a user of those values.
An older spelling, when set, is merged over the newer one as if it had
been written there (maps deep-merged, lists replaced).
*/}}

{{/* listener-operator.legacy returns a top-level key of the 25.7 shape, or an empty dict. Arguments: (list $ "key"). */}}
{{- define "listener-operator.legacy" -}}
{{- $v := get (index . 0).Values (index . 1) }}
{{- if $v }}{{ toYaml (dict "v" $v) }}{{ else }}{{ toYaml (dict "v" dict) }}{{ end }}
{{- end }}

{{/*
listener-operator.runAsRootOK: a container that asks for uid 0 (their
values: securityContext.runAsUser: 0) in a pod that says runAsNonRoot
would never start ("container has runAsNonRoot and image will run as
root"); the explicit uid wins, as in their chart. Arguments: (list podSC containerSC).
*/}}
{{- define "listener-operator.runAsRootOK" -}}
{{- $pod := index . 0 }}{{ $c := index . 1 }}
{{- if and $pod.runAsNonRoot (hasKey $c "runAsUser") (eq (toString $c.runAsUser) "0") (not (hasKey $c "runAsNonRoot")) }}
{{- $_ := set $c "runAsNonRoot" false }}
{{- end }}
{{- end }}

{{/* listener-operator.legacyPlacement folds the 25.7 top-level placement keys (nodeSelector merged, tolerations and affinity replaced) into a workload's values ($c, changed in place). Arguments: (list $ $c). */}}
{{- define "listener-operator.legacyPlacement" -}}
{{- $root := index . 0 }}{{ $c := index . 1 }}
{{- $old := (include "listener-operator.legacy" (list $root "nodeSelector") | fromYaml).v }}
{{- if $old }}
{{- $_ := set $c "nodeSelector" (mergeOverwrite (deepCopy (default dict (get $c "nodeSelector"))) $old) }}
{{- end }}
{{- range $k := list "tolerations" "affinity" }}
{{- $old := (include "listener-operator.legacy" (list $root $k) | fromYaml).v }}
{{- if $old }}
{{- $_ := set $c $k $old }}
{{- end }}
{{- end }}
{{- end }}

{{/* listener-operator.legacyPod folds the 25.7 pod-level keys into a component's values ($c, changed in place). Arguments: (list $ $c "containerKey"). */}}
{{- define "listener-operator.legacyPod" -}}
{{- $root := index . 0 }}{{ $c := index . 1 }}{{ $ctr := index $c (index . 2) }}
{{- range $k := list "podAnnotations" "podSecurityContext" }}
{{- $old := (include "listener-operator.legacy" (list $root $k) | fromYaml).v }}
{{- if $old }}
{{- $_ := set $c $k (mergeOverwrite (deepCopy (default dict (get $c $k))) $old) }}
{{- end }}
{{- end }}
{{- include "listener-operator.legacyPlacement" (list $root $c) }}
{{- $sc := (include "listener-operator.legacy" (list $root "securityContext") | fromYaml).v }}
{{- if $sc }}
{{- $_ := set $ctr "securityContext" (mergeOverwrite (deepCopy (default dict $ctr.securityContext)) $sc) }}
{{- end }}
{{- end }}

{{/* listener-operator.csiProvisioner: the CSI controller's values (csiProvisioner.*) with the older spellings folded in, as YAML. */}}
{{- define "listener-operator.csiProvisioner" -}}
{{- $c := deepCopy .Values.csiProvisioner }}
{{- $ext := $c.externalProvisioner }}
{{- with $c.image }}
{{- $_ := set $ext "image" (mergeOverwrite (deepCopy $ext.image) .) }}
{{- end }}
{{- with $c.resources }}
{{- $_ := set $ext "resources" (mergeOverwrite (deepCopy $ext.resources) .) }}
{{- end }}
{{- $_ := unset $c "image" }}{{ $_ := unset $c "resources" }}
{{- $old := (include "listener-operator.legacy" (list . "controller") | fromYaml).v }}
{{- with $old.resources }}
{{- $_ := set $c.controllerService "resources" (mergeOverwrite (deepCopy $c.controllerService.resources) .) }}
{{- end }}
{{- include "listener-operator.legacyPod" (list . $c "controllerService") }}
{{- include "listener-operator.sameUser" $c }}
{{- include "listener-operator.runAsRootOK" (list (default dict $c.podSecurityContext) (default dict $ext.securityContext)) }}
{{- toYaml $c }}
{{- end }}

{{/*
listener-operator.sameUser: the CSI controller's socket (mode 0600) must
belong to the user csi-provisioner runs as. A uid set for the controller
service is given to csi-provisioner too (unless it has its own), and uid 0
is dropped: the CSI controller needs no root here (the existing chart's
default, runAsUser: 0, was for its binary), and root would have to spread
to csi-provisioner. Changes the values ($c) in place.
*/}}
{{- define "listener-operator.sameUser" -}}
{{- $sc := default dict .controllerService.securityContext }}
{{- if and (hasKey $sc "runAsUser") (eq (toString $sc.runAsUser) "0") }}
{{- $_ := unset $sc "runAsUser" }}
{{- end }}
{{- $ext := default dict .externalProvisioner.securityContext }}
{{- if and (hasKey $sc "runAsUser") (not (hasKey $ext "runAsUser")) }}
{{- $_ := set $ext "runAsUser" $sc.runAsUser }}
{{- $_ := set .externalProvisioner "securityContext" $ext }}
{{- end }}
{{- end }}

{{/* listener-operator.csiControllerRootDropped: "true" when the values ask for uid 0 in the CSI controller service (NOTES). */}}
{{- define "listener-operator.csiControllerRootDropped" -}}
{{- $a := default dict .Values.csiProvisioner.controllerService.securityContext }}
{{- $b := (include "listener-operator.legacy" (list . "securityContext") | fromYaml).v }}
{{- if or (eq (toString $a.runAsUser) "0") (eq (toString $b.runAsUser) "0") }}true{{ end }}
{{- end }}

{{/* listener-operator.csiNodeDriver: the CSI node plugin's values (csiNodeDriver.*) with the older spellings folded in, as YAML. */}}
{{- define "listener-operator.csiNodeDriver" -}}
{{- $c := deepCopy .Values.csiNodeDriver }}
{{- $reg := $c.nodeDriverRegistrar }}
{{- with $c.nodeRegistrar }}
{{- $reg = mergeOverwrite $reg (deepCopy .) }}
{{- end }}
{{- with (include "listener-operator.legacy" (list . "csiNodeDriverRegistrar") | fromYaml).v }}
{{- $reg = mergeOverwrite $reg . }}
{{- end }}
{{- $_ := set $c "nodeDriverRegistrar" $reg }}{{ $_ := unset $c "nodeRegistrar" }}
{{- $old := (include "listener-operator.legacy" (list . "node") | fromYaml).v }}
{{- if and $old $old.driver $old.driver.resources }}
{{- $_ := set $c.nodeService "resources" (mergeOverwrite (deepCopy $c.nodeService.resources) $old.driver.resources) }}
{{- end }}
{{- include "listener-operator.legacyPod" (list . $c "nodeService") }}
{{- include "listener-operator.runAsRootOK" (list (default dict $c.podSecurityContext) (default dict $c.nodeService.securityContext)) }}
{{- include "listener-operator.runAsRootOK" (list (default dict $c.podSecurityContext) (default dict $reg.securityContext)) }}
{{- toYaml $c }}
{{- end }}

{{/*
listener-operator.telemetryEnv: the environment of the existing chart's
telemetry.* that the binary reads (OpenTelemetry's standard variables):
otelTraceExporter -> OTEL_TRACES_EXPORTER=otlp and
OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, otelLogExporter -> OTEL_LOGS_EXPORTER=otlp
and OTEL_EXPORTER_OTLP_LOGS_ENDPOINT (not read by the binary yet:
docs/telemetry.md). consoleLog maps to logging.*
(listener-operator.logArgs); fileLog and the exporters' level are not
supported (README.md, NOTES).
*/}}
{{- define "listener-operator.telemetryEnv" -}}
{{- $t := default dict .Values.telemetry }}
{{- $tr := default dict $t.otelTraceExporter }}
{{- if $tr.enabled }}
- name: OTEL_TRACES_EXPORTER
  value: otlp
{{- with $tr.endpoint }}
- name: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
  value: {{ . | quote }}
{{- end }}
{{- end }}
{{- $lg := default dict $t.otelLogExporter }}
{{- if $lg.enabled }}
- name: OTEL_LOGS_EXPORTER
  value: otlp
{{- with $lg.endpoint }}
- name: OTEL_EXPORTER_OTLP_LOGS_ENDPOINT
  value: {{ . | quote }}
{{- end }}
{{- end }}
{{- end }}

{{/*
listener-operator.logLevel / logFormat: logging.level and logging.format,
else the existing chart's telemetry.consoleLog.level and .format (levels:
off, trace, debug, info, warn, error, or a tracing filter such as
info,listener_operator=debug; formats: Plain, Json).
*/}}
{{- define "listener-operator.logLevel" -}}
{{- $c := default dict (default dict .Values.telemetry).consoleLog }}
{{- if not (kindIs "invalid" .Values.logging.level) }}{{ if ne (toString .Values.logging.level) "" }}{{ .Values.logging.level }}{{ end }}{{ end }}
{{- if and (or (kindIs "invalid" .Values.logging.level) (eq (toString .Values.logging.level) "")) $c.level }}
{{- include "listener-operator.filterLevel" $c.level }}
{{- end }}
{{- end }}

{{/*
listener-operator.filterLevel translates a level or tracing filter of the
existing chart (their operator reads it as Rust's EnvFilter) into what
--zap-log-level accepts (debug, info, error, panic, or a verbosity number).
This binary is one target: a directive whose target names
listener_operator (stackable_listener_operator=debug) wins over the
global one, the most verbose of them if several; directives for other
targets (kube=trace) are dropped, and NOTES says so. off logs only panics;
warn keeps info (logr has no warning level); trace is verbosity 2.
*/}}
{{- define "listener-operator.filterLevel" -}}
{{- $rank := dict "off" 0 "error" 1 "warn" 2 "info" 3 "debug" 4 "trace" 5 }}
{{- $zap := dict "off" "panic" "error" "error" "warn" "info" "info" "info" "debug" "debug" "trace" "2" }}
{{- $global := "" }}{{ $own := "" }}
{{- range $d := splitList "," (lower (toString .)) }}
{{- $d = trim $d }}
{{- if contains "=" $d }}
{{- $parts := splitList "=" $d }}
{{- $lvl := trim (last $parts) }}
{{- if and (contains "listener_operator" (first $parts)) (hasKey $rank $lvl) (or (eq $own "") (gt (int (get $rank $lvl)) (int (get $rank $own)))) }}{{ $own = $lvl }}{{ end }}
{{- else if hasKey $rank $d }}{{ $global = $d }}
{{- end }}
{{- end }}
{{- with (default $global $own) }}{{ get $zap . }}{{ end }}
{{- end }}

{{/* listener-operator.filterDropsTargets: "true" when a consoleLog filter names targets other than this operator's (NOTES). */}}
{{- define "listener-operator.filterDropsTargets" -}}
{{- $c := default dict (default dict .Values.telemetry).consoleLog }}
{{- range $d := splitList "," (lower (toString (default "" $c.level))) }}
{{- if and (contains "=" $d) (not (contains "listener_operator" (first (splitList "=" $d)))) }}true{{ end }}
{{- end }}
{{- end }}

{{- define "listener-operator.logFormat" -}}
{{- $c := default dict (default dict .Values.telemetry).consoleLog }}
{{- if .Values.logging.format }}{{ .Values.logging.format }}
{{- else if $c.format }}{{ get (dict "plain" "console" "json" "json") (lower $c.format) }}
{{- end }}
{{- end }}
