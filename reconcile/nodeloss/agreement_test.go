package nodeloss

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/agreement"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// TestAgreement asks node loss about every claim of the agreement table:
// whether it looks at the claim at all (its watch predicate), the Listener
// and class it decides with (claimInfo), whether it hands over the
// Listener named after the claim as the claim's own (ownListener: one that
// the claim controls exists in every shape, as an earlier version may have
// made it), and the node the claim is pinned to (pinnedNodeOf).
func TestAgreement(t *testing.T) {
	agreement.Check(t, "node loss", agreement.AskIsListener|agreement.AskListener|agreement.AskOwn|agreement.AskClass|agreement.AskPinned, func(t *testing.T, s agreement.Shape) (agreement.Answer, bool) {
		pvc := s.StoredClaim()
		own := &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: pvc.Namespace, Name: names.ClaimListenerName(pvc.Name),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "PersistentVolumeClaim", Name: pvc.Name, UID: pvc.UID, Controller: ptr.To(true)}}},
			Spec: v1alpha1.ListenerSpec{ClassName: ptr.To(agreement.Class)}}
		c := fake.NewClientBuilder().WithScheme(testenv.Scheme()).WithObjects(append(s.Objects(false), own)...).Build()
		r := &reconciler{client: c}
		got := agreement.Answer{IsListener: claims.IsListenerClaim(pvc)}
		if !got.IsListener {
			return got, true
		}
		node, use, err := r.pinnedNodeOf(t.Context(), pvc)
		if err != nil {
			t.Fatalf("pinnedNodeOf: %v", err)
		}
		info, err := r.claimInfo(t.Context(), pvc, use, agreement.Node)
		if err != nil {
			t.Fatalf("claimInfo: %v", err)
		}
		l, err := r.ownListener(t.Context(), pvc, use)
		if err != nil {
			t.Fatalf("ownListener: %v", err)
		}
		got.Listener, got.Own, got.Pinned = info.listener, l != nil, node
		if got.Own && use.Class != "" {
			// The class the claim names (when it names none, node loss
			// reads the Listener's).
			got.Class = info.class
		}
		return got, true
	})
}
