{{/*
Images. README.md, "Images", states the rule; deploy/images_test.go checks it.

image.repository (and each sidecar's image.repository) is one of:
- a whole image path: for the operator, its last path segment is
  listener-operator or image.name (set image.name to keep a renamed image
  a whole path); for a sidecar, any value not ending in /sig-storage. Used
  as it is: this chart's users so far, and the existing (stackabletech)
  chart up to 26.3;
- a registry prefix (the existing chart since 26.7, e.g.
  oci.stackable.tech/sdp): for the operator any other value, and the image
  is <prefix>/<image.name>; for a sidecar a value ending in /sig-storage
  (their form), and the image is <prefix>/<name>. A sidecar whose own
  repository is empty is <image.repository>/sig-storage/<name> when
  image.repository is a prefix (as there), else registry.k8s.io's.
The sidecars' rule is narrower because their prefix in the existing chart
always ends in sig-storage, while an operator prefix has no fixed last
segment (sdp, or whatever a mirror calls it).

The prefix gets image.name (listener-operator-go), not listener-operator:
<prefix>/listener-operator is Stackable's own (Rust) operator, and a mirror
that holds their images under a prefix must not hand it to this chart.
For the same reason an operator image on one of Stackable's registries
(listener-operator.stackableRegistry) is never rendered: the chart falls
back to its default image and NOTES says so.
*/}}

{{/* listener-operator.stackableRegistry: "true" when a repository is on one of Stackable's registries. */}}
{{- define "listener-operator.stackableRegistry" -}}
{{- $r := lower (toString .) }}
{{- range $p := list "oci.stackable.tech" "docker.stackable.tech" "quay.io/stackable" }}
{{- if or (eq $r $p) (hasPrefix (printf "%s/" $p) $r) }}true{{ end }}
{{- end }}
{{- end }}

{{/* listener-operator.lastSegment: the last path segment of a repository. */}}
{{- define "listener-operator.lastSegment" -}}
{{- last (splitList "/" (toString .)) }}
{{- end }}

{{/*
listener-operator.operatorRepository: the operator's image without its tag,
by the rule above. The default (listener-operator) when the values name
Stackable's registries or leave the repository empty.
*/}}
{{- define "listener-operator.operatorRepository" -}}
{{- $i := .Values.image }}
{{- $name := default "listener-operator-go" $i.name }}
{{- $repo := trimSuffix "/" (toString (default "" $i.repository)) }}
{{- if or (eq $repo "") (include "listener-operator.stackableRegistry" $repo) }}listener-operator
{{- else if has (include "listener-operator.lastSegment" $repo) (list "listener-operator" $name) }}{{ $repo }}
{{- else }}{{ printf "%s/%s" $repo $name }}
{{- end }}
{{- end }}

{{/* listener-operator.operatorImage: the operator's image (operator, CSI controller, CSI node, helm test). */}}
{{- define "listener-operator.operatorImage" -}}
{{ include "listener-operator.operatorRepository" . }}:{{ .Values.image.tag }}
{{- end }}

{{/* listener-operator.imageIsPrefix: "true" when image.repository is a registry prefix, whatever registry (sidecars, NOTES). */}}
{{- define "listener-operator.imageIsPrefix" -}}
{{- $repo := trimSuffix "/" (toString (default "" .Values.image.repository)) }}
{{- $name := default "listener-operator-go" .Values.image.name }}
{{- if and $repo (not (has (include "listener-operator.lastSegment" $repo) (list "listener-operator" $name))) }}true{{ end }}
{{- end }}

{{/*
listener-operator.sidecarImage: a kubernetes-csi sidecar's image by the rule
above (these are upstream images, which Stackable's registries mirror too:
no registry is refused). Arguments: (list $ imageValues "csi-provisioner").
*/}}
{{- define "listener-operator.sidecarImage" -}}
{{- $root := index . 0 }}{{ $i := index . 1 }}{{ $name := index . 2 }}
{{- $repo := trimSuffix "/" (toString (default "" $i.repository)) }}
{{- if eq $repo "" }}
{{- if include "listener-operator.imageIsPrefix" $root }}
{{- $repo = printf "%s/sig-storage/%s" (trimSuffix "/" $root.Values.image.repository) $name }}
{{- else }}
{{- $repo = printf "registry.k8s.io/sig-storage/%s" $name }}
{{- end }}
{{- else if eq (include "listener-operator.lastSegment" $repo) "sig-storage" }}
{{- $repo = printf "%s/%s" $repo $name }}
{{- end }}
{{- printf "%s:%s" $repo (toString $i.tag) }}
{{- end }}
