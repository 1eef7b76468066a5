package listener

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/listener-operator/listener-operator/api/service"
)

// The robustness suite's mutants of this package (make
// robustness-mutants): each re-introduces a defect that was fixed, behind
// a build tag, to show that the suite finds it. Without the tags every
// one is false.
//
//   - robustness_mutant_hostname_conflict (mutant_hostname_conflict.go):
//     every Listener publishes its name, taken or not;
//   - robustness_mutant_owned_condition (mutant_owned_condition.go):
//     TenantMetadataAllowed is left out of the part of the status the
//     Listener controller owns, so it looks new on every reconcile and the
//     status is written again (issue 46, item 1);
//   - robustness_mutant_port_rebuild (mutant_port_rebuild.go): the
//     Service's ports are not rebuilt from the Listener's alone: a port
//     the Listener no longer declares stays on its Service;
//   - robustness_mutant_range_loadbalancer (mutant_range_loadbalancer.go):
//     a LoadBalancer class's node-port range is ignored, so its Services
//     take node ports anywhere (issue 48, shape 7).

// keepRemovedPorts is the defect of robustness_mutant_port_rebuild: the
// ports of current that want does not name are added to want (with their
// node ports), as a merge with the Service as it is would keep them.
func keepRemovedPorts(want *unstructured.Unstructured, current *corev1.Service) error {
	ports, _, err := unstructured.NestedSlice(want.Object, "spec", "ports")
	if err != nil {
		return err
	}
	named := map[string]bool{}
	for _, p := range ports {
		if m, ok := p.(map[string]any); ok {
			named[fmt.Sprint(m["name"])] = true
		}
	}
	for _, p := range current.Spec.Ports {
		if !named[p.Name] {
			ports = append(ports, map[string]any{"name": p.Name, "port": int64(p.Port), "targetPort": int64(p.Port), "protocol": string(p.Protocol)})
		}
	}
	if err := unstructured.SetNestedSlice(want.Object, ports, "spec", "ports"); err != nil {
		return err
	}
	return service.StampHash(want)
}
