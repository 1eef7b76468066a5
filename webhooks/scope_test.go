package webhooks

import (
	"context"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// downLabel scopes the test's copies of the webhook configurations, whose
// server never answers, to the test's namespace and objects.
const downLabel = "webhooks-test/down"

// installDownWebhooks registers copies of the package's two webhook
// configurations, identical (rules, selectors, match conditions, failure
// policies) but for a server that refuses every connection, limited to
// objects in namespaces (or cluster-scoped objects) labelled downLabel=id.
// Both configurations apply to every request, so while the copies exist
// the API server behaves as if no replica of the operator answered.
func installDownWebhooks(t *testing.T, c client.Client, id string) {
	t.Helper()
	ctx := t.Context()
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{downLabel: id}}
	url := func(cc admissionregistrationv1.WebhookClientConfig) admissionregistrationv1.WebhookClientConfig {
		path := "/"
		if cc.Service != nil && cc.Service.Path != nil {
			path = *cc.Service.Path
		}
		// Port 1 on loopback: nothing listens, the connection is refused.
		return admissionregistrationv1.WebhookClientConfig{URL: ptr("https://127.0.0.1:1" + path), CABundle: cc.CABundle}
	}
	var mut admissionregistrationv1.MutatingWebhookConfiguration
	if err := c.Get(ctx, client.ObjectKey{Name: MutatingConfigurationName}, &mut); err != nil {
		t.Fatal(err)
	}
	down := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "down-" + id + "-" + MutatingConfigurationName}}
	for _, w := range mut.Webhooks {
		w.ClientConfig = url(w.ClientConfig)
		w.NamespaceSelector = sel
		down.Webhooks = append(down.Webhooks, w)
	}
	var val admissionregistrationv1.ValidatingWebhookConfiguration
	if err := c.Get(ctx, client.ObjectKey{Name: ValidatingConfigurationName}, &val); err != nil {
		t.Fatal(err)
	}
	downVal := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "down-" + id + "-" + ValidatingConfigurationName}}
	for _, w := range val.Webhooks {
		w.ClientConfig = url(w.ClientConfig)
		if w.Name == "listenerclasses.validate.listeners.stackable.tech" {
			w.ObjectSelector = sel // cluster-scoped: no namespace to select by
		} else {
			w.NamespaceSelector = sel
		}
		downVal.Webhooks = append(downVal.Webhooks, w)
	}
	for _, o := range []client.Object{down, downVal} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Delete(context.WithoutCancel(ctx), o) })
	}
}

// TestNoWebhookServer: with no webhook server answering, namespace
// deletion, foreground deletion of workloads with listener templates,
// deletion of claims and the PV controller's binding of a new claim all
// complete, because the fail-closed webhooks are never called for them
// (docs/webhooks.md, "Scope"). What is still refused is exactly what the
// docs say.
func TestNoWebhookServer(t *testing.T) {
	e := testenv.Require(t, env)
	c := e.Client
	ctx := t.Context()
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "down-"}}
	if err := c.Create(ctx, nsObj); err != nil {
		t.Fatal(err)
	}
	ns := nsObj.Name
	nsObj.Labels = map[string]string{downLabel: ns}
	if err := c.Update(ctx, nsObj); err != nil {
		t.Fatal(err)
	}

	// What exists before the operator goes away: a listener claim that
	// waits for a volume, an opted-in StatefulSet (whose controller creates
	// its listener claim and pod), a Deployment with a listener volume, a
	// Listener, and a ListenerClass used by nothing.
	claim := listenerClaim(ns, "bind-me", map[string]string{v1alpha1.AnnotationListenerClass: "cluster-internal"}, ptr(v1alpha1.StorageClassName))
	keep := listenerClaim(ns, "keep", map[string]string{v1alpha1.AnnotationListenerClass: "cluster-internal"}, ptr(v1alpha1.StorageClassName))
	one := int32(1)
	labels := map[string]string{"app": "web"}
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", Labels: map[string]string{v1alpha1.LabelEnabled: "true"}},
		Spec: appsv1.StatefulSetSpec{Replicas: &one, ServiceName: "web", Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "x", Ports: []corev1.ContainerPort{{ContainerPort: 80}}}}}}}}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api"},
		Spec: appsv1.DeploymentSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "api"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "api"}}, Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "app", Image: "x", Ports: []corev1.ContainerPort{{ContainerPort: 80}}}},
				Volumes:    []corev1.Volume{ephemeralVolume(map[string]string{v1alpha1.AnnotationListenerClass: "cluster-internal"})}}}}}
	li := &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shared"}, Spec: v1alpha1.ListenerSpec{ClassName: ptr("cluster-internal")}}
	lc := &v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{downLabel: ns}}, Spec: v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP}}
	for _, o := range []client.Object{claim, keep, sts, dep, li, lc} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
	t.Cleanup(func() { _ = c.Delete(context.WithoutCancel(ctx), lc) })
	stsClaim := client.ObjectKey{Namespace: ns, Name: "listener-web-0"}
	eventually(t, "the StatefulSet's claim and the Deployment's pod", func() error {
		var pvc corev1.PersistentVolumeClaim
		if err := c.Get(ctx, stsClaim, &pvc); err != nil {
			return err
		}
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"app": "api"}); err != nil || len(pods.Items) == 0 {
			return errorf("no pod of the Deployment yet (%v)", err)
		}
		return nil
	})

	installDownWebhooks(t, c, ns)
	eventually(t, "the API server calls the webhooks that do not answer", func() error {
		err := c.Create(ctx, listenerClaim(ns, "probe", nil, ptr(v1alpha1.StorageClassName)), client.DryRunAll)
		if err == nil || !strings.Contains(err.Error(), "failed calling webhook") {
			return errorf("claim create: %v", err)
		}
		return nil
	})

	// What the docs say is refused while no replica answers: creating or
	// re-targeting listener claims, Listener specs, labels and annotations,
	// ListenerClass specs,
	// deleting a ListenerClass, and opted-in StatefulSets.
	refused := map[string]func() error{
		"claim create": func() error {
			return c.Create(ctx, listenerClaim(ns, "new", map[string]string{v1alpha1.AnnotationListenerClass: "cluster-internal"}, nil))
		},
		"claim annotation change": func() error {
			return patchMeta(ctx, c, &corev1.PersistentVolumeClaim{}, keep, `{"metadata":{"annotations":{"listeners.stackable.tech/listener-class":"external-stable"}}}`)
		},
		"Listener create": func() error {
			return c.Create(ctx, &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "new"}})
		},
		// A Listener's labels reach its Service through the class's
		// allow-list, so the webhook judges them.
		"Listener label": func() error {
			return patchMeta(ctx, c, &v1alpha1.Listener{}, li, `{"metadata":{"labels":{"team":"a"}}}`)
		},
		"Listener spec change": func() error {
			return patchMeta(ctx, c, &v1alpha1.Listener{}, li, `{"spec":{"className":"external-stable"}}`)
		},
		"ListenerClass spec change": func() error {
			return patchMeta(ctx, c, &v1alpha1.ListenerClass{}, lc, `{"spec":{"serviceType":"NodePort"}}`)
		},
		"ListenerClass delete": func() error { return c.Delete(ctx, lc.DeepCopy()) },
		"opted-in StatefulSet create": func() error {
			s := sts.DeepCopy()
			s.ResourceVersion, s.Name = "", "web2"
			return c.Create(ctx, s)
		},
		"Deployment template change": func() error {
			return patchMeta(ctx, c, &appsv1.Deployment{}, dep, `{"spec":{"template":{"metadata":{"annotations":{"restarted":"now"}}}}}`)
		},
	}
	for name, do := range refused {
		if err := do(); err == nil || !strings.Contains(err.Error(), "failed calling webhook") {
			t.Errorf("%s while no webhook server answers: %v, want a refusal", name, err)
		}
	}
	// And what is not: metadata that is not the webhooks' business, and a
	// pod with a listener volume (its webhook fails open).
	admitted := map[string]func() error{
		"claim label": func() error {
			return patchMeta(ctx, c, &corev1.PersistentVolumeClaim{}, keep, `{"metadata":{"labels":{"team":"a"}}}`)
		},
		"ListenerClass label": func() error {
			return patchMeta(ctx, c, &v1alpha1.ListenerClass{}, lc, `{"metadata":{"labels":{"team":"a"}}}`)
		},
		"StatefulSet label": func() error {
			return patchMeta(ctx, c, &appsv1.StatefulSet{}, sts, `{"metadata":{"labels":{"team":"a"}}}`)
		},
		"Deployment scale (subresource)": func() error {
			return c.SubResource("scale").Patch(ctx, dep.DeepCopy(), client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"replicas":2}}`)))
		},
		"pod with a listener volume": func() error {
			return c.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bare"}, Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "app", Image: "x", Ports: []corev1.ContainerPort{{ContainerPort: 80}}}},
				Volumes:    []corev1.Volume{ephemeralVolume(map[string]string{v1alpha1.AnnotationListenerClass: "cluster-internal"})}}})
		},
	}
	for name, do := range admitted {
		if err := do(); err != nil {
			t.Errorf("%s while no webhook server answers: %v", name, err)
		}
	}

	// The PV controller binds a new claim to a volume: its updates of the
	// claim (volumeName, bind annotations) are not judged.
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-" + ns}, Spec: corev1.PersistentVolumeSpec{
		StorageClassName: v1alpha1.StorageClassName, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
		Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1")},
		PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
		PersistentVolumeSource:        corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: v1alpha1.DriverName, VolumeHandle: ns}},
		ClaimRef:                      &corev1.ObjectReference{Namespace: ns, Name: claim.Name},
	}}
	if err := c.Create(ctx, pv); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.WithoutCancel(ctx), pv) })
	eventually(t, "the claim bound by the PV controller", func() error {
		var got corev1.PersistentVolumeClaim
		if err := c.Get(ctx, client.ObjectKeyFromObject(claim), &got); err != nil {
			return err
		}
		if got.Status.Phase != corev1.ClaimBound {
			return errorf("claim is %s", got.Status.Phase)
		}
		return nil
	})

	// Foreground deletion: the garbage collector deletes the dependents,
	// then removes its finalizer from the owner with an UPDATE.
	fg := client.PropagationPolicy(metav1.DeletePropagationForeground)
	for _, o := range []client.Object{sts, dep} {
		if err := c.Delete(ctx, o, fg); err != nil {
			t.Fatal(err)
		}
	}
	gone := func(what string, o client.Object) {
		t.Helper()
		eventually(t, what+" gone", func() error {
			err := c.Get(ctx, client.ObjectKeyFromObject(o), o)
			if apierrors.IsNotFound(err) {
				return nil
			}
			return errorf("still there (%v), finalizers %v", err, o.GetFinalizers())
		})
	}
	gone("StatefulSet (foreground)", &appsv1.StatefulSet{ObjectMeta: sts.ObjectMeta})
	gone("Deployment (foreground)", &appsv1.Deployment{ObjectMeta: dep.ObjectMeta})

	// A claim's pvc-protection finalizer is removed with an UPDATE.
	if err := c.Delete(ctx, keep); err != nil {
		t.Fatal(err)
	}
	gone("claim", &corev1.PersistentVolumeClaim{ObjectMeta: keep.ObjectMeta})

	// The namespace, with the StatefulSet's listener claim, the bound claim,
	// a Listener and a pod in it.
	if err := c.Delete(ctx, nsObj); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		err := c.Get(ctx, client.ObjectKeyFromObject(nsObj), &corev1.Namespace{})
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			var left corev1.PersistentVolumeClaimList
			_ = c.List(ctx, &left, client.InNamespace(ns))
			t.Fatalf("namespace %s not deleted after 2 minutes (%v); claims left: %d", ns, err, len(left.Items))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// patchMeta merge-patches the object named like o.
func patchMeta(ctx context.Context, c client.Client, into, o client.Object, patch string) error {
	into.SetNamespace(o.GetNamespace())
	into.SetName(o.GetName())
	return c.Patch(ctx, into, client.RawPatch("application/merge-patch+json", []byte(patch)))
}
