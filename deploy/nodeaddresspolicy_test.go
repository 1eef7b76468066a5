package deploy

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestHelmNodeAddressPolicy: the chart installs the policy that keeps
// nodes from writing their own listeners.stackable.tech/address (where
// clients of nodeAddress: Annotation classes are sent) unless
// nodeAddressPolicy.enabled=false, which removes that policy and its
// binding and nothing else.
func TestHelmNodeAddressPolicy(t *testing.T) {
	const policy = "listener-operator-node-address"
	// The chart's other policies guard other things: turning this one off
	// must leave them.
	others := []string{"listener-operator-claim-labels", "listener-operator-pod-labels", "listener-operator-pod-status", "listener-operator-volumes", "listener-operator-deletes"}
	for _, tc := range []struct {
		name   string
		values []string
		want   bool
	}{
		{"default", nil, true},
		{"enabled", []string{"nodeAddressPolicy.enabled=true"}, true},
		{"disabled", []string{"nodeAddressPolicy.enabled=false"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := parse(t, helm(t, tc.values...))
			_, hasPolicy := o[key("ValidatingAdmissionPolicy", "", policy)]
			_, hasBinding := o[key("ValidatingAdmissionPolicyBinding", "", policy)]
			if hasPolicy != tc.want || hasBinding != tc.want {
				t.Fatalf("policy rendered %v, binding rendered %v; want both %v", hasPolicy, hasBinding, tc.want)
			}
			if tc.want {
				b := o.get(t, "ValidatingAdmissionPolicyBinding", "", policy)
				if got := str(t, b, "spec", "policyName"); got != policy {
					t.Errorf("the binding names policy %q, want %q", got, policy)
				}
				p := o.get(t, "ValidatingAdmissionPolicy", "", policy)
				if exprs := strings.Join(validationExpressions(t, p), " "); !strings.Contains(exprs, "newValue == variables.oldValue") {
					t.Errorf("the policy no longer refuses a changed annotation: %s", exprs)
				}
			}
			for _, name := range others {
				o.get(t, "ValidatingAdmissionPolicy", "", name)
				o.get(t, "ValidatingAdmissionPolicyBinding", "", name)
			}
		})
	}
}

// validationExpressions are the CEL expressions of a policy's validations.
func validationExpressions(t *testing.T, p *unstructured.Unstructured) []string {
	t.Helper()
	var out []string
	for _, v := range slice(t, p.Object, "spec", "validations") {
		if e, ok := v.(map[string]any)["expression"].(string); ok {
			out = append(out, e)
		}
	}
	return out
}
