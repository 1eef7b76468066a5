package validation

import (
	"strings"
	"testing"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// TestHostnameOneToOne: a template that can give two Listeners one name is
// an error on a new class or a changed template, a warning on a class
// whose template stays; and never one of ListenerClass's errors, which the
// reconciler turns into Invalid Listeners.
func TestHostnameOneToOne(t *testing.T) {
	class := func(template string, allow bool) *v1alpha1.ListenerClass {
		return &v1alpha1.ListenerClass{Spec: v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP,
			Hostname: &v1alpha1.HostnamePolicy{Template: template, AllowAmbiguous: ptr(allow)}}}
	}
	const flat, other, good = "{listener}-{namespace}.example.test", "{namespace}-{listener}.example.test", "{listener}.{namespace}.example.test"
	noHostname := &v1alpha1.ListenerClass{Spec: v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP}}
	for _, tc := range []struct {
		name          string
		lc, old       *v1alpha1.ListenerClass
		wantErr, warn bool
	}{
		{"new, one-to-one", class(good, false), nil, false, false},
		{"new, flattened", class(flat, false), nil, true, false},
		{"new, flattened, opted in", class(flat, true), nil, false, false},
		{"no hostname", noHostname, nil, false, false},
		{"hostname added", class(flat, false), noHostname, true, false},
		{"template kept", class(flat, false), class(flat, false), false, true},
		{"template kept, opt-in removed", class(flat, false), class(flat, true), false, true},
		{"template changed", class(other, false), class(flat, false), true, false},
		{"template changed, opted in", class(other, true), class(flat, false), false, false},
		{"template fixed", class(good, false), class(flat, false), false, false},
	} {
		errs, warnings := HostnameOneToOne(tc.lc, tc.old)
		if (len(errs) > 0) != tc.wantErr || (len(warnings) > 0) != tc.warn {
			t.Errorf("%s: HostnameOneToOne = %v, %q; want error %t, warning %t", tc.name, errs, warnings, tc.wantErr, tc.warn)
		}
		for _, e := range errs {
			if e.Field != "spec.hostname.template" || !strings.Contains(e.Detail, "allowAmbiguous: true") {
				t.Errorf("%s: error %v, want one on spec.hostname.template that names the fixes", tc.name, e)
			}
		}
		for _, w := range warnings {
			if !strings.HasPrefix(w, "spec.hostname.template: ") || !strings.Contains(w, "allowAmbiguous: true") {
				t.Errorf("%s: warning %q, want one on spec.hostname.template that names the fixes", tc.name, w)
			}
		}
		if errs := ListenerClass(tc.lc); len(errs) > 0 {
			t.Errorf("%s: ListenerClass = %v, want no error: the reconciler would make the class's Listeners Invalid", tc.name, errs)
		}
	}
}
