package validation

import (
	"fmt"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/listener-operator/listener-operator/api/service"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// ListenerClass checks a ListenerClass for what would break the Services
// made from it (the reconciler relies on this function alone) and for
// serviceOverrides that would take over what the operator manages. Fields
// that only apply to other service types are not errors but warnings (see
// ListenerClassWarnings): the Stackable operator accepted and ignored them,
// and classes stored by it must keep working after a switch.
func ListenerClass(lc *v1alpha1.ListenerClass) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	s := &lc.Spec
	if s.LoadBalancerClass != nil && s.ServiceType == v1alpha1.ServiceTypeLoadBalancer {
		for _, msg := range utilvalidation.IsQualifiedName(*s.LoadBalancerClass) {
			errs = append(errs, field.Invalid(spec.Child("loadBalancerClass"), *s.LoadBalancerClass, msg))
		}
	}
	errs = append(errs, apivalidation.ValidateAnnotations(s.ServiceAnnotations, spec.Child("serviceAnnotations"))...)
	if s.ServiceOverrides != nil {
		errs = append(errs, serviceOverrides(s.ServiceOverrides, s.ServiceType, spec.Child("serviceOverrides"))...)
	}
	errs = append(errs, lockedServiceFields(s.LockedServiceFields, spec.Child("lockedServiceFields"))...)
	errs = append(errs, tenantMetadata(s.TenantMetadata, spec.Child("tenantMetadata"))...) // tenant.go
	errs = append(errs, hostnamePolicy(s.Hostname, spec.Child("hostname"))...)             // hostname.go
	errs = append(errs, networkFields(s, spec)...)                                         // network.go
	errs = append(errs, gatewayFields(s, spec)...)                                         // gateway.go
	errs = append(errs, sharingFields(s, spec)...)                                         // sharing.go
	return errs
}

// ListenerClassWarnings lists the fields of a ListenerClass that have no
// effect with its serviceType. The Stackable listener-operator accepted (and,
// before its 25.11 release, defaulted serviceExternalTrafficPolicy: Local on
// every class, ClusterIP included), so such classes are admitted with a
// warning that says what to remove, never refused.
func ListenerClassWarnings(lc *v1alpha1.ListenerClass) []string {
	var warnings []string
	s := &lc.Spec
	if s.LoadBalancerClass != nil && s.ServiceType != v1alpha1.ServiceTypeLoadBalancer {
		warnings = append(warnings, fmt.Sprintf("spec.loadBalancerClass: %q is ignored: it only applies to serviceType LoadBalancer, not %s; remove it or set serviceType: LoadBalancer", *s.LoadBalancerClass, s.ServiceType))
	}
	if s.PinnedNodePorts != nil && *s.PinnedNodePorts && s.ServiceType != v1alpha1.ServiceTypeNodePort {
		warnings = append(warnings, fmt.Sprintf("spec.pinnedNodePorts: true is ignored: only NodePort addresses depend on the node, so pinning needs serviceType NodePort, not %s; set pinnedNodePorts: false or serviceType: NodePort", s.ServiceType))
	}
	if s.ServiceExternalTrafficPolicy != nil && s.ServiceType == v1alpha1.ServiceTypeClusterIP {
		warnings = append(warnings, fmt.Sprintf("spec.serviceExternalTrafficPolicy: %q is ignored: it only applies to NodePort and LoadBalancer services; remove it or change serviceType", *s.ServiceExternalTrafficPolicy))
	}
	warnings = append(warnings, tenantMetadataWarnings(lc)...) // tenant.go
	warnings = append(warnings, networkWarnings(s)...)         // network.go
	return warnings
}

// serviceOverrides refuses overrides of what the operator must control: the
// Service's identity, its type (spec.serviceType decides it, and addresses
// are derived from it) and its selector (it selects the pods that mount the
// Listener's volumes). The override is read by the one strict decoder
// (service.Decode), as the reconciler reads it.
func serviceOverrides(raw *runtime.RawExtension, serviceType v1alpha1.ServiceType, path *field.Path) field.ErrorList {
	if len(raw.Raw) == 0 {
		return nil
	}
	obj, errs := service.Decode(raw.Raw, true, path)
	if len(errs) > 0 {
		return errs
	}
	u := unstructured.Unstructured{Object: obj}
	if v, ok := obj["apiVersion"]; ok && v != "v1" {
		errs = append(errs, field.Invalid(path.Child("apiVersion"), u.GetAPIVersion(), `overrides apply to a v1 Service; remove apiVersion or set it to "v1"`))
	}
	if v, ok := obj["kind"]; ok && v != "Service" {
		errs = append(errs, field.Invalid(path.Child("kind"), u.GetKind(), `overrides apply to a Service; remove kind or set it to "Service"`))
	}
	meta, _ := obj["metadata"].(map[string]any)
	if _, ok := meta["name"]; ok {
		errs = append(errs, field.Forbidden(path.Child("metadata", "name"), "the operator names each Listener's Service; remove metadata.name"))
	}
	if _, ok := meta["namespace"]; ok {
		errs = append(errs, field.Forbidden(path.Child("metadata", "namespace"), "a Service lives in its Listener's namespace; remove metadata.namespace"))
	}
	spec, _ := obj["spec"].(map[string]any)
	if t, ok := spec["type"].(string); ok && t != string(serviceType) {
		errs = append(errs, field.Forbidden(path.Child("spec", "type"),
			fmt.Sprintf("would change the Service type from %s to %s behind the operator's back; set spec.serviceType: %s instead", serviceType, t, t)))
	}
	if sel, ok := spec["selector"]; ok && sel != nil {
		errs = append(errs, field.Forbidden(path.Child("spec", "selector"),
			"the operator selects the pods that mount the Listener's volume; remove spec.selector (a Listener's spec.extraPodSelectorLabels narrows the selection)"))
	}
	return errs
}

// lockedServiceFields checks the entries of a class's lockedServiceFields.
func lockedServiceFields(fields []string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, f := range fields {
		p := path.Index(i)
		kind, key, ok := service.ParseLocked(f)
		if !ok {
			errs = append(errs, field.Invalid(p, f, `write "spec.<field>" (a field of a Service's spec, e.g. spec.sessionAffinity), "metadata.annotations[<key>]" or "metadata.labels[<key>]"`))
			continue
		}
		if kind != service.LockedSpec {
			for _, msg := range utilvalidation.IsQualifiedName(key) {
				errs = append(errs, field.Invalid(p, f, msg))
			}
		}
	}
	return errs
}
