package webhooks

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/gateway"
	"github.com/listener-operator/listener-operator/api/ports"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/api/validation"
)

// gatewayPortErrors refuses a pod or workload whose listener volumes get
// Listeners of their own of a gateway class whose sections cannot route
// the containers' ports: such a Listener's ports are the containers' ports
// (ports.FromPods, the claim reconciler's rule), and gateway.Bindings is
// the rule the Listener webhook and the reconciler apply to them. Without
// this the pods would start and wait for an address that never comes.
func (v *workloadValidator) gatewayPortErrors(ctx context.Context, w *workloadView, kind string, facts validation.ClaimFacts) field.ErrorList {
	var annotations []map[string]string
	for _, c := range w.listenerClaims(kind) {
		if claims.WillOwnListener(c.annotations, facts.DefaultClass) {
			annotations = append(annotations, c.annotations)
		}
	}
	if w.templateOptedIn(kind) {
		annotations = append(annotations, claims.OptInAnnotations(w.Spec.Template.Metadata.Annotations, facts.DefaultClass))
	}
	path := field.NewPath("spec", "containers")
	if kind != "Pod" {
		path = templatePath(kind).Child("spec", "containers")
	}
	var errs field.ErrorList
	seen := map[string]bool{}
	for _, ann := range annotations {
		class, _ := claims.Named(ann)
		if class == "" {
			class = facts.DefaultClass
		}
		if class == "" || seen[class] {
			continue
		}
		seen[class] = true
		errs = append(errs, v.classPortErrors(ctx, class, w.podSpec(kind), path, "the listener volume's own Listener")...)
	}
	return errs
}

// standaloneClaimPortErrors refuses a pod that mounts listener claims of
// its own (standalone claims, own: claim name → class) of a gateway class
// whose sections cannot route the pod's container ports, as
// gatewayPortErrors refuses claim templates and ephemeral volumes: the
// claim reconciler's write of those ports into the claim's Listener would
// be refused, and the pod would wait. Only this pod's ports are judged:
// the other pods that mount the claim are not read at admission.
func (v *workloadValidator) standaloneClaimPortErrors(ctx context.Context, own []ownClaim, spec *podSpecView) field.ErrorList {
	var errs field.ErrorList
	for _, c := range own {
		if v.lookup.withoutGateway(c.class) {
			continue // nothing to judge: no message to build (BenchmarkPodWebhookServing)
		}
		errs = append(errs, v.classPortErrors(ctx, c.class, spec, field.NewPath("spec", "containers"), fmt.Sprintf("the Listener of claim %q", c.claim))...)
	}
	return errs
}

// classPortErrors are the errors of the container ports of spec (at path)
// as the ports of a Listener of class (named in the messages as listener):
// what gateway.Bindings refuses. A class that does not exist or has no
// gateway gives none (a missing class is validation.Claim's to report).
func (v *workloadValidator) classPortErrors(ctx context.Context, class string, spec *podSpecView, path *field.Path, listener string) field.ErrorList {
	if v.lookup.withoutGateway(class) {
		return nil
	}
	var lc v1alpha1.ListenerClass
	if err := v.lookup.get(ctx, types.NamespacedName{Name: class}, &lc); err != nil || lc.Spec.Gateway == nil {
		return nil
	}
	l := &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Name: "listener"}, Spec: v1alpha1.ListenerSpec{Ports: ports.FromPods([]corev1.Pod{runningPod(spec)})}}
	_, unrouted := gateway.Bindings(&lc, l)
	var errs field.ErrorList
	for _, e := range unrouted {
		if e.Field == "metadata.name" {
			continue // the route's name comes from the claim's, checked on the Listener
		}
		errs = append(errs, field.Invalid(path, e.BadValue, fmt.Sprintf("the container port %q becomes a port of %s: %s", fmt.Sprint(e.BadValue), listener, e.Detail)))
	}
	return errs
}

// runningPod is a Running pod with the containers' ports of spec: what
// ports.FromPods reads of the pods the Listener's ports come from.
func runningPod(spec *podSpecView) corev1.Pod {
	p := corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	for _, c := range spec.Containers {
		cc := corev1.Container{Name: c.Name}
		for _, port := range c.Ports {
			cc.Ports = append(cc.Ports, corev1.ContainerPort{Name: port.Name, ContainerPort: port.ContainerPort, Protocol: port.Protocol})
		}
		p.Spec.Containers = append(p.Spec.Containers, cc)
	}
	return p
}
