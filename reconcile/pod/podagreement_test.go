package pod

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/listener-operator/listener-operator/api/addresses"
	"github.com/listener-operator/listener-operator/internal/agreement"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// TestPodAddressAgreement: the PodListeners entry the pod reconciler
// computes for each shape of internal/agreement's pod-address table is what
// the table says, which is what the node plugin writes into the volume too
// (csi.TestPodAddressAgreement); a shape that waits has no entry (for a
// new pod). A small unit test: the objects are read through a fake client.
func TestPodAddressAgreement(t *testing.T) {
	for _, s := range agreement.PodAddressShapes() {
		t.Run(s.Name, func(t *testing.T) {
			pod := s.Pod
			objs := []client.Object{s.Listener}
			if s.Class != nil {
				objs = append(objs, s.Class)
			}
			if s.Node != nil {
				objs = append(objs, s.Node)
			}
			r := &podReconciler{client: fake.NewClientBuilder().WithScheme(testenv.Scheme()).WithObjects(objs...).Build()}
			vol := addresses.Volume{PerClaim: s.PerClaim, Claim: types.NamespacedName{Namespace: agreement.Namespace, Name: agreement.PodListener}, ClaimUID: s.ClaimUID, Name: agreement.PodVolume}
			spec, _, _, err := r.podListenersSpec(t.Context(), pod, []podVolumeListener{{volume: "listener", listener: s.Listener.Name, claim: vol}})
			if err != nil {
				t.Fatal(err)
			}
			got, ok := spec.Listeners["listener"]
			switch {
			case s.Want == nil && ok:
				t.Errorf("PodListeners has %+v; the pod waits (the node plugin writes no tree)", got)
			case s.Want != nil && !reflect.DeepEqual(got.IngressAddresses, s.Want):
				t.Errorf("PodListeners has %+v\nwant %+v", got.IngressAddresses, s.Want)
			}
		})
	}
}
