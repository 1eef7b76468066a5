package validation

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/listener-operator/listener-operator/api/addresses"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// hostnamePolicy checks a ListenerClass's spec.hostname (see
// addresses.TemplateProblems).
func hostnamePolicy(p *v1alpha1.HostnamePolicy, path *field.Path) field.ErrorList {
	if p == nil {
		return nil
	}
	var errs field.ErrorList
	for _, msg := range addresses.TemplateProblems(p) {
		errs = append(errs, field.Invalid(path.Child("template"), p.Template, msg))
	}
	return errs
}
