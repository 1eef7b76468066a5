package webhooks

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// TestPodStatusPolicy installs config/admissionpolicies and checks, as the
// manager's service account, that in a pod's status it may set the
// readiness gate's condition (v1alpha1.PodConditionAddressesReady) and
// nothing else, while other users are not affected.
func TestPodStatusPolicy(t *testing.T) {
	e, manager := withPolicies(t)
	ctx := t.Context()
	ns := namespace(t, nil)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "x"}},
			ReadinessGates: []corev1.PodReadinessGate{{ConditionType: v1alpha1.PodConditionAddressesReady}}}}
	if err := e.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	patch := func(c client.Client, p string) error {
		return c.Status().Patch(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p"}}, client.RawPatch("application/strategic-merge-patch+json", []byte(p)))
	}
	if err := patch(e.Client, `{"status":{"phase":"Running","podIP":"10.0.0.1","podIPs":[{"ip":"10.0.0.1"}],"conditions":[{"type":"Ready","status":"False"}]}}`); err != nil {
		t.Fatal(err)
	}
	const denial = "the listener operator may only set the condition listeners.stackable.tech/addresses-ready in a pod status"
	attempt := 0
	eventually(t, "the policy in force", func() error {
		attempt++ // a new value each time: a patch that changes nothing is never refused
		if err := patch(manager, fmt.Sprintf(`{"status":{"message":"changed-%d"}}`, attempt)); err == nil || !strings.Contains(err.Error(), denial) {
			return errorf("the manager changed the status message: %v", err)
		}
		return nil
	})
	gate := func(status string) string {
		return fmt.Sprintf(`{"status":{"conditions":[{"type":%q,"status":%q,"reason":"R","message":"m"}]}}`, v1alpha1.PodConditionAddressesReady, status)
	}
	for _, tc := range []struct{ name, patch, want string }{
		{"the gate's condition", gate("False"), ""},
		{"the gate's condition again", gate("True"), ""},
		{"the Ready condition", `{"status":{"conditions":[{"type":"Ready","status":"True"}]}}`, denial + "; it changed other conditions of pod p"},
		{"another condition", `{"status":{"conditions":[{"type":"example.com/other","status":"True"}]}}`, denial + "; it changed other conditions of pod p"},
		{"the phase", `{"status":{"phase":"Failed"}}`, denial + "; it changed other status fields of pod p"},
		{"the host IP", `{"status":{"hostIP":"10.0.0.9"}}`, denial + "; it changed other status fields of pod p"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := patch(manager, tc.patch)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want a refusal containing %q", err, tc.want)
			}
		})
	}
	if err := patch(e.Client, `{"status":{"conditions":[{"type":"Ready","status":"True"}],"message":"by admin"}}`); err != nil {
		t.Errorf("the policy stopped another user: %v", err)
	}
}
