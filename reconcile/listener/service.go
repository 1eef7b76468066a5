package listener

import (
	"context"
	"fmt"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/service"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// Labels every generated Service carries (see api/service).
const (
	LabelName      = service.LabelName
	LabelInstance  = service.LabelInstance
	LabelManagedBy = service.LabelManagedBy

	// LabelNameValue is the app.kubernetes.io/name of generated Services.
	LabelNameValue = service.LabelNameValue
)

// desiredService is the Service a Listener of this class should have, as the
// partial object the operator applies: only the fields it owns
// (service.Desired, the one rule the webhook checks too). The parts of the
// Listener's overrides the class does not allow are left out and returned
// as refused. host is the DNS name it announces (hostname.go; "" none);
// current is its Service as it is now (nil: none yet), whose keys a class
// in mode Warn may keep (service.CarriedBy). The error means the class
// itself is broken.
func desiredService(l *v1alpha1.Listener, class *v1alpha1.ListenerClass, host string, current *corev1.Service) (*unstructured.Unstructured, serviceFindings, error) {
	u, res, err := service.Desired(l, class, host, service.CarriedBy(l, current))
	if err != nil {
		return nil, serviceFindings{}, err
	}
	if mutantKeepRemovedPorts && current != nil { // mutants.go
		if err := keepRemovedPorts(u, current); err != nil {
			return nil, serviceFindings{}, err
		}
	}
	return u, serviceFindings{refused: res.Refused, leftOut: res.LeftOut, tolerated: res.Tolerated}, nil
}

// serviceInputs are what l's Service is made from besides l and its
// class: the DNS name the class gives it (hostnameconflict.go), and its
// Service as it is now (nil: none yet), whose keys a class in mode Warn
// may keep.
func (r *listenerReconciler) serviceInputs(ctx context.Context, l *v1alpha1.Listener, class *v1alpha1.ListenerClass) (hostnameClaim, *corev1.Service, error) {
	hc, err := r.hostnameClaimOf(ctx, l, class)
	if err != nil {
		return hostnameClaim{}, nil, err
	}
	current, err := r.existingService(ctx, l.Namespace, names.ServiceName(l.Name))
	return hc, current, err
}

// covers reports whether every field of want is present in have with the
// same value: have may carry more (defaults, allocations, other managers'
// fields), but none of what the operator wants may differ.
func covers(have, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return len(w) == 0 && have == nil
		}
		for k, v := range w {
			if !covers(h[k], v) {
				return false
			}
		}
		return true
	case []any:
		h, ok := have.([]any)
		if !ok || len(h) != len(w) {
			return len(w) == 0 && have == nil
		}
		for i := range w {
			if !covers(h[i], w[i]) {
				return false
			}
		}
		return true
	}
	if a, ok := number(have); ok {
		b, ok := number(want)
		return ok && a == b
	}
	return reflect.DeepEqual(have, want)
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

// serviceUpToDate reports whether an existing Service already is what the
// operator would apply, so that a steady cluster sees no writes.
func serviceUpToDate(existing *corev1.Service, want *unstructured.Unstructured) (bool, error) {
	if existing.Annotations[v1alpha1.AnnotationServiceHash] != want.GetAnnotations()[v1alpha1.AnnotationServiceHash] {
		return false, nil
	}
	have, err := runtime.DefaultUnstructuredConverter.ToUnstructured(existing)
	if err != nil {
		return false, fmt.Errorf("convert service %s/%s: %w", existing.Namespace, existing.Name, err)
	}
	// Typed objects from a client carry no type meta.
	have["apiVersion"], have["kind"] = "v1", "Service"
	return covers(have, want.Object), nil
}
