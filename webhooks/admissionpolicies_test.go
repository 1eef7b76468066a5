package webhooks

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// TestPodLabelPolicy installs config/admissionpolicies and checks, as the manager's
// service account, that it may add the per-Listener selector labels and the
// listener-volume label to a pod and nothing else, while other users are not affected.
func TestPodLabelPolicy(t *testing.T) {
	e, manager := withPolicies(t)
	ctx := t.Context()

	ns := namespace(t, nil)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p", Labels: map[string]string{"app": "p"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "x", Ports: []corev1.ContainerPort{{ContainerPort: 80}}}}}}
	if err := e.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	patch := func(c client.Client, p string) error {
		return c.Patch(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p"}}, client.RawPatch("application/merge-patch+json", []byte(p)))
	}
	const denial = "the listener operator may only change labels starting with listener.stackable.tech/mnt. and the label listeners.stackable.tech/listener-volume on a pod"
	attempt := 0
	eventually(t, "the policy in force", func() error {
		attempt++ // a new value each time: a patch that changes nothing is never refused
		if err := patch(manager, fmt.Sprintf(`{"metadata":{"labels":{"app":"changed-%d"}}}`, attempt)); err == nil || !strings.Contains(err.Error(), denial) {
			return errorf("the manager changed another label: %v", err)
		}
		return nil
	})
	for _, tc := range []struct{ name, patch, want string }{
		{"selector label", `{"metadata":{"labels":{"listener.stackable.tech/mnt.0123456789abcdef":"true"}}}`, ""},
		{"listener-volume label", `{"metadata":{"labels":{"listeners.stackable.tech/listener-volume":"true"}}}`, ""},
		{"a label like it", `{"metadata":{"labels":{"listeners.stackable.tech/listener-volumes":"true"}}}`, denial + "; it changed other labels of pod p"},
		{"another label", `{"metadata":{"labels":{"app":"other"}}}`, denial + "; it changed other labels of pod p"},
		{"removing a label", `{"metadata":{"labels":{"app":null}}}`, denial + "; it changed other labels of pod p"},
		{"an annotation", `{"metadata":{"annotations":{"a":"b"}}}`, denial + "; it changed the spec, annotations, finalizers or owner references of pod p"},
		{"a finalizer", `{"metadata":{"finalizers":["example.com/x"]}}`, denial + "; it changed the spec, annotations, finalizers or owner references of pod p"},
		{"the spec", `{"spec":{"activeDeadlineSeconds":5}}`, denial + "; it changed the spec, annotations, finalizers or owner references of pod p"},
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
	// Anyone else is not affected.
	if err := patch(e.Client, `{"metadata":{"labels":{"app":"by-admin"},"annotations":{"a":"b"}}}`); err != nil {
		t.Errorf("the policy stopped another user: %v", err)
	}
}

// TestDeletePolicy installs config/admissionpolicies and checks, as the manager's
// service account (impersonated, with every RBAC right so that only the
// policy decides), that it may delete what node-loss recovery deletes
// (listener claims; Pending pods no node runs, that a controller recreates
// and that mount a claim) and nothing else, while other users are not
// affected.
func TestDeletePolicy(t *testing.T) {
	e, manager := withPolicies(t)
	ctx := t.Context()
	ns := namespace(t, nil)
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "owner"}}
	if err := e.Client.Create(ctx, owner); err != nil {
		t.Fatal(err)
	}
	controlled := []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID, Controller: ptr(true)}}
	claimVolume := []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
	pod := func(name, node string, owners []metav1.OwnerReference, volumes []corev1.Volume) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, OwnerReferences: owners},
			Spec: corev1.PodSpec{NodeName: node, Volumes: volumes, Containers: []corev1.Container{{Name: "app", Image: "x"}}}}
	}
	const claimDenial = "the listener operator may only delete listener claims (storage class listeners.stackable.tech); it tried to delete claim "
	const podDenial = "the listener operator may only delete pods that no node runs, that a controller recreates and that mount a claim; it tried to delete pod "
	other := listenerClaim(ns, "other-storage", nil, ptr("standard"))
	if err := e.Client.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the policy in force", func() error {
		if err := manager.Delete(ctx, other, client.DryRunAll); err == nil || !strings.Contains(err.Error(), claimDenial) {
			return errorf("the manager deleted another claim: %v", err)
		}
		return nil
	})
	for _, tc := range []struct {
		name string
		obj  client.Object
		want string
	}{
		{"a listener claim", listenerClaim(ns, "addr", nil, ptr("listeners.stackable.tech")), ""},
		{"a claim of another storage class", listenerClaim(ns, "db", nil, ptr("standard")), claimDenial + "db"},
		{"a claim without storage class", listenerClaim(ns, "default-class", nil, nil), claimDenial + "default-class"},
		{"a Pending pod a controller recreates", pod("pending", "", controlled, claimVolume), ""},
		{"a running pod", pod("running", "node-1", controlled, claimVolume), podDenial + "running"},
		{"a pod without controller", pod("bare", "", nil, claimVolume), podDenial + "bare"},
		{"a pod without claims", pod("no-claims", "", controlled, nil), podDenial + "no-claims"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := e.Client.Create(ctx, tc.obj); err != nil {
				t.Fatal(err)
			}
			err := manager.Delete(ctx, tc.obj)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want a refusal containing %q", err, tc.want)
			}
			// Anyone else is not affected.
			if tc.want != "" {
				if err := e.Client.Delete(ctx, tc.obj, client.DryRunAll); err != nil {
					t.Errorf("the policy stopped another user: %v", err)
				}
			}
		})
	}
}

// TestClaimLabelPolicy installs config/admissionpolicies and checks, as the manager's
// service account (impersonated, with every RBAC right so that only the
// policy decides), that it may set the listener-volume label on a listener
// claim and nothing else: no other label, no other change, no claim of
// another storage class; other users are not affected.
func TestClaimLabelPolicy(t *testing.T) {
	e, manager := withPolicies(t)
	ctx := t.Context()
	ns := namespace(t, nil)
	claim := func(name, class string) {
		pvc := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": name},
				Annotations: map[string]string{v1alpha1.AnnotationListenerName: "shared"}},
			Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &class, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1")}}},
		}
		if class != v1alpha1.StorageClassName {
			pvc.Annotations = nil
		}
		if err := e.Client.Create(ctx, pvc); err != nil {
			t.Fatal(err)
		}
	}
	claim("listener", v1alpha1.StorageClassName)
	claim("other", "standard")
	patch := func(c client.Client, name, p string) error {
		return c.Patch(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, client.RawPatch("application/merge-patch+json", []byte(p)))
	}
	const denial = "the listener operator may only set the label listeners.stackable.tech/listener-volume"
	attempt := 0
	eventually(t, "the policy in force", func() error {
		attempt++ // a new value each time: a patch that changes nothing is never refused
		if err := patch(manager, "listener", fmt.Sprintf(`{"metadata":{"labels":{"app":"changed-%d"}}}`, attempt)); err == nil || !strings.Contains(err.Error(), denial) {
			return errorf("the manager changed another label: %v", err)
		}
		return nil
	})
	for _, tc := range []struct{ name, claim, patch, want string }{
		{"another label", "listener", `{"metadata":{"labels":{"app":"other"}}}`, denial + " to \"true\" on a claim; it changed other labels of claim listener"},
		{"an annotation", "listener", `{"metadata":{"annotations":{"a":"b"}}}`, denial + " on a claim; it changed the spec, annotations, finalizers or owner references of claim listener"},
		{"the mark on another class's claim", "other", `{"metadata":{"labels":{"listeners.stackable.tech/listener-volume":"true"}}}`, "the listener operator may only mark listener claims (storage class listeners.stackable.tech); it tried to change claim other"},
		{"the mark", "listener", `{"metadata":{"labels":{"listeners.stackable.tech/listener-volume":"true"}}}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := patch(manager, tc.claim, tc.patch)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want a refusal containing %q", err, tc.want)
			}
		})
	}
	if err := patch(e.Client, "other", `{"metadata":{"labels":{"app":"by-admin"},"annotations":{"a":"b"}}}`); err != nil {
		t.Errorf("the policy stopped another user: %v", err)
	}
}

// withPolicies installs config/admissionpolicies (removed when the test ends) and
// returns the environment and a client acting as the manager's service
// account (in system:masters as well, so that RBAC allows everything and
// only the policies decide).
func withPolicies(t *testing.T) (*testenv.Env, client.Client) {
	t.Helper()
	e := testenv.Require(t, env)
	ctx := t.Context()
	out, err := exec.Command(filepath.Join(testenv.BinDir(), "kubectl"), "kustomize", filepath.Join(testenv.RepoRoot(), "config", "admissionpolicies")).Output()
	if err != nil {
		t.Fatalf("kubectl kustomize config/admissionpolicies: %v", err)
	}
	if msg, err := e.Kubectl(ctx, out, "apply", "-f", "-"); err != nil {
		t.Fatalf("apply the policy: %v: %s", err, msg)
	}
	t.Cleanup(func() {
		_, _ = e.Kubectl(context.WithoutCancel(ctx), out, "delete", "--ignore-not-found", "-f", "-")
	})
	cfg := rest.CopyConfig(e.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:listener-operator:listener-operator", Groups: []string{"system:masters", "system:authenticated"}}
	manager, err := client.New(cfg, client.Options{Scheme: e.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return e, manager
}

// TestVolumePolicy installs config/admissionpolicies and checks, as the manager's
// service account, that it may create a volume only as the provisioner
// makes one (the listener driver and storage class, bound to a claim and
// named after its UID) and change on a listener volume only its two
// labels; other users are not affected.
func TestVolumePolicy(t *testing.T) {
	e, manager := withPolicies(t)
	ctx := t.Context()
	volume := func(name, driver, class, claimUID string) *corev1.PersistentVolume {
		pv := &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "x"}},
			Spec: corev1.PersistentVolumeSpec{
				AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
				Capacity:         corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1")},
				StorageClassName: class,
				PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
					Driver: driver, VolumeHandle: name,
				}},
			},
		}
		if claimUID != "" {
			pv.Spec.ClaimRef = &corev1.ObjectReference{APIVersion: "v1", Kind: "PersistentVolumeClaim", Namespace: "ns", Name: "c", UID: types.UID(claimUID)}
		}
		return pv
	}
	const createDenial = "the listener operator may only create the volume of a listener claim"
	const driverDenial = "the listener operator may only create and label volumes of the listener driver"
	uid := func(i int) string { return fmt.Sprintf("0b9f3c1e-6a4d-4c59-9a9e-%012d", i) }
	n := 0
	eventually(t, "the policy in force", func() error {
		n++
		pv := volume("pvc-"+uid(n), "other.example.com", v1alpha1.StorageClassName, uid(n))
		if err := manager.Create(ctx, pv, client.DryRunAll); err == nil || !strings.Contains(err.Error(), driverDenial) {
			return errorf("the manager created a volume of another driver: %v", err)
		}
		return nil
	})
	for _, tc := range []struct {
		name string
		pv   *corev1.PersistentVolume
		want string
	}{
		{"as the provisioner makes it", volume("pvc-"+uid(1), v1alpha1.DriverName, v1alpha1.StorageClassName, uid(1)), ""},
		{"another driver", volume("pvc-"+uid(2), "other.example.com", v1alpha1.StorageClassName, uid(2)), driverDenial},
		{"another storage class", volume("pvc-"+uid(3), v1alpha1.DriverName, "standard", uid(3)), createDenial},
		{"bound to no claim", volume("pvc-"+uid(4), v1alpha1.DriverName, v1alpha1.StorageClassName, ""), createDenial},
		{"not named after its claim", volume("pvc-"+uid(5), v1alpha1.DriverName, v1alpha1.StorageClassName, uid(6)), createDenial},
	} {
		t.Run("create "+tc.name, func(t *testing.T) {
			err := manager.Create(ctx, tc.pv.DeepCopy(), client.DryRunAll)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want a refusal containing %q", err, tc.want)
			}
			if err := e.Client.Create(ctx, tc.pv.DeepCopy(), client.DryRunAll); err != nil {
				t.Errorf("the policy stopped another user: %v", err)
			}
		})
	}

	listener := volume("pvc-"+uid(7), v1alpha1.DriverName, v1alpha1.StorageClassName, uid(7))
	other := volume("other-volume", "other.example.com", "standard", "")
	for _, pv := range []*corev1.PersistentVolume{listener, other} {
		if err := e.Client.Create(ctx, pv); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.Client.Delete(context.WithoutCancel(ctx), pv) })
	}
	const labelDenial = "the listener operator may only add the labels listeners.stackable.tech/listener-volume=\"true\" and listeners.stackable.tech/listener-name to a volume; it changed other labels of volume "
	const specDenial = "the listener operator may only label a volume; it changed the spec, annotations, finalizers or owner references of volume "
	for _, tc := range []struct{ name, volume, patch, want string }{
		{"the mark and the Listener", listener.Name, `{"metadata":{"labels":{"listeners.stackable.tech/listener-volume":"true","listeners.stackable.tech/listener-name":"kafka"}}}`, ""},
		{"the mark set to false", listener.Name, `{"metadata":{"labels":{"listeners.stackable.tech/listener-volume":"false"}}}`, labelDenial + listener.Name},
		{"another label", listener.Name, `{"metadata":{"labels":{"app":"y"}}}`, labelDenial + listener.Name},
		{"removing a label", listener.Name, `{"metadata":{"labels":{"app":null}}}`, labelDenial + listener.Name},
		{"an annotation", listener.Name, `{"metadata":{"annotations":{"a":"b"}}}`, specDenial + listener.Name},
		{"the spec", listener.Name, `{"spec":{"persistentVolumeReclaimPolicy":"Delete"}}`, specDenial + listener.Name},
		{"the mark on another driver's volume", other.Name, `{"metadata":{"labels":{"listeners.stackable.tech/listener-volume":"true"}}}`, driverDenial},
	} {
		t.Run("patch "+tc.name, func(t *testing.T) {
			err := manager.Patch(ctx, &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: tc.volume}}, client.RawPatch("application/merge-patch+json", []byte(tc.patch)), client.DryRunAll)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want a refusal containing %q", err, tc.want)
			}
		})
	}
	if err := e.Client.Patch(ctx, &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: other.Name}}, client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"labels":{"app":"by-admin"}}}`))); err != nil {
		t.Errorf("the policy stopped another user: %v", err)
	}
}

// TestNodeAddressPolicy installs config/admissionpolicies and checks that a
// node (a kubelet's credentials: group system:nodes) cannot set, change or
// remove the node address annotation that classes with nodeAddress:
// Annotation publish, and still changes its other annotations; an
// administrator writes it.
func TestNodeAddressPolicy(t *testing.T) {
	e, _ := withPolicies(t)
	ctx := t.Context()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "nat-node-1"}}
	if err := e.Client.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Client.Delete(context.WithoutCancel(ctx), node) })
	cfg := rest.CopyConfig(e.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:node:nat-node-1", Groups: []string{"system:nodes", "system:masters", "system:authenticated"}}
	kubelet, err := client.New(cfg, client.Options{Scheme: e.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	patch := func(c client.Client, p string) error {
		return c.Patch(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "nat-node-1"}}, client.RawPatch(types.MergePatchType, []byte(p)))
	}
	const denial = "a node may not set or change its annotation listeners.stackable.tech/address"
	attempt := 0
	eventually(t, "the policy in force", func() error {
		attempt++ // a new value each time: a patch that changes nothing is never refused
		if err := patch(kubelet, fmt.Sprintf(`{"metadata":{"annotations":{"listeners.stackable.tech/address":"203.0.113.%d"}}}`, attempt)); err == nil || !strings.Contains(err.Error(), denial) {
			return errorf("the node set the annotation: %v", err)
		}
		return nil
	})
	for _, tc := range []struct {
		name, patch string
		admin       bool
		want        string
	}{
		{"the node sets another annotation", `{"metadata":{"annotations":{"node.alpha.kubernetes.io/ttl":"0"}}}`, false, ""},
		{"an administrator sets the address", `{"metadata":{"annotations":{"listeners.stackable.tech/address":"198.51.100.7"}}}`, true, ""},
		{"the node changes it", `{"metadata":{"annotations":{"listeners.stackable.tech/address":"203.0.113.66"}}}`, false, denial + ": clients of the listener operator are sent to that address; an administrator writes it (docs/install.md, \"Node addresses\"). Node nat-node-1"},
		{"the node removes it", `{"metadata":{"annotations":{"listeners.stackable.tech/address":null}}}`, false, denial},
		{"the node labels itself, the address untouched", `{"metadata":{"labels":{"example.com/x":"y"}}}`, false, ""},
		{"an administrator removes it", `{"metadata":{"annotations":{"listeners.stackable.tech/address":null}}}`, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := kubelet
			if tc.admin {
				c = e.Client
			}
			err := patch(c, tc.patch)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want a refusal containing %q", err, tc.want)
			}
		})
	}
}
