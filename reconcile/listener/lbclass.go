package listener

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/reconcile/internal/metrics"
)

// applyOrRecreate applies want to the Listener's Service, or, when want
// gives it another loadBalancerClass, deletes it so that the next
// reconcile makes it anew: the API server refuses to change
// spec.loadBalancerClass of a LoadBalancer Service in place, so a class
// whose loadBalancerClass changed would otherwise leave its Listeners
// Invalid until someone deleted their Services. It returns no Service
// after a deletion (the reconcile looks again once the cache saw it).
func (r *listenerReconciler) applyOrRecreate(ctx context.Context, l *v1alpha1.Listener, want *unstructured.Unstructured, svc *corev1.Service) (*corev1.Service, error) {
	from, to, changed := loadBalancerClassChange(svc, want)
	if !changed {
		return r.applyService(ctx, l, want, svc)
	}
	err := r.client.Delete(ctx, svc, client.Preconditions{UID: &svc.UID})
	if metrics.CountWrite(ControllerName, "Service", "delete", err) != nil {
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil, nil // deleted already; the cache is behind
		}
		return nil, fmt.Errorf("delete service %s/%s of listener %s to change its loadBalancerClass: %w", svc.Namespace, svc.Name, l.Name, err)
	}
	r.recorder.Eventf(l, svc, corev1.EventTypeNormal, EventServiceDeleted, "Delete",
		"Deleted Service %s to make it again with loadBalancerClass %q (was %q): the field cannot change in place; its load balancer address may change",
		svc.Name, to, from)
	return nil, nil
}

// loadBalancerClassChange reports whether want sets another
// loadBalancerClass on a Service that is and stays a LoadBalancer. A
// class that stops naming one is not a change here: the Service may have
// been given one by someone else (a defaulting webhook), and deleting it
// would loop; the apply then says what the API server thinks.
func loadBalancerClassChange(svc *corev1.Service, want *unstructured.Unstructured) (from, to string, changed bool) {
	typ, _, _ := unstructured.NestedString(want.Object, "spec", "type")
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer || typ != string(corev1.ServiceTypeLoadBalancer) {
		return "", "", false
	}
	to, _, _ = unstructured.NestedString(want.Object, "spec", "loadBalancerClass")
	from = ptr.Deref(svc.Spec.LoadBalancerClass, "")
	return from, to, to != "" && to != from
}
