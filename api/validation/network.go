package validation

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// maxRangeSize bounds a class's node port range: the API server's whole
// default band is 2,768 ports, and a range is meant for one workload.
const maxRangeSize = 4096

// networkFields checks the fields for networks that are not flat: a node
// port range that can hold at least one port and no more than a band, and
// IP families that a Service can have with the class's policy.
func networkFields(s *v1alpha1.ListenerClassSpec, spec *field.Path) field.ErrorList {
	var errs field.ErrorList
	if r := s.NodePortRange; r != nil {
		p := spec.Child("nodePortRange")
		switch {
		case r.From < 1 || r.To > 65535 || r.From > r.To:
			errs = append(errs, field.Invalid(p, r.String(), "write from and to between 1 and 65535, from not greater than to"))
		case r.Size() > maxRangeSize:
			errs = append(errs, field.Invalid(p, r.String(), fmt.Sprintf("holds %d ports, more than the %d a range may: a range is meant for one workload (a class per workload)", r.Size(), maxRangeSize)))
		case r.PerNamespace != nil && (*r.PerNamespace < 1 || int(*r.PerNamespace) > r.Size()):
			errs = append(errs, field.Invalid(p.Child("perNamespace"), *r.PerNamespace, fmt.Sprintf("write a number of ports between 1 and %d (the size of range %s): it is the most ports one namespace may hold of the range; remove it for no bound", r.Size(), r)))
		}
	}
	fp := spec.Child("ipFamilies")
	for i, f := range s.IPFamilies {
		if f != corev1.IPv4Protocol && f != corev1.IPv6Protocol {
			errs = append(errs, field.NotSupported(fp.Index(i), f, []string{string(corev1.IPv4Protocol), string(corev1.IPv6Protocol)}))
		} else if slices.Index(s.IPFamilies, f) < i {
			errs = append(errs, field.Duplicate(fp.Index(i), f))
		}
	}
	if s.IPFamilyPolicy != nil {
		pp := spec.Child("ipFamilyPolicy")
		switch policy := *s.IPFamilyPolicy; {
		case policy == corev1.IPFamilyPolicySingleStack && len(s.IPFamilies) > 1:
			errs = append(errs, field.Invalid(fp, s.IPFamilies, "ipFamilyPolicy SingleStack takes one family; name one, or set ipFamilyPolicy: PreferDualStack"))
		case policy != corev1.IPFamilyPolicySingleStack && policy != corev1.IPFamilyPolicyPreferDualStack && policy != corev1.IPFamilyPolicyRequireDualStack:
			errs = append(errs, field.NotSupported(pp, policy, []string{string(corev1.IPFamilyPolicySingleStack), string(corev1.IPFamilyPolicyPreferDualStack), string(corev1.IPFamilyPolicyRequireDualStack)}))
		}
	} else if len(s.IPFamilies) > 1 {
		errs = append(errs, field.Required(spec.Child("ipFamilyPolicy"), "two ipFamilies need ipFamilyPolicy PreferDualStack or RequireDualStack (a Service without a policy is single-stack)"))
	}
	return errs
}

// networkWarnings are the network fields that have no effect with the
// class's serviceType.
func networkWarnings(s *v1alpha1.ListenerClassSpec) []string {
	var warnings []string
	if s.NodePortRange != nil && s.ServiceType == v1alpha1.ServiceTypeClusterIP {
		warnings = append(warnings, fmt.Sprintf("spec.nodePortRange: %s is ignored: a ClusterIP Service has no node ports; remove it or set serviceType: NodePort", s.NodePortRange))
	}
	if s.NodeAddress == v1alpha1.NodeAddressAnnotation && s.ServiceType != v1alpha1.ServiceTypeNodePort {
		warnings = append(warnings, fmt.Sprintf("spec.nodeAddress: Annotation is ignored: only NodePort Listeners publish node addresses, not %s; remove it or set serviceType: NodePort", s.ServiceType))
	}
	return warnings
}

// OverlappingRanges warns about the classes whose node port ranges share
// ports with lc's: their Listeners then take blocks first come, first
// served, and a replica's formula port may be another workload's.
// Class names are cluster-scoped, so naming them reveals no namespace.
func OverlappingRanges(lc *v1alpha1.ListenerClass, others []v1alpha1.ListenerClass) []string {
	r := lc.Spec.NodePortRange
	if r == nil {
		return nil
	}
	var warnings []string
	for i := range others {
		o := &others[i]
		if o.Name == lc.Name || o.Spec.NodePortRange == nil || !r.Overlaps(*o.Spec.NodePortRange) {
			continue
		}
		warnings = append(warnings, fmt.Sprintf("spec.nodePortRange: %s overlaps %s of ListenerClass %s: their Listeners share those ports first come, first served; give each workload a range of its own",
			r, o.Spec.NodePortRange, o.Name))
	}
	return warnings
}
