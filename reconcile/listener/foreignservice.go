package listener

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// The reconcilers' cache holds only the Services that carry
// app.kubernetes.io/name=listener (caches.Reconcilers). A Service
// without it under the name a Listener wants is not in the cache: creating
// the Listener's Service then fails with AlreadyExists, and this file reads
// the Service from the API server to decide.

// errForeignService says that a Service the Listener does not control holds
// its Service's name.
type errForeignService struct{ name string }

func (e *errForeignService) Error() string {
	return fmt.Sprintf("Service %s exists and is not controlled by this Listener; refusing to take it over", e.name)
}

// foreignServiceVerdict is the status of a Listener whose Service name is
// taken by a Service it does not control.
func foreignServiceVerdict(name string) verdict {
	return verdict{reason: v1alpha1.ReasonForeignService, message: (&errForeignService{name: name}).Error()}
}

// asForeignService turns errForeignService into the Listener's verdict.
func asForeignService(err error) (verdict, bool) {
	var f *errForeignService
	if errors.As(err, &f) {
		return foreignServiceVerdict(f.name), true
	}
	return verdict{}, false
}

// foreignServiceRecheck is how often a Listener blocked by a foreign Service
// looks again. The foreign Service is not in the cache (it lacks the
// operator's label), so its deletion sends no event: the recheck is what
// notices that the name is free (one refused create and one read).
const foreignServiceRecheck = 10 * time.Second

// blockedOutsideCache: the verdict waits for a change the cache cannot see.
func blockedOutsideCache(v verdict) bool {
	return !v.ready && v.reason == v1alpha1.ReasonForeignService
}

// serviceOutsideCache decides what to do when creating the Listener's
// Service found one of that name that the cache does not show: a foreign
// one stops the Listener (errForeignService); one the Listener controls
// that lacks the operator's label (someone removed it) is applied, which
// puts the label back; one that carries it is only not in the cache yet (no
// Service and no error: cacheBehind).
func (r *listenerReconciler) serviceOutsideCache(ctx context.Context, l *v1alpha1.Listener, want *unstructured.Unstructured) (*corev1.Service, error) {
	existing := &corev1.Service{}
	if err := r.live.Get(ctx, client.ObjectKeyFromObject(want), existing); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil // deleted since: create again
		}
		return nil, fmt.Errorf("get service %s/%s: %w", want.GetNamespace(), want.GetName(), err)
	}
	own, err := r.isOwn(ctx, existing, l) // owner.go
	if err != nil {
		return nil, err
	}
	if !own {
		return nil, &errForeignService{name: existing.Name}
	}
	if existing.Labels[LabelName] == LabelNameValue {
		return nil, nil
	}
	return r.applyService(ctx, l, want, existing)
}
