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

// HostnameOneToOne checks that lc's hostname template gives every Listener
// a name of its own (addresses.AmbiguityProblems). old is the class before
// an update, nil on create. A new class, a new spec.hostname or a changed
// template is refused (errors); a class whose template stays as it was
// (stored before this rule, or its allowAmbiguous removed) gets the same
// sentences as warnings: the names its Listeners publish survive, and the
// reconciler keeps two of them from publishing one name (HostnameConflict).
// It is not part of ListenerClass, which the reconciler also runs: a stored
// class's Listeners never become Invalid by it.
func HostnameOneToOne(lc, old *v1alpha1.ListenerClass) (field.ErrorList, []string) {
	p := lc.Spec.Hostname
	if p == nil || len(addresses.TemplateProblems(p)) > 0 {
		return nil, nil // no name, or ListenerClass refuses the template already
	}
	problems := addresses.AmbiguityProblems(p)
	if len(problems) == 0 {
		return nil, nil
	}
	path := field.NewPath("spec", "hostname", "template")
	if old != nil && old.Spec.Hostname != nil && old.Spec.Hostname.Template == p.Template {
		warnings := make([]string, len(problems))
		for i, msg := range problems {
			warnings[i] = path.String() + ": " + msg
		}
		return nil, warnings
	}
	errs := make(field.ErrorList, len(problems))
	for i, msg := range problems {
		errs[i] = field.Invalid(path, p.Template, msg)
	}
	return errs, nil
}
