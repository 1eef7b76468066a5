// Package claimlistener holds the rules of a claim's own Listener that
// both the claim controller (which makes it) and the Listener controller
// (which judges it) apply: which pod it selects by name (issue 37), and
// what its pods are told when it has no ports.
package claimlistener

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get

// Which pods a per-claim Listener selects by name (issue 37). A claim's
// statefulset-claim-template annotation asks that its Listener select pod
// "<pod>" by the StatefulSet pod-name label; the StatefulSet decides
// whether that pod mounts the claim (claims.SelectedByName). The operator
// caches no StatefulSet: each question is one namespaced GET from the API
// server, asked when a claim's Listener is made, and when a Listener that
// selects by name is judged (once per Listener and process).

// EventStatefulSetPodRefused, on a claim, says that its Listener selects the
// pods that mount it by label, not the pod its statefulset-claim-template
// annotation asks for, and why.
const EventStatefulSetPodRefused = "StatefulSetPodRefused"

// StatefulSetOf reads, from c in namespace, the StatefulSet whose pod pod
// would be (claims.StatefulSetOfPod): nil when pod is not such a name or the
// StatefulSet does not exist.
func StatefulSetOf(ctx context.Context, c client.Reader, namespace, pod string) (*appsv1.StatefulSet, error) {
	name := claims.StatefulSetOfPod(pod)
	if name == "" {
		return nil, nil
	}
	sts := &appsv1.StatefulSet{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, sts); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("get statefulset %s/%s: %w", namespace, name, err)
	}
	return sts, nil
}

// SelectedByName is which pod the own Listener of pvc selects by name
// (claims.SelectedByName), reading the StatefulSet live only when the claim
// asks for one.
func SelectedByName(ctx context.Context, live client.Reader, pvc *corev1.PersistentVolumeClaim) (claims.ByName, error) {
	asked := claims.StatefulSetPod(pvc.Name, pvc.Annotations)
	if asked == "" {
		return claims.ByName{}, nil
	}
	sts, err := StatefulSetOf(ctx, live, pvc.Namespace, asked)
	if err != nil {
		return claims.ByName{}, err
	}
	return claims.SelectedByName(pvc.Name, pvc.Annotations, sts), nil
}

// RefusedSelectionMessage says that the Listener of claim selects the pods
// that mount it, not the pod its annotation asks for (b), and why.
func RefusedSelectionMessage(claim string, b claims.ByName, tmpl string) string {
	return fmt.Sprintf("claim %s, annotated %s: %s, %s", claim, v1alpha1.AnnotationStatefulSetClaimTemplate, tmpl, b.Refusal(claim))
}

// ControllingClaim is the claim that controls l (a copy from the cache),
// nil when none does or it is gone.
func ControllingClaim(ctx context.Context, c client.Reader, l *v1alpha1.Listener) (*corev1.PersistentVolumeClaim, error) {
	owner := metav1.GetControllerOf(l)
	if owner == nil || owner.Kind != "PersistentVolumeClaim" {
		return nil, nil
	}
	claim := &corev1.PersistentVolumeClaim{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: l.Namespace, Name: owner.Name}, claim); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("get claim %s/%s of listener %s: %w", l.Namespace, owner.Name, l.Name, err)
	}
	if claim.UID != owner.UID {
		return nil, nil
	}
	return claim, nil
}

// EventNoPorts tells the pods of a claim whose Listener has no ports (they
// wait for an address that cannot come) what to fix.
const EventNoPorts = "ListenerWithoutPorts"

// PortlessMessage says why a claim's own Listener has no ports and what to
// do about it.
func PortlessMessage(listener, claim string) string {
	return fmt.Sprintf("Listener %s of claim %s has no ports: no container of the pods that mount the claim declares one, so no Service can be made and the pods wait for an address; "+
		"declare the served ports on the container that serves (e.g. ports: [{name: http, containerPort: 8080}]) and recreate the pods, or share a Listener that has ports with the %s annotation",
		listener, claim, v1alpha1.AnnotationListenerName)
}
