package webhooks

import (
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/listener-operator/listener-operator/internal/testenv"
)

// BenchmarkPodAdmission is the pod webhook's handler on the admission of a
// StatefulSet replica: decode, look up its two claims (and the listener
// claim's pinned volume) in the warm cache, compute the patch.
func BenchmarkPodAdmission(b *testing.B) {
	testenv.Require(b, env)
	ns := namespace(b, nil)
	statefulSetPodClaims(b, ns)
	pinnedClaim(b, ns, "listener-web-0-pinned", "node-1")
	object := strings.ReplaceAll(statefulSetPodJSON, "NS", ns)
	for _, bc := range []struct{ name, object string }{
		{"unpinned", object},
		{"pinned", strings.Replace(object, `"claimName": "listener-web-0"`, `"claimName": "listener-web-0-pinned"`, 1)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			h := &podMutator{lookup: testLookup}
			req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				UID: "1", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Operation: admissionv1.Create,
				Namespace: ns, Name: "web-0", Object: runtime.RawExtension{Raw: []byte(bc.object)},
			}}
			// Wait for the cache to hold the claims, as it does in steady state.
			eventually(b, "claims in cache", func() error {
				if len(h.Handle(b.Context(), req).Patches) == 0 {
					return errorf("no patch yet")
				}
				return nil
			})
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if resp := h.Handle(b.Context(), req); len(resp.Patches) == 0 {
					b.Fatal("no patch")
				}
			}
		})
	}
}
