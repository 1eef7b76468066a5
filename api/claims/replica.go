package claims

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// Replica is the StatefulSet replica Listener l serves, -1 when it serves
// none alone. podNames are the pods that mount l's claims. Every rule that
// gives a replica a place of its own (a node-port block, a sharing class's
// Service ports, a TCPRoute class's sections) asks this, so that they agree
// on which Listener is whose:
//
//   - a Listener that selects its pod by name (AnnotationStatefulSetPod, a
//     claim of an opted-in template) serves that pod's ordinal;
//   - a claim's own Listener mounted by exactly one pod of a StatefulSet
//     (a name "<sts>-<i>") serves that pod's ordinal;
//   - a claim's own Listener that no pod of a StatefulSet mounts yet serves
//     the ordinal its claim's name ends in: a volumeClaimTemplate's claim
//     "<template>-<pod>" is made before its pod. A name is only a hint of
//     which block the Listener wants (the rules never take a held place on
//     it);
//   - any other serves none: a Listener several pods mount (a bootstrap
//     the StatefulSet's pods share) is no replica's, nor is one that is no
//     claim's own, whichever pods mount it.
func Replica(l *v1alpha1.Listener, podNames []string) int {
	if pod := l.Annotations[v1alpha1.AnnotationStatefulSetPod]; pod != "" {
		return Ordinal(pod)
	}
	ref := metav1.GetControllerOf(l)
	if ref == nil || ref.Kind != "PersistentVolumeClaim" || ref.APIVersion != "v1" {
		return -1
	}
	replica := ""
	for _, p := range podNames {
		switch {
		case Ordinal(p) < 0: // a pod of no StatefulSet serves no replica
		case replica != "" && p != replica:
			return -1 // several replicas mount it: they share it
		default:
			replica = p
		}
	}
	if replica == "" {
		return Ordinal(ref.Name)
	}
	return Ordinal(replica)
}
