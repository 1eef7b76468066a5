package validation

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/gateway"
	"github.com/listener-operator/listener-operator/api/service"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// tenantMetadata checks a class's spec.tenantMetadata: each entry is a
// label or annotation key, or "<prefix>/*".
func tenantMetadata(p *v1alpha1.TenantMetadataPolicy, path *field.Path) field.ErrorList {
	if p == nil {
		return nil
	}
	var errs field.ErrorList
	for kind, entries := range map[string][]string{"labels": p.Labels, "annotations": p.Annotations} {
		for i, e := range entries {
			for _, msg := range service.PatternProblems(e, utilvalidation.IsQualifiedName) {
				errs = append(errs, field.Invalid(path.Child(kind).Index(i), e, msg))
			}
		}
	}
	service.SortErrors(errs)
	return errs
}

// tenantMetadataWarnings are the parts of a class's tenant policy that do
// less than they seem to: patterns over exposure keys (those stay the
// class's), and ports in serviceOverrides (a Service's ports are its
// Listener's declared ports; only appProtocol and targetPort of a port of
// the same name apply).
func tenantMetadataWarnings(lc *v1alpha1.ListenerClass) []string {
	var w []string
	if p := lc.Spec.TenantMetadata; p != nil {
		for _, e := range p.Labels {
			if msg := service.ExposurePatternWarning("labels", e); msg != "" {
				w = append(w, msg)
			}
		}
		for _, e := range p.Annotations {
			if msg := service.ExposurePatternWarning("annotations", e); msg != "" {
				w = append(w, msg)
			}
		}
	}
	if o := lc.Spec.ServiceOverrides; o != nil && len(o.Raw) > 0 {
		if obj, errs := service.Decode(o.Raw, true, field.NewPath("spec", "serviceOverrides")); len(errs) == 0 {
			if _, found, _ := unstructured.NestedFieldNoCopy(obj, "spec", "ports"); found {
				w = append(w, "spec.serviceOverrides.spec.ports: a Service's ports are its Listener's spec.ports; only appProtocol and targetPort of a port with the same name apply, the rest is ignored")
			}
		}
	}
	return w
}

// ListenerAgainstClass is the one rule, for the webhook, on what a
// Listener of class (nil when it does not exist) puts on its Service,
// which carries carried now (service.CarriedBy; what mode Warn may keep).
// The errors refuse the Listener: each objectOverrides item must decode
// strictly and name apiVersion and kind, and, with a class, the Service
// that results keeps what the class decides. The warnings say which of its
// own labels (or its claim's), and in mode Warn which keys of its
// overrides, stay off the Service, or reach it only because the class is
// in mode Warn. The reconciler applies the same service.Service
// (TestTenantInputAgreement).
func ListenerAgainstClass(l *v1alpha1.Listener, class *v1alpha1.ListenerClass, carried service.Carried) (field.ErrorList, []string) {
	errs := overridesDecode(l, class == nil)
	if class == nil {
		service.SortErrors(errs)
		return errs, nil
	}
	res, err := service.Service(l, class, carried)
	if err != nil {
		// The class's own overrides are broken: its webhook refuses
		// that, and the reconciler reports it on every Listener.
		return append(errs, field.Invalid(field.NewPath("spec", "className"), class.Name, err.Error())), nil
	}
	errs = append(errs, res.Refused...)
	_, unrouted := gateway.Bindings(class, l)
	errs = append(errs, unrouted...)
	service.SortErrors(errs)
	var warnings []string
	for _, e := range res.LeftOut {
		if len(e.Field) > len(overridesPrefix) && e.Field[:len(overridesPrefix)] == overridesPrefix {
			warnings = append(warnings, fmt.Sprintf("%s: %s", e.Field, e.Detail))
			continue
		}
		warnings = append(warnings, e.Detail)
	}
	for _, e := range res.Tolerated {
		warnings = append(warnings, fmt.Sprintf("%s: %s", e.Field, e.Detail))
	}
	return errs, warnings
}

// overridesPrefix starts the field of a finding about a Listener's
// objectOverrides, which its warning names (a label's names itself).
const overridesPrefix = "spec.objectOverrides"

// overridesDecode checks that each objectOverrides item decodes (reported
// here only without a class: with one, service.Service reports it) and
// names apiVersion and kind.
func overridesDecode(l *v1alpha1.Listener, reportDecode bool) field.ErrorList {
	var errs field.ErrorList
	for i, o := range l.Spec.ObjectOverrides {
		p := field.NewPath("spec", "objectOverrides").Index(i)
		obj, decodeErrs := service.Decode(o.Raw, false, p)
		if len(decodeErrs) > 0 {
			if reportDecode {
				errs = append(errs, decodeErrs...)
			}
			continue
		}
		u := unstructured.Unstructured{Object: obj}
		if u.GetAPIVersion() == "" || u.GetKind() == "" {
			errs = append(errs, field.Required(p.Child("kind"), "an override is matched to a generated object by apiVersion, kind, name and namespace; set apiVersion and kind (e.g. v1, Service)"))
		}
	}
	return errs
}

// ClaimLabelWarnings are the warnings for a listener claim whose own
// Listener (of class) would hand labels to its Service that the class does
// not let reach it: the Listener and its Service are made later, so the
// claim's author hears it now.
func ClaimLabelWarnings(claimLabels map[string]string, class *v1alpha1.ListenerClass) []string {
	leftOut, tolerated := service.TenantLabels(class, claims.ListenerLabels(claimLabels))
	var w []string
	for _, e := range leftOut {
		w = append(w, "the claim's labels go to its Listener: "+e.Detail)
	}
	for _, e := range tolerated {
		w = append(w, "the claim's labels go to its Listener: "+e.Detail)
	}
	return w
}
