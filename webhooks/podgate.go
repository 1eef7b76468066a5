package webhooks

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/caches"
)

// indexClassGatesPods is the index of gatingClasses.
const indexClassGatesPods = "listeners.stackable.tech/class-gates-pods"

// indexGatingClasses files the ListenerClasses c holds whose pods get the
// readiness gate (spec.podReadiness Gate) by name: the pod webhook asks it
// of the class of every listener volume a pod mounts, without a copy of
// the class (docs/benchmarks.md, "Admission floor").
func indexGatingClasses(ctx context.Context, c cache.Informers) (*caches.KeyIndex, error) {
	return caches.NewKeyIndex(ctx, c, &v1alpha1.ListenerClass{}, indexClassGatesPods, func(o client.Object) []string {
		if lc, ok := o.(*v1alpha1.ListenerClass); ok && lc.Spec.GatesPods() {
			return []string{lc.Name}
		}
		return nil
	})
}

// gateUnknown counts pods admitted without the readiness gate because the
// class of one of their listener volumes was not known at admission (a
// shared Listener that does not exist yet, a class not in the cache yet,
// a claim template that names no class): the webhook fails open.
var gateUnknown = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "listener_operator_webhook_readiness_gate_unknown_total",
	Help: "Pods admitted without the listeners.stackable.tech/addresses-ready readiness gate because the ListenerClass of a listener volume was not known at admission.",
})

func init() {
	metrics.Registry.MustRegister(gateUnknown)
}

// gates reports whether a pod whose listener volumes use uses (in
// namespace) gets the readiness gate: when the class of any of them gates
// pods. A volume whose class cannot be told is counted (gateUnknown) and
// adds no gate.
func (l *lookup) gates(ctx context.Context, namespace string, uses []claims.Use) bool {
	if l.gatingClasses == nil {
		return false
	}
	unknown := false
	for _, use := range uses {
		class := use.Class
		if class == "" && use.Listener != "" {
			class = l.listenerClass(ctx, namespace, use.Listener)
		}
		switch {
		case class == "" || !l.gatingClasses.Holds(types.NamespacedName{Name: class}):
			unknown = true
		case l.gatingClasses.Has(class):
			return true
		}
	}
	if unknown {
		gateUnknown.Inc()
	}
	return false
}

// listenerClass is the class of the Listener name in namespace as the
// cache has it; "" when it does not (yet) or names none.
func (l *lookup) listenerClass(ctx context.Context, namespace, name string) string {
	var lis v1alpha1.Listener
	if err := l.cache.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &lis); err != nil || lis.Spec.ClassName == nil {
		return ""
	}
	return *lis.Spec.ClassName
}

// addGate adds the readiness gate to the pod's spec unless it has it.
func addGate(p *patch, spec *podSpecView) {
	for _, g := range spec.ReadinessGates {
		if g.ConditionType == v1alpha1.PodConditionAddressesReady {
			return
		}
	}
	n := length(spec.ReadinessGates)
	p.appendTo("/spec/readinessGates", &n, map[string]any{"conditionType": v1alpha1.PodConditionAddressesReady})
}
