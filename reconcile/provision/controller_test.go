package provision

import (
	"errors"
	"fmt"
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/api/volumes"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

const (
	classUnpinned = "provision-internal"
	classPinned   = "provision-pinned"
	nodeWithCSI   = "provision-node-a" // the node plugin registered there
	nodeWithout   = "provision-node-b"
)

// fixture installs, once for the package, what a cluster with the operator
// has: the listener storage class (binding on first consumer, as shipped),
// an unpinned and a pinned ListenerClass, and two nodes, one labelled with
// the driver's topology as the kubelet does when the node plugin
// registers.
func fixture(t *testing.T) (*testenv.Env, string) {
	t.Helper()
	e := testenv.Require(t, env)
	ctx := t.Context()
	objs := []client.Object{
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.StorageClassName}, Provisioner: v1alpha1.DriverName,
			VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer), ReclaimPolicy: ptr.To(corev1.PersistentVolumeReclaimDelete)},
		&v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{Name: classUnpinned}, Spec: v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP}},
		&v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{Name: classPinned}, Spec: v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeNodePort, PinnedNodePorts: ptr.To(true)}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeWithCSI, Labels: map[string]string{v1alpha1.TopologyKeyHostname: nodeWithCSI}}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeWithout}},
	}
	for _, o := range objs {
		if err := e.Client.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
	return e, e.Namespace(t, ctx, "provision-")
}

// listenerClaim is a listener claim as the claim webhook admits it (marked).
func listenerClaim(ns, name string, annotations map[string]string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations,
			Labels: map[string]string{v1alpha1.LabelListenerVolume: "true"}},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: ptr.To(v1alpha1.StorageClassName),
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1")}},
		},
	}
}

func classClaim(ns, name, class string) *corev1.PersistentVolumeClaim {
	return listenerClaim(ns, name, map[string]string{v1alpha1.AnnotationListenerClass: class})
}

// created creates claim and returns it.
func created(t *testing.T, e *testenv.Env, claim *corev1.PersistentVolumeClaim) *corev1.PersistentVolumeClaim {
	t.Helper()
	testenv.Create(t, t.Context(), e.Client, claim)
	return claim
}

// volumeOf waits for the volume of claim and returns it.
func volumeOf(t *testing.T, e *testenv.Env, claim *corev1.PersistentVolumeClaim) *corev1.PersistentVolume {
	t.Helper()
	pv := &corev1.PersistentVolume{}
	testenv.Converges(t, fmt.Sprintf("a volume for claim %s", claim.Name), func() error {
		return e.Client.Get(t.Context(), types.NamespacedName{Name: volumes.Name(claim.UID)}, pv)
	})
	return pv
}

// bound waits until kube-controller-manager's PV controller has bound
// claim to its volume.
func bound(t *testing.T, e *testenv.Env, claim *corev1.PersistentVolumeClaim) {
	t.Helper()
	testenv.Converges(t, fmt.Sprintf("claim %s bound", claim.Name), func() error {
		got := &corev1.PersistentVolumeClaim{}
		if err := e.Client.Get(t.Context(), client.ObjectKeyFromObject(claim), got); err != nil {
			return err
		}
		if got.Status.Phase != corev1.ClaimBound || got.Spec.VolumeName != volumes.Name(claim.UID) {
			return fmt.Errorf("phase %s, volume %q", got.Status.Phase, got.Spec.VolumeName)
		}
		return nil
	})
}

// noVolume checks that claim has no volume once barrier (a claim made
// after it, which the provisioner serves at once) has one: the provisioner
// has looked at claim and left it alone.
func noVolume(t *testing.T, e *testenv.Env, claim, barrier *corev1.PersistentVolumeClaim) {
	t.Helper()
	volumeOf(t, e, barrier)
	err := e.Client.Get(t.Context(), types.NamespacedName{Name: volumes.Name(claim.UID)}, &corev1.PersistentVolume{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("claim %s has a volume (or the read failed: %v)", claim.Name, err)
	}
}

// TestUnpinnedClaimGetsItsVolumeAtOnce: a claim of a class that does not
// pin gets its volume as soon as it exists, before any pod uses it (the
// storage class binds on first consumer), the same volume CreateVolume
// describes, and the PV controller binds it.
func TestUnpinnedClaimGetsItsVolumeAtOnce(t *testing.T) {
	e, ns := fixture(t)
	ctx := t.Context()
	own := classClaim(ns, "own", classUnpinned)
	// Not the defaults: the volume is made from the cached claim, which
	// keeps these only while it is unbound (caches.TrimClaim).
	own.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce, corev1.ReadOnlyMany}
	own.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("3Mi")
	own.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeFilesystem)
	shared := listenerClaim(ns, "shared", map[string]string{v1alpha1.AnnotationListenerName: "kafka"})
	testenv.Create(t, ctx, e.Client,
		&v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kafka"}, Spec: v1alpha1.ListenerSpec{ClassName: ptr.To(classUnpinned)}},
		own, shared)

	for _, tc := range []struct {
		claim    *corev1.PersistentVolumeClaim
		listener string
		perClaim string
	}{
		{own, names.ClaimListenerName(own.Name), "true"},
		{shared, "kafka", "false"},
	} {
		t.Run(tc.claim.Name, func(t *testing.T) {
			pv := volumeOf(t, e, tc.claim)
			want := map[string]string{
				volumes.ContextClaimNamespace: ns, volumes.ContextClaimName: tc.claim.Name, volumes.ContextClaimUID: string(tc.claim.UID),
				volumes.ContextListenerName: tc.listener, volumes.ContextPerClaim: tc.perClaim,
			}
			if got := pv.Spec.CSI; got == nil || got.Driver != v1alpha1.DriverName || got.VolumeHandle != pv.Name || !maps.Equal(got.VolumeAttributes, want) {
				t.Errorf("CSI source %+v, want driver %s, handle %s, context %v", got, v1alpha1.DriverName, pv.Name, want)
			}
			if ref := pv.Spec.ClaimRef; ref == nil || ref.UID != tc.claim.UID || ref.Name != tc.claim.Name || ref.Namespace != ns {
				t.Errorf("claimRef %+v, want the claim", ref)
			}
			if pv.Spec.NodeAffinity != nil {
				t.Errorf("an unpinned class's volume has node affinity %+v", pv.Spec.NodeAffinity)
			}
			wantLabels := map[string]string{v1alpha1.LabelListenerVolume: "true", v1alpha1.LabelVolumeListener: tc.listener}
			if !maps.Equal(pv.Labels, wantLabels) {
				t.Errorf("labels %v, want %v", pv.Labels, wantLabels)
			}
			if pv.Annotations[volumes.AnnotationProvisionedBy] != v1alpha1.DriverName {
				t.Errorf("annotations %v: csi-provisioner deletes only volumes provisioned by %s", pv.Annotations, v1alpha1.DriverName)
			}
			if pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete || pv.Spec.StorageClassName != v1alpha1.StorageClassName ||
				!equality.Semantic.DeepEqual(pv.Spec.AccessModes, tc.claim.Spec.AccessModes) ||
				!pv.Spec.Capacity.Storage().Equal(*tc.claim.Spec.Resources.Requests.Storage()) ||
				pv.Spec.VolumeMode == nil || *pv.Spec.VolumeMode != corev1.PersistentVolumeFilesystem {
				t.Errorf("spec %+v, want the class's reclaim policy, the claim's access modes, size and volume mode", pv.Spec)
			}
			bound(t, e, tc.claim)
		})
	}
	testenv.Converges(t, "the event on the claim", func() error {
		var list eventsv1.EventList
		if err := e.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, ev := range list.Items {
			if ev.Regarding.Name == own.Name && ev.Reason == EventProvisioned {
				return nil
			}
		}
		return errors.New("no ProvisioningSucceeded event")
	})
}

// TestPinnedClaimWaitsForTheScheduler: a claim of a pinning class gets no
// volume until the scheduler wrote the node it picked, then one pinned to
// that node; never on a node where the node plugin does not run.
func TestPinnedClaimWaitsForTheScheduler(t *testing.T) {
	e, ns := fixture(t)
	ctx := t.Context()
	pinned := classClaim(ns, "pinned", classPinned)
	elsewhere := classClaim(ns, "elsewhere", classPinned)
	elsewhere.Annotations[volumes.AnnotationSelectedNode] = nodeWithout
	testenv.Create(t, ctx, e.Client, pinned, elsewhere)
	noVolume(t, e, pinned, created(t, e, classClaim(ns, "barrier-1", classUnpinned)))
	noVolume(t, e, elsewhere, created(t, e, classClaim(ns, "barrier-2", classUnpinned)))

	patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, volumes.AnnotationSelectedNode, nodeWithCSI))
	if err := e.Client.Patch(ctx, pinned, patch); err != nil {
		t.Fatal(err)
	}
	pv := volumeOf(t, e, pinned)
	want := &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
		{Key: v1alpha1.TopologyKeyHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{nodeWithCSI}},
	}}}}}
	if !equality.Semantic.DeepEqual(pv.Spec.NodeAffinity, want) {
		t.Errorf("node affinity %+v, want pinned to %s", pv.Spec.NodeAffinity, nodeWithCSI)
	}
	bound(t, e, pinned)
}

// TestVolumeMadeByCSIProvisionerIsKept: when csi-provisioner made the
// volume first (same name), the claim is bound to that one and no second
// volume appears.
func TestVolumeMadeByCSIProvisionerIsKept(t *testing.T) {
	e, ns := fixture(t)
	ctx := t.Context()
	claim := classClaim(ns, "first", classPinned)
	testenv.Create(t, ctx, e.Client, claim)
	theirs := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: volumes.Name(claim.UID), Annotations: map[string]string{volumes.AnnotationProvisionedBy: v1alpha1.DriverName},
			Labels: map[string]string{"made-by": "csi-provisioner"}},
		Spec: corev1.PersistentVolumeSpec{
			AccessModes: claim.Spec.AccessModes, Capacity: claim.Spec.Resources.Requests, StorageClassName: v1alpha1.StorageClassName,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			ClaimRef:                      &corev1.ObjectReference{APIVersion: "v1", Kind: "PersistentVolumeClaim", Namespace: ns, Name: claim.Name, UID: claim.UID},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: v1alpha1.DriverName, VolumeHandle: volumes.Name(claim.UID)}},
		},
	}
	testenv.Create(t, ctx, e.Client, theirs)
	patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, volumes.AnnotationSelectedNode, nodeWithCSI))
	if err := e.Client.Patch(ctx, claim, patch); err != nil {
		t.Fatal(err)
	}
	bound(t, e, claim)
	pv := volumeOf(t, e, claim)
	if pv.Labels["made-by"] != "csi-provisioner" || pv.UID != theirs.UID {
		t.Errorf("the claim's volume is not csi-provisioner's: %+v", pv.ObjectMeta)
	}
	var list corev1.PersistentVolumeList
	if err := e.Client.List(ctx, &list); err != nil {
		t.Fatal(err)
	}
	for _, v := range list.Items {
		if v.Spec.ClaimRef != nil && v.Spec.ClaimRef.UID == claim.UID && v.Name != pv.Name {
			t.Errorf("a second volume %s for the claim", v.Name)
		}
	}
}
