package validation

import (
	"fmt"
	"slices"
	"sort"

	"k8s.io/apimachinery/pkg/types"
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

// HostnameOverlaps warns, when lc is new, gets spec.hostname or changes
// its template (old: before an update, nil on create), about each of the
// other classes whose template can give another Listener a name lc's
// template gives one of its own (addresses.TemplatesOverlap), naming the
// class, its template and two such Listeners: classes are cluster-scoped,
// and the example names no real object. The reconciler publishes such a
// name for one Listener only (HostnameConflict on the other), so this is a
// warning, not a refusal.
func HostnameOverlaps(lc, old *v1alpha1.ListenerClass, others []v1alpha1.ListenerClass) []string {
	p := lc.Spec.Hostname
	if p == nil || len(addresses.TemplateProblems(p)) > 0 ||
		old != nil && old.Spec.Hostname != nil && old.Spec.Hostname.Template == p.Template {
		return nil
	}
	others = slices.Clone(others)
	sort.Slice(others, func(i, j int) bool { return others[i].Name < others[j].Name })
	var warnings []string
	for i := range others {
		o := &others[i]
		if o.Name == lc.Name || o.Spec.Hostname == nil || len(addresses.TemplateProblems(o.Spec.Hostname)) > 0 {
			continue
		}
		ov, ok := addresses.TemplatesOverlap(p, o.Spec.Hostname)
		if !ok {
			continue
		}
		example := "(the templates meet as patterns)"
		if ov.Host != "" {
			example = fmt.Sprintf("%s of this class and %s of ListenerClass %q both get %q", listenerPhrase(ov.A), listenerPhrase(ov.B), o.Name, ov.Host)
		}
		warnings = append(warnings, fmt.Sprintf("spec.hostname.template: ListenerClass %q (template %q) can give another Listener the same name: %s; "+
			"the operator publishes such a name for the first Listener that has it only, and reports HostnameConflict on the other (docs/reconcile.md, \"Two Listeners, one name\"); "+
			"to keep the names apart, give the classes templates that cannot meet (e.g. under different zones)",
			o.Name, o.Spec.Hostname.Template, example))
	}
	return warnings
}

// listenerPhrase names a Listener of an overlap example; an empty field
// is any.
func listenerPhrase(l types.NamespacedName) string {
	name, ns := fmt.Sprintf("Listener %q", l.Name), fmt.Sprintf("in namespace %q", l.Namespace)
	if l.Name == "" {
		name = "any Listener"
	}
	if l.Namespace == "" {
		ns = "in any namespace"
	}
	return name + " " + ns
}
