package ordinary

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/labels"
)

// The shapes the benchmarks rely on: a Service selects its own pod only, a
// claim and a namespace carry a last-applied copy of the size measured, a
// slice names its Service.
func TestShapes(t *testing.T) {
	svc, pod, other := Service(42, "ns"), Pod(42, "ns"), Pod(43, "ns")
	sel := labels.SelectorFromSet(svc.Spec.Selector)
	if !sel.Matches(labels.Set(pod.Labels)) || sel.Matches(labels.Set(other.Labels)) {
		t.Errorf("Service 42 selects %v: want pod 42 only", svc.Spec.Selector)
	}
	c := Claim(7, "ns", "standard")
	applied := c.Annotations[AnnotationLastApplied]
	if len(applied) < lastAppliedSize || !json.Valid([]byte(applied)) || !strings.Contains(applied, `"data-00007"`) {
		t.Errorf("last-applied of claim 7 is %d bytes (valid JSON %v): want a copy of the claim of at least %d", len(applied), json.Valid([]byte(applied)), lastAppliedSize)
	}
	if *c.Spec.StorageClassName != "standard" {
		t.Errorf("claim 7 has class %q", *c.Spec.StorageClassName)
	}
	s := EndpointSlice(42, "ns", "node-1")
	if s.Labels["kubernetes.io/service-name"] != svc.Name || s.Endpoints[0].TargetRef.Name != pod.Name {
		t.Errorf("slice 42 names Service %q and pod %q", s.Labels["kubernetes.io/service-name"], s.Endpoints[0].TargetRef.Name)
	}
	if svc.Labels["kubernetes.io/service-name"] != "" {
		t.Error("the slice's labels leaked into the Service")
	}
	ns := Namespace(7)
	applied = ns.Annotations[AnnotationLastApplied]
	if ns.Name != "tenant-00007" || len(applied) < lastAppliedSize || !strings.Contains(applied, `"tenant-00007"`) || len(ns.Labels) < 3 {
		t.Errorf("namespace 7 is %q with %d labels and a last-applied copy of %d bytes", ns.Name, len(ns.Labels), len(applied))
	}
}
