package testenv

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// TestOwnerReferencesPermissionEnforcement starts a control plane with the
// admission plugin and checks what it enforces: a user who may create
// ConfigMaps but not update pods/finalizers is refused an owner reference
// to a pod with blockOwnerDeletion, and admitted once granted that.
func TestOwnerReferencesPermissionEnforcement(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a kube-apiserver: run without -short")
	}
	e, err := Start(Options{OwnerReferencesPermissionEnforcement: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Stop(); err != nil {
			t.Error(err)
		}
	})
	ctx := context.Background()
	const user = "owner-test"
	rules := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create", "get"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}},
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: rules}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "owner", Namespace: "default"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}},
	}
	for _, o := range []client.Object{role, binding, pod} {
		if err := e.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	u, err := e.Environment.ControlPlane.AddUser(envtest.User{Name: user}, e.Config)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(u.Config(), client.Options{Scheme: e.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	owned := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
		}}}}
	}
	if err := c.Create(ctx, owned("refused")); !apierrors.IsForbidden(err) {
		t.Fatalf("create with blockOwnerDeletion and no pods/finalizers: err %v, want Forbidden", err)
	}
	role.Rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods/finalizers"}, Verbs: []string{"update"}})
	if err := e.Client.Update(ctx, role); err != nil {
		t.Fatal(err)
	}
	// RBAC changes reach the authorizer through an informer: retry briefly.
	var lastErr error
	for range 50 {
		if lastErr = c.Create(ctx, owned("admitted")); lastErr == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("create with pods/finalizers granted: %v", lastErr)
}
