package webhooks

import (
	"encoding/json"
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
//   - views: the shipped path, jsoniter into the handlers' views, the
//     patch written by hand (request.go);
//   - views, encoding/json: the same views, the standard library's decoder;
//   - standard: what controller-runtime's admission package does, the
//     whole Pod decoded as the API server decodes it (sigs.k8s.io/json,
//     case-sensitive), changed, encoded again and diffed with
//     gomodules.xyz/jsonpatch/v2 (admission.PatchResponseFromRaw). It also
//     removes the fields this build does not know (removed-fields/op),
//     which the views leave alone.
func BenchmarkPodDecodeAndPatch(b *testing.B) {
	raw := []byte(strings.ReplaceAll(statefulSetPodJSON, "NS", "default"))
	listeners := []claims.PodListener{{Listener: "listener-web-0"}}
	viewsWith := func(unmarshal func([]byte, any) error) func(*testing.B) {
		return func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var pod podView
				if err := unmarshal(raw, &pod); err != nil {
					b.Fatal(err)
				}
				var p patch
				mountEverywhere(&p, "/spec", pod.Metadata.Annotations, &pod.Spec, v1alpha1.VolumeName)
				label(&p, pod.Metadata.Name, pod.Metadata.Labels, listeners)
				if len(p) != 1 {
					b.Fatalf("patch %v, want one operation", p)
				}
				if _, err := json.Marshal(p); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	b.Run("views", viewsWith(viewDecoder.Unmarshal))
	b.Run("views, encoding-json", viewsWith(json.Unmarshal))
	b.Run("standard", func(b *testing.B) {
		b.ReportAllocs()
		removed := 0
		for b.Loop() {
			var pod corev1.Pod
			if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, &pod); err != nil {
				b.Fatal(err)
			}
			out := pod.DeepCopy()
			for k, v := range claims.Missing(claims.PodLabels(out.Name, out.Labels, listeners), out.Labels) {
				out.Labels[k] = v
			}
			marshaled, err := json.Marshal(out)
			if err != nil {
				b.Fatal(err)
			}
			ops, err := jsonpatch.CreatePatch(raw, marshaled)
			if err != nil {
				b.Fatal(err)
			}
			removed = 0
			labelled := false
			for _, op := range ops {
				switch {
				case op.Operation == "remove":
					removed++
				case strings.HasSuffix(op.Path, escape(names.PodSelectorLabel("listener-web-0"))):
					labelled = true
				}
			}
			if !labelled {
				b.Fatalf("patch %v does not label the pod", ops)
			}
			if _, err := json.Marshal(ops); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(removed), "removed-fields/op")
	})
}
