package lbsharing

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// Workload is what a Listener of a sharing class shares its IP with: one
// StatefulSet of its namespace.
type Workload struct {
	Namespace, StatefulSet string
	// Replica is the ordinal of the one pod the Listener serves (its
	// per-replica Listener), -1 for a Listener the StatefulSet's pods
	// share (a bootstrap).
	Replica int
}

// Key is the workload's sharing key: the value of both sharing
// annotations on its Services. It names the namespace, so that no two
// namespaces' workloads ever have the same key, even on a load balancer
// told to share across namespaces (the operator never tells it so).
func (w Workload) Key() string { return w.Namespace + "/" + w.StatefulSet }

// KeyOfNamespace reports whether key is a sharing key of namespace ns
// (Key's form): only such a key, read back from a Service, is used again.
func KeyOfNamespace(key, ns string) bool {
	sts, ok := strings.CutPrefix(key, ns+"/")
	return ok && sts != "" && !strings.Contains(sts, "/")
}

// WorkloadOf is the workload of Listener l, mounted by pods (the pods of
// its claims):
//
//   - a Listener that selects one StatefulSet pod by name
//     (v1alpha1.AnnotationStatefulSetPod, a claim of an opted-in
//     template) is that pod's StatefulSet's, replica its ordinal;
//   - any other is the StatefulSet of the pods mounting it (StatefulSetOf).
//
// Its replica is claims.Replica's, the rule node-port ranges and TCPRoute
// sections ask too: -1 for a Listener the StatefulSet's pods share.
//
// ok is false while no pod of a StatefulSet mounts it (its key is not
// known yet). The error says that pods of several workloads mount it: a
// key names one workload.
func WorkloadOf(l *v1alpha1.Listener, pods []corev1.Pod) (w Workload, ok bool, err error) {
	podNames := make([]string, len(pods))
	for i := range pods {
		podNames[i] = pods[i].Name
	}
	w = Workload{Namespace: l.Namespace, Replica: claims.Replica(l, podNames)}
	if pod := l.Annotations[v1alpha1.AnnotationStatefulSetPod]; pod != "" {
		w.StatefulSet = claims.StatefulSetOfPod(pod)
		return w, w.StatefulSet != "", nil
	}
	var sets, loose []string
	for i := range pods {
		if sts := StatefulSetOf(&pods[i]); sts == "" {
			loose = append(loose, pods[i].Name)
		} else if !slices.Contains(sets, sts) {
			sets = append(sets, sts)
		}
	}
	slices.Sort(sets)
	slices.Sort(loose)
	switch {
	case len(sets) == 0:
		return w, false, nil
	case len(sets) > 1 || len(loose) > 0:
		return w, false, fmt.Errorf("Listener %s is mounted by pods of more than one workload (StatefulSets %s%s), and a class with spec.loadBalancerSharing gives one workload's Listeners one IP: give each workload a Listener of its own",
			l.Name, strings.Join(sets, ", "), otherPods(loose))
	}
	w.StatefulSet = sets[0]
	return w, true, nil
}

// StatefulSetOf is the StatefulSet of pod, "" when it is none's: a pod
// that the StatefulSet controller labels with its own name
// (statefulset.kubernetes.io/pod-name, which the reconcilers' cache keeps
// while it drops owner references), a name "<statefulset>-<ordinal>". A
// label a tenant writes by hand can only put its pod in a workload of its
// own namespace, which a key never leaves.
func StatefulSetOf(pod *corev1.Pod) string {
	if pod.Labels[v1alpha1.LabelStatefulSetPodName] != pod.Name {
		return ""
	}
	return claims.StatefulSetOfPod(pod.Name)
}

func otherPods(loose []string) string {
	if len(loose) == 0 {
		return ""
	}
	if len(loose) > 3 {
		loose = append(loose[:3:3], fmt.Sprintf("and %d more", len(loose)-3))
	}
	return "; pods of no StatefulSet: " + strings.Join(loose, ", ")
}
