package webhooks

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"gomodules.xyz/jsonpatch/v2"
	corev1 "k8s.io/api/core/v1"
	sigsjson "sigs.k8s.io/json"

	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// BenchmarkPodDecodeAndPatch is the part of a pod admission that the
// decoder and the patch make up (no lookup, no control plane: it runs under
// -short), on BenchmarkPodWebhookServing's pod, which gets one label:
//
//   - views: the shipped path, decodePod into the handlers' views (the
//     scanner, podscan.go), the patch written by hand (request.go);
//   - views, jsoniter: the same views, the reflecting decoder (viewDecoder);
//   - views, encoding-json: the same views, the standard library's decoder;
//   - standard: what controller-runtime's admission package does, the
//     whole Pod decoded as the API server decodes it (sigs.k8s.io/json,
//     case-sensitive), changed, encoded again and diffed with
//     gomodules.xyz/jsonpatch/v2 (admission.PatchResponseFromRaw). It also
//     removes the fields this build does not know (removed-fields/op),
//     which the views leave alone.
func BenchmarkPodDecodeAndPatch(b *testing.B) {
	raw := []byte(strings.ReplaceAll(statefulSetPodJSON, "NS", "default"))
	for _, bc := range []struct {
		name string
		once func([]byte) (removed int, err error)
	}{
		{"views", func(raw []byte) (int, error) {
			return viewsPatch(raw, func(raw []byte, v any) error { return decodePod(raw, v.(*podView)) })
		}},
		{"views, jsoniter", func(raw []byte) (int, error) { return viewsPatch(raw, viewDecoder.Unmarshal) }},
		{"views, encoding-json", func(raw []byte) (int, error) { return viewsPatch(raw, json.Unmarshal) }},
		{"standard", standardPatch},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			removed := 0
			for b.Loop() {
				n, err := bc.once(raw)
				if err != nil {
					b.Fatal(err)
				}
				removed = n
			}
			b.ReportMetric(float64(removed), "removed-fields/op")
		})
	}
}

// benchListeners are the Listeners of the benchmark pod's listener volume.
var benchListeners = []claims.PodListener{{Listener: "listener-web-0"}}

// viewsPatch is the shipped path: the pod decoded into its view, the
// patch written by hand, encoded.
func viewsPatch(raw []byte, unmarshal func([]byte, any) error) (int, error) {
	var pod podView
	if err := unmarshal(raw, &pod); err != nil {
		return 0, err
	}
	var p patch
	mountEverywhere(&p, "/spec", pod.Metadata.Annotations, &pod.Spec, v1alpha1.VolumeName)
	label(&p, pod.Metadata.Name, pod.Metadata.Labels, benchListeners)
	if len(p) != 1 {
		return 0, fmt.Errorf("patch %v, want one operation", p)
	}
	_, err := json.Marshal(p)
	return 0, err
}

// standardPatch is controller-runtime's path: the whole pod decoded,
// changed, encoded and diffed.
func standardPatch(raw []byte) (int, error) {
	var pod corev1.Pod
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, &pod); err != nil {
		return 0, err
	}
	out := pod.DeepCopy()
	for k, v := range claims.Missing(claims.PodLabels(out.Name, out.Labels, benchListeners), out.Labels) {
		out.Labels[k] = v
	}
	marshaled, err := json.Marshal(out)
	if err != nil {
		return 0, err
	}
	ops, err := jsonpatch.CreatePatch(raw, marshaled)
	if err != nil {
		return 0, err
	}
	removed, labelled := 0, false
	for _, op := range ops {
		switch {
		case op.Operation == "remove":
			removed++
		case op.Path == entry("/metadata/labels", names.PodSelectorLabel("listener-web-0")):
			labelled = true
		}
	}
	if !labelled {
		return 0, fmt.Errorf("patch %v does not label the pod", ops)
	}
	_, err = json.Marshal(ops)
	return removed, err
}
