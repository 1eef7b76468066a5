package webhooks

import (
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// TestStatefulSetMalformedOld: an UPDATE whose stored object cannot be
// decoded gets one clear denial (400, "decode StatefulSet" once), whether
// the handler reads the old object for its claim templates (the manifest
// lacks the listener claim template) or for its pod template's labels (the
// template lacks the listener-volume label); and an update that needs
// nothing of the old object is not refused for it.
func TestStatefulSetMalformedOld(t *testing.T) {
	withTemplate := strings.Replace(stsStored, `"labels": {"app": "web"}`, `"labels": {"app": "web", "listeners.stackable.tech/enabled": "true", "listeners.stackable.tech/listener-volume": "true"}`, 1)
	for _, tc := range []struct {
		name, object, old string
		wantDenied        bool
	}{
		{"manifest without the claim template", stsManifest, `{"metadata": {"labels": 5}}`, true},
		{"claim templates not a list", stsManifest, `{"spec": {"volumeClaimTemplates": {}}}`, true},
		{"template without the listener-volume label", stsStored, `{"spec": {"template": {"metadata": {"labels": []}}}}`, true},
		{"nothing read of the old object", withTemplate, `{"metadata": 5}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := (&statefulSetMutator{}).Handle(t.Context(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				UID: "1", Kind: metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}, Operation: admissionv1.Update,
				Namespace: "default", Name: "web",
				Object: runtime.RawExtension{Raw: []byte(tc.object)}, OldObject: runtime.RawExtension{Raw: []byte(tc.old)},
			}})
			if !tc.wantDenied {
				if !resp.Allowed {
					t.Fatalf("denied: %+v", resp.Result)
				}
				return
			}
			if resp.Allowed || resp.Result == nil || resp.Result.Code != 400 {
				t.Fatalf("allowed=%v result=%+v, want a 400 denial", resp.Allowed, resp.Result)
			}
			if n := strings.Count(resp.Result.Message, "decode StatefulSet"); n != 1 {
				t.Errorf("message %q says %d times that the StatefulSet cannot be decoded, want once", resp.Result.Message, n)
			}
		})
	}
}
