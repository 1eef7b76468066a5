package refused

import (
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestMessage: which answers of the API server are refusals to tell, and
// what they say.
func TestMessage(t *testing.T) {
	gr := schema.GroupResource{Group: "listeners.stackable.tech", Resource: "listeners"}
	invalid := apierrors.NewInvalid(schema.GroupKind{Group: gr.Group, Kind: "Listener"}, "web", field.ErrorList{field.Invalid(field.NewPath("spec", "ports").Index(0).Child("name"), "metrics", "cannot be routed")})
	for _, tc := range []struct {
		name string
		err  error
		want string
		ok   bool
	}{
		{"a webhook's or policy's denial", invalid, invalid.ErrStatus.Message, true},
		{"a quota", apierrors.NewForbidden(gr, "web", errors.New("exceeded quota: q")), `listeners.listeners.stackable.tech "web" is forbidden: exceeded quota: q`, true},
		{"wrapped", errors.Join(errors.New("update"), invalid), invalid.ErrStatus.Message, true},
		{"a conflict is retried, not told", apierrors.NewConflict(gr, "web", errors.New("changed")), "", false},
		{"gone", apierrors.NewNotFound(gr, "web"), "", false},
		{"the API server unavailable", apierrors.NewServiceUnavailable("later"), "", false},
		{"no status", errors.New("connection refused"), "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Message(tc.err)
			if got != tc.want || ok != tc.ok {
				t.Errorf("Message(%v) = %q, %v; want %q, %v", tc.err, got, ok, tc.want, tc.ok)
			}
		})
	}
}
