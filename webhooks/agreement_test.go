package webhooks

import (
	"context"
	"encoding/json"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/agreement"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// TestAgreement asks the pod webhook (Handle, on the pod's CREATE) about
// the pod of every shape of the agreement table: the labels it adds, the
// node it pins the pod to (read back as node loss reads it), and the
// Listener of the pod's volume (the claim lookup it makes for a named
// claim; the selector label it adds for an ephemeral volume). The lookups
// read the shape's objects from memory.
func TestAgreement(t *testing.T) {
	agreement.Check(t, "the pod webhook", agreement.AskIsListener|agreement.AskListener|agreement.AskLabels|agreement.AskPinned, func(t *testing.T, s agreement.Shape) (agreement.Answer, bool) {
		c := fake.NewClientBuilder().WithScheme(testenv.Scheme()).WithObjects(s.Objects(false)...).Build()
		// The cache holds only marked claims and volumes, as the shipped
		// one does: the shapes' claims (admitted with or without the
		// webhooks) are read live and remembered.
		l := &lookup{cache: markedOnly{c}, live: c, ordinary: newOrdinaryClaims()}
		m := &podMutator{lookup: l, validator: &workloadValidator{lookup: l}}
		raw, err := json.Marshal(s.Pod)
		if err != nil {
			t.Fatal(err)
		}
		resp := m.Handle(t.Context(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			UID: "1", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Operation: admissionv1.Create,
			Namespace: s.Pod.Namespace, Name: s.Pod.Name, Object: runtime.RawExtension{Raw: raw},
		}})
		if !resp.Allowed {
			t.Fatalf("denied: %v", resp.Result)
		}
		patched := s.Pod.DeepCopy()
		if patch := patchJSON(t, resp); patch != nil {
			p, err := jsonpatch.DecodePatch(patch)
			if err != nil {
				t.Fatal(err)
			}
			out, err := p.Apply(raw)
			if err != nil {
				t.Fatalf("apply patch: %v", err)
			}
			patched = &corev1.Pod{}
			if err := json.Unmarshal(out, patched); err != nil {
				t.Fatal(err)
			}
		}
		got := agreement.Answer{Labels: map[string]string{}}
		for k, v := range patched.Labels {
			if s.Pod.Labels[k] != v {
				got.Labels[k] = v
			}
		}
		if pinned := claims.PinnedNodes(patched); len(pinned) == 1 {
			got.Pinned = pinned[0]
		} else if len(pinned) > 1 {
			t.Errorf("pinned to %v", pinned)
		}
		if s.Claim != nil {
			c, err := m.claim(t.Context(), s.Pod.Namespace, s.Claim.Name)
			if err != nil {
				t.Fatalf("claim lookup: %v", err)
			}
			got.IsListener, got.Listener = c.ok, c.listener
			return got, true
		}
		got.IsListener = got.Labels[v1alpha1.LabelListenerVolume] == "true"
		for _, candidate := range []string{agreement.Shared, names.EphemeralClaimName(agreement.PodName, s.Pod.Spec.Volumes[0].Name)} {
			if _, ok := got.Labels[names.PodSelectorLabel(candidate)]; ok {
				got.Listener = candidate
			}
		}
		return got, true
	})
}

// markedOnly reads like the shipped webhooks' cache: claims and volumes
// without the mark (claims.Marked) are not there.
type markedOnly struct{ client.Reader }

func (m markedOnly) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := m.Reader.Get(ctx, key, obj, opts...); err != nil {
		return err
	}
	switch obj.(type) {
	case *corev1.PersistentVolumeClaim, *corev1.PersistentVolume:
		if !claims.Marked(obj.GetLabels()) {
			return apierrors.NewNotFound(schema.GroupResource{Resource: "claims or volumes"}, key.Name)
		}
	}
	return nil
}
