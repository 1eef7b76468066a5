package validation

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/listener-operator/listener-operator/api/lbsharing"
	"github.com/listener-operator/listener-operator/api/service"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// sharingFields checks a class with spec.loadBalancerSharing: a range
// that holds a port and no more than a band; serviceType LoadBalancer
// (only a load balancer shares an IP); externalTrafficPolicy Cluster
// (MetalLB shares an IP only between such Services); and no sharing
// annotation of its own, in serviceAnnotations or serviceOverrides (the
// operator sets one key per workload: a class-wide key would put every
// workload of a namespace on one IP, and their ports would clash). The
// webhook refuses such a class; the reconciler makes no Service from one.
func sharingFields(s *v1alpha1.ListenerClassSpec, spec *field.Path) field.ErrorList {
	r := s.LoadBalancerSharing
	if r == nil {
		return nil
	}
	p := spec.Child("loadBalancerSharing")
	var errs field.ErrorList
	switch {
	case r.From < 1 || r.To > 65535 || r.From > r.To:
		errs = append(errs, field.Invalid(p, r.String(), "write from and to between 1 and 65535, from not greater than to"))
	case r.Size() > maxRangeSize:
		errs = append(errs, field.Invalid(p, r.String(), fmt.Sprintf("holds %d ports, more than the %d a range may: the range is one workload's ports", r.Size(), maxRangeSize)))
	}
	if s.ServiceType != v1alpha1.ServiceTypeLoadBalancer {
		errs = append(errs, field.Invalid(p, r.String(), fmt.Sprintf("only a load balancer gives Services one IP, and serviceType is %s; set serviceType: LoadBalancer, or remove spec.loadBalancerSharing", s.ServiceType)))
	}
	if t := s.ServiceExternalTrafficPolicy; t != nil && *t == v1alpha1.TrafficPolicyLocal {
		errs = append(errs, field.Invalid(spec.Child("serviceExternalTrafficPolicy"), *t, "a load balancer shares one IP only between Services of externalTrafficPolicy Cluster (MetalLB refuses Local); set Cluster or remove it, or remove spec.loadBalancerSharing"))
	}
	for _, k := range lbsharing.Annotations {
		if _, ok := s.ServiceAnnotations[k]; ok {
			errs = append(errs, field.Forbidden(spec.Child("serviceAnnotations").Key(k), sharingKeyMessage))
		}
	}
	return append(errs, sharingOverrides(s, spec.Child("serviceOverrides"))...)
}

const sharingKeyMessage = "with spec.loadBalancerSharing the operator sets the sharing key itself, one per workload (docs/reconcile.md, \"Shared load balancers\"); remove this annotation"

// sharingOverrides refuses serviceOverrides of a sharing class that set a
// sharing annotation or externalTrafficPolicy Local (a class whose
// overrides do not decode is refused by serviceOverrides already).
func sharingOverrides(s *v1alpha1.ListenerClassSpec, path *field.Path) field.ErrorList {
	if s.ServiceOverrides == nil || len(s.ServiceOverrides.Raw) == 0 {
		return nil
	}
	obj, errs := service.Decode(s.ServiceOverrides.Raw, true, path)
	if len(errs) > 0 {
		return nil
	}
	var out field.ErrorList
	meta, _ := obj["metadata"].(map[string]any)
	ann, _ := meta["annotations"].(map[string]any)
	for _, k := range lbsharing.Annotations {
		if _, ok := ann[k]; ok {
			out = append(out, field.Forbidden(path.Child("metadata", "annotations").Key(k), sharingKeyMessage))
		}
	}
	spec, _ := obj["spec"].(map[string]any)
	if t, _ := spec["externalTrafficPolicy"].(string); t == string(v1alpha1.TrafficPolicyLocal) {
		out = append(out, field.Invalid(path.Child("spec", "externalTrafficPolicy"), t, "a load balancer shares one IP only between Services of externalTrafficPolicy Cluster (MetalLB refuses Local); remove it from serviceOverrides"))
	}
	return out
}
