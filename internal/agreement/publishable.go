package agreement

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// publishableShapes are the pod-address shapes of whether a volume may
// publish its Listener at all (addresses.Publishable): a Listener that is
// ready and complete in every other way, but being deleted, made for an
// earlier claim of the same name, with a status older than its spec,
// lacking a port the pod declares, or naming no class; and the per-claim
// Listeners a volume does publish: its claim's own and the one the
// Stackable operator made, owned by the volume's PersistentVolume.
func publishableShapes() []PodAddressShape {
	ports := map[string]int32{"kafka": 9092}
	clusterIP := []v1alpha1.ListenerIngress{{Address: "broker-0.agree.svc.cluster.local", AddressType: v1alpha1.AddressTypeHostname, Ports: ports}}
	ready := func() *v1alpha1.Listener { return podListener(v1alpha1.ServiceTypeClusterIP, clusterIP, nil) }
	class := podClass(v1alpha1.ServiceTypeClusterIP, nil)
	own := func(l *v1alpha1.Listener) *v1alpha1.Listener {
		l.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "PersistentVolumeClaim", Name: PodListener, UID: PodClaimUID, Controller: ptr(true)}}
		return l
	}
	deleting := ready()
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)}
	deleting.Finalizers = []string{"example.com/keep"}
	earlierClaim := ready()
	earlierClaim.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "PersistentVolumeClaim", Name: PodListener, UID: "earlier-claim-uid", Controller: ptr(true)}}
	stackable := ready()
	stackable.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "PersistentVolume", Name: PodVolume}}
	stale := ready()
	stale.Generation = 2
	noReady := ready()
	noReady.Status.Conditions = nil
	noClass := ready()
	noClass.Spec.ClassName = nil
	emptyClass := ready()
	emptyClass.Spec.ClassName = ptr("")
	return []PodAddressShape{
		{Name: "Listener being deleted", Listener: deleting, Class: class, Node: podNode(true)},
		{Name: "per-claim Listener of this claim", Listener: own(ready()), Class: class, Node: podNode(true), PerClaim: true, Want: clusterIP},
		{Name: "per-claim Listener of an earlier claim", Listener: earlierClaim, Class: class, Node: podNode(true), PerClaim: true},
		{Name: "per-claim Listener without an owner", Listener: ready(), Class: class, Node: podNode(true), PerClaim: true},
		{Name: "per-claim Listener the Stackable operator made", Listener: stackable, Class: class, Node: podNode(true), PerClaim: true, Want: clusterIP},
		// A shared Listener is anyone's: its owner does not matter.
		{Name: "shared Listener of another owner", Listener: earlierClaim.DeepCopy(), Class: class, Node: podNode(true), Want: clusterIP},
		{Name: "status of an earlier generation", Listener: stale, Class: class, Node: podNode(true)},
		{Name: "no Ready condition yet", Listener: noReady, Class: class, Node: podNode(true)},
		// A rolling update added a container port: the reconciler adds
		// it to the per-claim Listener asynchronously.
		{Name: "per-claim Listener lacking a port the pod declares", Listener: own(ready()), Class: class, Node: podNode(true), PerClaim: true,
			Pod: addressPod(corev1.ContainerPort{Name: "metrics", ContainerPort: 9404})},
		// A shared Listener's ports are its own: the pod's do not count.
		{Name: "shared Listener lacking a port the pod declares", Listener: ready(), Class: class, Node: podNode(true), Want: clusterIP,
			Pod: addressPod(corev1.ContainerPort{Name: "metrics", ContainerPort: 9404})},
		{Name: "no spec.className", Listener: noClass, Node: podNode(true)},
		{Name: "empty spec.className", Listener: emptyClass, Node: podNode(true)},
	}
}
