package caches

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/names"
)

// IndexPodClaim indexes the reconcilers' pods by the claims their volumes
// name (persistentVolumeClaim.claimName), in their namespace. The claim of
// a generic ephemeral volume is not indexed: its name gives its pod's
// (PodsOfClaim), and an index keeps a set for every value, some 400 bytes
// for each pod of a per-pod claim. Both the listener reconcilers and the
// pinned-node-loss controller look pods up by claim, through PodsOfClaim.
const IndexPodClaim = "pod.claim"

// PodsOfClaim are the pods in c (the reconcilers' cache) whose volumes use
// the claim namespace/name: those naming it (IndexPodClaim), and those whose
// generic ephemeral volume it is the claim of (names.EphemeralClaimSources:
// each pod named by one is read; a pod of another name that happens to
// match is listed too, as an index of names.PodClaimNames would).
func PodsOfClaim(ctx context.Context, c client.Reader, namespace, claim string) ([]corev1.Pod, error) {
	var list corev1.PodList
	if err := c.List(ctx, &list, client.InNamespace(namespace), client.MatchingFields{IndexPodClaim: claim}); err != nil {
		return nil, fmt.Errorf("list pods of claim %s/%s: %w", namespace, claim, err)
	}
	pods := list.Items
	for _, src := range names.EphemeralClaimSources(claim) {
		pod := &corev1.Pod{}
		switch err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: src.Pod}, pod); {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return nil, fmt.Errorf("get pod %s/%s of claim %s: %w", namespace, src.Pod, claim, err)
		}
		// The pod's claims as names.PodClaimNames has them, the one rule of
		// which claims a pod uses; a pod the index listed is not listed twice.
		if slices.Contains(names.PodClaimNames(pod), claim) && !slices.ContainsFunc(pods, func(p corev1.Pod) bool { return p.Name == pod.Name }) {
			pods = append(pods, *pod)
		}
	}
	return pods, nil
}

// PodNamedClaims are the values of IndexPodClaim for a pod: the claims its
// volumes name (not those of its ephemeral volumes).
func PodNamedClaims(o client.Object) []string {
	pod, ok := o.(*corev1.Pod)
	if !ok {
		return nil
	}
	var out []string
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			out = append(out, v.PersistentVolumeClaim.ClaimName)
		}
	}
	return out
}
