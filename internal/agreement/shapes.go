package agreement

import (
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// Shapes is the table: claims with the listener annotations present, empty
// and both, of this driver's storage class and others, ephemeral volumes,
// a StatefulSet's claim and plain claims asking for a pod by name as one
// does, a claim pinned to a node, and a claim migrated
// from the Stackable operator (bound before this operator labelled its
// volume).
func Shapes() []Shape {
	const (
		cls  = v1alpha1.AnnotationListenerClass
		name = v1alpha1.AnnotationListenerName
		tmpl = v1alpha1.AnnotationStatefulSetClaimTemplate
	)
	ours, other := ptr(v1alpha1.StorageClassName), ptr(OtherClass)
	own := func(listener, class string) Answer {
		return Answer{IsListener: true, Listener: listener, Own: true, Class: class, Labels: labelled(listener)}
	}
	shared := Answer{IsListener: true, Listener: Shared, Labels: labelled(Shared)}
	noListener := Answer{IsListener: true, Labels: labelled()}
	notOurs := Answer{}

	var out []Shape
	add := func(s Shape) {
		if s.Pod == nil {
			s.Pod = pod(nil, named(s.Claim.Name))
		}
		out = append(out, s)
	}
	add(Shape{Name: "class", Claim: claim("data", ours, map[string]string{cls: Class}), Want: own("data", Class)})
	add(Shape{Name: "shared Listener", Claim: claim("data", ours, map[string]string{name: Shared}), Want: shared})
	add(Shape{Name: "both: the name wins", Claim: claim("data", ours, map[string]string{cls: Class, name: Shared}), Want: shared})
	add(Shape{Name: "class, empty name", Claim: claim("data", ours, map[string]string{cls: Class, name: ""}), Want: own("data", Class)})
	add(Shape{Name: "empty class", Claim: claim("data", ours, map[string]string{cls: ""}), Want: noListener})
	add(Shape{Name: "empty class, shared Listener", Claim: claim("data", ours, map[string]string{cls: "", name: Shared}), Want: shared})
	add(Shape{Name: "empty class and name", Claim: claim("data", ours, map[string]string{cls: "", name: ""}), Want: noListener})
	add(Shape{Name: "neither annotation", Claim: claim("data", ours, nil), Want: noListener})
	add(Shape{Name: "class, another storage class", Claim: claim("data", other, map[string]string{cls: Class}), Want: notOurs})
	add(Shape{Name: "shared Listener, no storage class", Claim: claim("data", nil, map[string]string{name: Shared}), Want: notOurs})
	add(Shape{Name: "another storage class", Claim: claim("data", other, nil), Want: notOurs})

	// A StatefulSet's claim whose Listener selects the pod by its name:
	// StatefulSet web has the listener claim template the claim names, so
	// its pod web-0 mounts it (made by this version or an earlier one: no
	// record on the claim, the StatefulSet decides). The pod needs no
	// selector label.
	add(Shape{Name: "StatefulSet claim", Claim: claim("listener-web-0", ours, map[string]string{cls: Class, tmpl: "listener"}),
		StatefulSet: statefulSet("web", "listener"),
		Pod:         pod(map[string]string{v1alpha1.LabelStatefulSetPodName: PodName}, named("listener-web-0")),
		Want:        Answer{IsListener: true, Listener: "listener-web-0", Own: true, Class: Class, Labels: labelled(), SelectsPod: PodName}})
	// A plain claim asking for pod db-0 by name, which no StatefulSet
	// made (admission refuses it): its Listener selects the pods that
	// mount it by label, never db-0, which does not.
	add(Shape{Name: "StatefulSet annotation, no StatefulSet", Claim: claim("x-db-0", ours, map[string]string{cls: Class, tmpl: "x"}),
		Want: own("x-db-0", Class)})
	// The same when StatefulSet db exists but has no such template.
	add(Shape{Name: "StatefulSet annotation, not its template", Claim: claim("x-db-0", ours, map[string]string{cls: Class, tmpl: "x"}),
		StatefulSet: statefulSet("db", "listener"), Want: own("x-db-0", Class)})

	// A claim bound to a volume pinned to a node: the pod is pinned there.
	pinned := claim("data", ours, map[string]string{cls: Class})
	pinnedWant := own("data", Class)
	pinnedWant.Pinned = Node
	add(Shape{Name: "pinned", Claim: pinned, Volume: volume(pinned, Node, "data"), Want: pinnedWant})

	// Migrated from the Stackable operator: bound, its volume not labelled
	// with its Listener yet.
	migrated := claim("data", ours, map[string]string{cls: Class})
	add(Shape{Name: "migrated", Claim: migrated, Volume: volume(migrated, "", ""), Want: own("data", Class)})

	// Bound, and its annotations changed since (while the webhooks were
	// down: admission refuses that): the volume keeps publishing the
	// Listener it was provisioned for, and the pod is labelled for it.
	// See Shape.Rebound.
	rebound := claim("data", ours, map[string]string{name: Shared})
	add(Shape{Name: "annotations changed after binding", Claim: rebound, Volume: volume(rebound, "", "data"), Rebound: true,
		Want: Answer{IsListener: true, Listener: "data", Own: true, Labels: labelled("data")}})

	// Ephemeral volumes: the claim is "<pod>-listener".
	eph := func(n string, sc *string, ann map[string]string, want Answer) {
		src := ephemeral(sc, ann)
		add(Shape{Name: n, Template: src.Ephemeral.VolumeClaimTemplate, Pod: pod(nil, src), Want: want})
	}
	eph("ephemeral, class", ours, map[string]string{cls: Class}, own("web-0-listener", Class))
	eph("ephemeral, shared Listener", ours, map[string]string{name: Shared}, shared)
	eph("ephemeral, default class", ours, nil, own("web-0-listener", DefaultClass))
	eph("ephemeral, another storage class", other, nil, notOurs)
	return out
}
