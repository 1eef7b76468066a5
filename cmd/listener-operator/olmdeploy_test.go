package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listener-operator/listener-operator/internal/testenv"
)

// bundleObjects returns the objects of the bundle's olm-deployer ConfigMap
// (bundle/, written by make bundle), as the deployer reads them.
func bundleObjects(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "bundle", "manifests", "listener-operator-olm-manifests_configmap.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cm corev1.ConfigMap
	if err := yaml.Unmarshal(raw, &cm); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for k, v := range cm.Data {
		if err := os.WriteFile(filepath.Join(dir, k), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	objs, err := readManifests(dir)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// TestOLMRetarget: every trace of the namespace the manifests were
// rendered for moves to the install namespace, and only those.
func TestOLMRetarget(t *testing.T) {
	for _, u := range bundleObjects(t) {
		retarget(u.Object, "", "listener-operator", "operators")
		data, err := yaml.Marshal(u.Object)
		if err != nil {
			t.Fatal(err)
		}
		s := string(data)
		for _, stale := range []string{"namespace: listener-operator\n", "- listener-operator\n", "system:serviceaccount:listener-operator:"} {
			if strings.Contains(s, stale) {
				t.Errorf("%s %s still names the namespace listener-operator (%q):\n%s", u.GetKind(), u.GetName(), stale, s)
			}
		}
		if u.GetKind() == "MutatingWebhookConfiguration" && !strings.Contains(s, "namespace: operators") {
			t.Errorf("webhook clientConfig not moved:\n%s", s)
		}
		if u.GetKind() == "ValidatingAdmissionPolicy" && strings.Contains(s, "manager-service-account") && !strings.Contains(s, "system:serviceaccount:operators:listener-operator") {
			t.Errorf("policy %s does not name the operator's account in the install namespace", u.GetName())
		}
	}
}

// TestOLMApply applies the deployer's objects that change no admission (the
// webhook configurations and policies would judge every other test's pods)
// to a real API server: each lands in the install namespace, owned by the
// deployer's Deployment or the ClusterRole bound to its account.
func TestOLMApply(t *testing.T) {
	e := testenv.Require(t, env)
	ctx := t.Context()
	ns := e.Namespace(t, ctx, "olm")
	labels := map[string]string{"app": "olm-deployer"}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "listener-operator-olm-deployer"}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{ServiceAccountName: "deployer", Containers: []corev1.Container{{Name: "c", Image: "x"}}}},
	}}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: ns + "-deployer"}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: ns + "-deployer"}, RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: "deployer"}}}
	testenv.Create(t, ctx, e.Client, dep, role, binding)
	var objs []*unstructured.Unstructured
	for _, u := range bundleObjects(t) {
		if !strings.HasSuffix(u.GetObjectKind().GroupVersionKind().Group, "admissionregistration.k8s.io") {
			objs = append(objs, u)
		}
	}
	t.Cleanup(func() {
		for _, u := range objs {
			_ = e.Client.Delete(ctx, u)
		}
		_ = e.Client.Delete(ctx, binding)
		_ = e.Client.Delete(ctx, role)
	})
	if err := olmApply(ctx, e.Client, objs, ns, "listener-operator", dep.Name); err != nil {
		t.Fatal(err)
	}
	checks := map[string]string{"DaemonSet": "Deployment", "Secret": "Deployment", "CSIDriver": "ClusterRole", "StorageClass": "ClusterRole", "FlowSchema": "ClusterRole"}
	for _, u := range objs {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(u.GroupVersionKind())
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(u), got); err != nil {
			t.Errorf("%s %s: %v", u.GetKind(), u.GetName(), err)
			continue
		}
		if got.GetNamespace() != "" && got.GetNamespace() != ns {
			t.Errorf("%s %s in %s, want %s", u.GetKind(), u.GetName(), got.GetNamespace(), ns)
		}
		refs := got.GetOwnerReferences()
		if want := checks[u.GetKind()]; want != "" && (len(refs) != 1 || refs[0].Kind != want) {
			t.Errorf("%s %s owned by %v, want its %s", u.GetKind(), u.GetName(), refs, want)
		}
	}
}
