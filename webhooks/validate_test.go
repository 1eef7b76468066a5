package webhooks

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/api/validation"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

func TestListenerClassValidation(t *testing.T) {
	e := testenv.Require(t, env)
	for _, tc := range []struct {
		name string
		spec v1alpha1.ListenerClassSpec
		want string
	}{
		{"overrides change the type", v1alpha1.ListenerClassSpec{ServiceType: "NodePort", ServiceOverrides: &runtime.RawExtension{Raw: []byte(`{"spec":{"type":"ClusterIP"}}`)}},
			`admission webhook "listenerclasses.validate.listeners.stackable.tech" denied the request: ListenerClass.listeners.stackable.tech "bad" is invalid: spec.serviceOverrides.spec.type: Forbidden: would change the Service type from NodePort to ClusterIP behind the operator's back; set spec.serviceType: ClusterIP instead`},
		{"overrides set the selector", v1alpha1.ListenerClassSpec{ServiceType: "ClusterIP", ServiceOverrides: &runtime.RawExtension{Raw: []byte(`{"spec":{"selector":{"app":"x"}}}`)}},
			`spec.serviceOverrides.spec.selector: Forbidden: the operator selects the pods that mount the Listener's volume; remove spec.selector (a Listener's spec.extraPodSelectorLabels narrows the selection)`},
		{"bad annotation key", v1alpha1.ListenerClassSpec{ServiceType: "ClusterIP", ServiceAnnotations: map[string]string{"a b": "x"}},
			`spec.serviceAnnotations: Invalid value: "a b": name part must consist of alphanumeric characters`},
		{"two IP families without a policy", v1alpha1.ListenerClassSpec{ServiceType: "NodePort", IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}},
			`spec.ipFamilyPolicy: Required value: two ipFamilies need ipFamilyPolicy PreferDualStack or RequireDualStack (a Service without a policy is single-stack)`},
		{"a node port range wider than a band", v1alpha1.ListenerClassSpec{ServiceType: "NodePort", NodePortRange: &v1alpha1.NodePortRange{From: 20000, To: 32767}},
			`spec.nodePortRange: Invalid value: "20000-32767": holds 12768 ports, more than the 4096 a range may`},
		{"a sharing class of traffic policy Local", v1alpha1.ListenerClassSpec{ServiceType: "LoadBalancer", LoadBalancerSharing: &v1alpha1.LoadBalancerSharing{From: 9000, To: 9099}, ServiceExternalTrafficPolicy: ptr(v1alpha1.TrafficPolicyLocal)},
			`spec.serviceExternalTrafficPolicy: Invalid value: "Local": a load balancer shares one IP only between Services of externalTrafficPolicy Cluster (MetalLB refuses Local); set Cluster or remove it, or remove spec.loadBalancerSharing`},
		{"a sharing class that sets MetalLB's key", v1alpha1.ListenerClassSpec{ServiceType: "LoadBalancer", LoadBalancerSharing: &v1alpha1.LoadBalancerSharing{From: 9000, To: 9099}, ServiceAnnotations: map[string]string{"metallb.io/allow-shared-ip": "all"}},
			`spec.serviceAnnotations[metallb.io/allow-shared-ip]: Forbidden: with spec.loadBalancerSharing the operator sets the sharing key itself, one per workload (docs/reconcile.md, "Shared load balancers"); remove this annotation`},
		{"a sharing class that sets Cilium's key through overrides", v1alpha1.ListenerClassSpec{ServiceType: "LoadBalancer", LoadBalancerSharing: &v1alpha1.LoadBalancerSharing{From: 9000, To: 9099}, ServiceOverrides: &runtime.RawExtension{Raw: []byte(`{"metadata":{"annotations":{"lbipam.cilium.io/sharing-key":"all"}}}`)}},
			`spec.serviceOverrides.metadata.annotations[lbipam.cilium.io/sharing-key]: Forbidden: with spec.loadBalancerSharing the operator sets the sharing key itself`},
		{"a sharing NodePort class", v1alpha1.ListenerClassSpec{ServiceType: "NodePort", LoadBalancerSharing: &v1alpha1.LoadBalancerSharing{From: 9000, To: 9099}},
			`spec.loadBalancerSharing: Invalid value: "9000-9099": only a load balancer gives Services one IP, and serviceType is NodePort; set serviceType: LoadBalancer, or remove spec.loadBalancerSharing`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := e.Client.Create(t.Context(), &v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Spec: tc.spec})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error:\n got: %v\nwant: %s", err, tc.want)
			}
		})
	}
}

func TestListenerClassDeletion(t *testing.T) {
	e := testenv.Require(t, env)
	ns := namespace(t, nil)
	lc := &v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{Name: "in-use-" + ns}, Spec: v1alpha1.ListenerClassSpec{ServiceType: "ClusterIP"}}
	if err := e.Client.Create(t.Context(), lc); err != nil {
		t.Fatal(err)
	}
	l := &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: v1alpha1.ListenerSpec{ClassName: ptr(lc.Name)}}
	c := listenerClaim(ns, "addr", map[string]string{v1alpha1.AnnotationListenerClass: lc.Name}, ptr(v1alpha1.StorageClassName))
	for _, o := range []client.Object{l, c} {
		if err := e.Client.Create(t.Context(), o); err != nil {
			t.Fatal(err)
		}
	}
	want := `ListenerClass.listeners.stackable.tech "` + lc.Name + `" is invalid: metadata.name: Forbidden: ListenerClass "` + lc.Name + `" is still used by 1 Listener and 1 PersistentVolumeClaim in 1 namespace; delete them or move them to another class first (list them: ` + validation.ListUsersCommand(lc.Name) + `)`
	eventually(t, "deletion refused with both users", func() error {
		err := e.Client.Delete(t.Context(), lc, client.DryRunAll)
		if err == nil || !strings.Contains(err.Error(), want) {
			return errorf("got %v", err)
		}
		return nil
	})
	// The command in the answer lists them, for an admin who may.
	sh := exec.CommandContext(t.Context(), "bash", "-c", validation.ListUsersCommand(lc.Name))
	sh.Env = append(os.Environ(), "KUBECONFIG="+e.Kubeconfig, "PATH="+e.BinDir+":"+os.Getenv("PATH"))
	if out, err := sh.CombinedOutput(); err != nil || string(out) != ns+"/web\n"+ns+"/addr\n" {
		t.Errorf("%s:\n%s (%v), want %s/web and %s/addr", validation.ListUsersCommand(lc.Name), out, err, ns, ns)
	}
	for _, o := range []client.Object{l, c} {
		if err := e.Client.Delete(t.Context(), o); err != nil {
			t.Fatal(err)
		}
	}
	// The claim keeps its protection finalizer (no controller here), so
	// it stays a user until it is gone; drop the finalizer.
	eventually(t, "claim gone", func() error {
		var got corev1.PersistentVolumeClaim
		if err := e.Client.Get(t.Context(), client.ObjectKeyFromObject(c), &got); err != nil {
			return client.IgnoreNotFound(err)
		}
		if len(got.Finalizers) > 0 {
			got.Finalizers = nil
			_ = e.Client.Update(t.Context(), &got)
		}
		return errorf("claim still there")
	})
	eventually(t, "deletion allowed", func() error { return e.Client.Delete(t.Context(), lc) })
}

func TestListenerValidation(t *testing.T) {
	e := testenv.Require(t, env)
	ns := namespace(t, nil)
	for _, tc := range []struct {
		name string
		spec v1alpha1.ListenerSpec
		want string
	}{
		{"unknown class", v1alpha1.ListenerSpec{ClassName: ptr("foo")},
			`admission webhook "listeners.validate.listeners.stackable.tech" denied the request: Listener.listeners.stackable.tech "bad" is invalid: spec.className: Invalid value: "foo": ListenerClass "foo" not found; available: cluster-internal, external-stable, external-unstable`},
		{"same port twice", v1alpha1.ListenerSpec{ClassName: ptr("cluster-internal"), Ports: []v1alpha1.ListenerPort{{Name: "http", Port: 80}, {Name: "web", Port: 80}}},
			`spec.ports[1].port: Invalid value: 80: spec.ports[0] ("http") already exposes 80/TCP and a Service cannot expose it twice; remove one or change its number`},
		{"reserved selector label", v1alpha1.ListenerSpec{ClassName: ptr("cluster-internal"), ExtraPodSelectorLabels: map[string]string{"listener.stackable.tech/mnt.x": "true"}},
			`spec.extraPodSelectorLabels[listener.stackable.tech/mnt.x]: Invalid value: "listener.stackable.tech/mnt.x": labels starting with "listener.stackable.tech/mnt." are set by the operator on the pods of each Listener; pick another key`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := e.Client.Create(t.Context(), &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bad"}, Spec: tc.spec})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error:\n got: %v\nwant: %s", err, tc.want)
			}
		})
	}

	// A class created a moment ago is found (live read behind the cache).
	fresh := &v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{Name: "fresh-" + ns}, Spec: v1alpha1.ListenerClassSpec{ServiceType: "ClusterIP"}}
	if err := e.Client.Create(t.Context(), fresh); err != nil {
		t.Fatal(err)
	}
	freshListener := &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fresh"}, Spec: v1alpha1.ListenerSpec{ClassName: ptr(fresh.Name)}}
	if err := e.Client.Create(t.Context(), freshListener); err != nil {
		t.Errorf("Listener of a class created just before: %v", err)
	}
	// Other tests list the available classes: leave only the fixtures.
	t.Cleanup(func() {
		ctx := context.WithoutCancel(t.Context())
		_ = e.Client.Delete(ctx, freshListener)
		eventually(t, "delete class "+fresh.Name, func() error { return client.IgnoreNotFound(e.Client.Delete(ctx, fresh)) })
	})

	// Once its class is gone, a Listener can still be updated (e.g. to
	// drop a finalizer) as long as the update does not add a new problem.
	gone := &v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{Name: "gone-" + ns}, Spec: v1alpha1.ListenerClassSpec{ServiceType: "ClusterIP"}}
	if err := e.Client.Create(t.Context(), gone); err != nil {
		t.Fatal(err)
	}
	orphan := &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "orphan", Finalizers: []string{"example.com/hold"}}, Spec: v1alpha1.ListenerSpec{ClassName: ptr(gone.Name)}}
	if err := e.Client.Create(t.Context(), orphan); err != nil {
		t.Fatal(err)
	}
	if err := e.Client.Delete(t.Context(), orphan); err != nil {
		t.Fatal(err)
	}
	// The Listener is terminating, so the class has no users left.
	eventually(t, "delete the class", func() error { return e.Client.Delete(t.Context(), gone) })
	eventually(t, "drop the finalizer of a Listener whose class is gone", func() error {
		if err := e.Client.Get(t.Context(), client.ObjectKeyFromObject(orphan), orphan); err != nil {
			return err
		}
		orphan.Finalizers = nil
		return e.Client.Update(t.Context(), orphan)
	})
}

// TestWarnings reads the warnings kubectl prints for objects that are legal
// but probably wrong.
func TestWarnings(t *testing.T) {
	e := testenv.Require(t, env)
	ns := namespace(t, nil)
	for _, tc := range []struct {
		name     string
		manifest string
		want     []string
	}{
		{"Listener without class, name rewritten for its Service", `
apiVersion: listeners.stackable.tech/v1alpha1
kind: Listener
metadata: {name: web.example, namespace: NS}
spec: {ports: [{name: http, port: 8080}]}`, []string{
			`Warning: spec.className is not set: the Listener gets no Service until it names a ListenerClass (available: cluster-internal, external-stable, external-unstable`,
			`Warning: the name "web.example" is not a DNS-1035 label, so the Listener's Service is named "web-example-`,
		}},
		{"pinned class on a Deployment, port no container exposes", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: NS}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: app, image: nginx, ports: [{containerPort: 80}]}]
      volumes:
      - name: pinned
        ephemeral:
          volumeClaimTemplate:
            metadata: {annotations: {listeners.stackable.tech/listener-class: external-stable}}
            spec: {storageClassName: listeners.stackable.tech, accessModes: [ReadWriteMany], resources: {requests: {storage: "1"}}}
      - name: shared
        ephemeral:
          volumeClaimTemplate:
            metadata: {annotations: {listeners.stackable.tech/listener-name: web.example}}
            spec: {storageClassName: listeners.stackable.tech, accessModes: [ReadWriteMany], resources: {requests: {storage: "1"}}}`, []string{
			`Warning: ListenerClass "external-stable" pins each volume to the node its pod first ran on, which keeps an address stable only for long-lived claims, but an ephemeral volume gets a new claim (and address) with every new pod of this Deployment: use a StatefulSet volumeClaimTemplate, or a class that is not pinned`,
			`Warning: Listener "web.example" exposes ports that no container declares: http (8080); add them to the containers' ports or remove them from the Listener`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := e.Kubectl(t.Context(), []byte(strings.ReplaceAll(tc.manifest, "NS", ns)), "apply", "-f", "-")
			if err != nil {
				t.Fatalf("kubectl apply: %v: %s", err, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("kubectl output:\n%s\nlacks: %s", out, w)
				}
			}
		})
	}
}

// TestWorkloadDenials: bad listener volumes in a workload are refused when
// the workload is applied, not later when its controller creates pods.
func TestWorkloadDenials(t *testing.T) {
	e := testenv.Require(t, env)
	ns := namespace(t, nil)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "inline"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x"}},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "app", Image: "nginx", Ports: []corev1.ContainerPort{{ContainerPort: 80}}}},
					Volumes:    []corev1.Volume{{Name: "addr", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: v1alpha1.DriverName}}}},
				},
			},
		},
	}
	err := e.Client.Create(t.Context(), d)
	want := `admission webhook "workloads.validate.listeners.stackable.tech" denied the request: Deployment.apps "inline" is invalid: spec.template.spec.volumes[0].csi.driver: Invalid value: "listeners.stackable.tech": inline CSI volumes of the listener driver are not supported`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error:\n got: %v\nwant: %s", err, want)
	}
	// A template that names no class is fine: its claims get the default.
	d.Name = "default-class"
	d.Spec.Template.Spec.Volumes = []corev1.Volume{ephemeral("addr", nil)}
	if err := e.Client.Create(t.Context(), d); err != nil {
		t.Errorf("Deployment with an ephemeral listener volume of the default class: %v", err)
	}
	sts := statefulSet(ns, "unknown-class", optIn, map[string]string{v1alpha1.AnnotationListenerClass: "foo"})
	err = e.Client.Create(t.Context(), sts)
	// Refused where the user wrote the class, before a claim template is
	// injected.
	want = `admission webhook "statefulsets.mutate.listeners.stackable.tech" denied the request: StatefulSet.apps "unknown-class" is invalid: metadata.annotations[listeners.stackable.tech/listener-class]: Invalid value: "foo": ListenerClass "foo" not found; available: cluster-internal, external-stable, external-unstable`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error:\n got: %v\nwant: %s", err, want)
	}
}

// TestForgedReviewRevealsNoNames posts hand-made AdmissionReviews straight
// to the webhook server, as anyone who reaches its Service can, with a
// userInfo of the sender's choosing: the ListenerClass deletion denial
// counts the users and their namespaces and names none of them, so a
// tenant learns no Listener's, claim's or namespace's name it cannot read.
func TestForgedReviewRevealsNoNames(t *testing.T) {
	e := testenv.Require(t, env)
	victim := namespace(t, nil)
	// Named apart from the namespace, which the answer must not name.
	lc := &v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("forged-%d", time.Now().UnixNano())}, Spec: v1alpha1.ListenerClassSpec{ServiceType: "ClusterIP"}}
	secret := &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: victim, Name: "secret-name"}, Spec: v1alpha1.ListenerSpec{ClassName: ptr(lc.Name)}}
	claim := listenerClaim(victim, "secret-claim", map[string]string{v1alpha1.AnnotationListenerClass: lc.Name}, ptr(v1alpha1.StorageClassName))
	for _, o := range []client.Object{lc, secret, claim} {
		if err := e.Client.Create(t.Context(), o); err != nil {
			t.Fatal(err)
		}
	}
	review := `{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
	  "uid": "00000000-0000-0000-0000-000000000001",
	  "kind": {"group": "listeners.stackable.tech", "version": "v1alpha1", "kind": "ListenerClass"},
	  "resource": {"group": "listeners.stackable.tech", "version": "v1alpha1", "resource": "listenerclasses"},
	  "name": "` + lc.Name + `", "operation": "DELETE",
	  "userInfo": {"username": "system:serviceaccount:` + victim + `:default", "groups": ["system:masters"]}}}`
	c := webhookClient(t)
	var got string
	eventually(t, "the cache sees both users", func() error {
		got = postReview(t, c, "/validate-listeners-stackable-tech-v1alpha1-listenerclass", review)
		if !strings.Contains(got, "1 Listener and 1 PersistentVolumeClaim in 1 namespace") {
			return errorf("answer %s", got)
		}
		return nil
	})
	answer, _, _ := strings.Cut(got, "(list them: ")
	for _, name := range []string{secret.Name, claim.Name, victim} {
		if strings.Contains(answer, name) {
			t.Errorf("the forged review's answer names %s: %s", name, got)
		}
	}
}

// TestOverlappingRangesWarn: a class whose node port range overlaps
// another class's is admitted with a warning naming the other class.
func TestOverlappingRangesWarn(t *testing.T) {
	e := testenv.Require(t, env)
	ctx := t.Context()
	a := &v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{Name: "warn-range-a"},
		Spec: v1alpha1.ListenerClassSpec{ServiceType: "NodePort", NodePortRange: &v1alpha1.NodePortRange{From: 31000, To: 31099}}}
	if err := e.Client.Create(ctx, a); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Client.Delete(context.WithoutCancel(ctx), a) })
	b := []byte(`
apiVersion: listeners.stackable.tech/v1alpha1
kind: ListenerClass
metadata: {name: warn-range-b}
spec: {serviceType: NodePort, nodePortRange: {from: 31050, to: 31149}}`)
	const want = `Warning: spec.nodePortRange: 31050-31149 overlaps 31000-31099 of ListenerClass warn-range-a: their Listeners share those ports first come, first served; give each workload a range of its own`
	// The webhook reads classes from its cache, which sees the first a
	// moment after it is created.
	eventually(t, "the overlap warned about", func() error {
		out, err := e.Kubectl(ctx, b, "create", "--dry-run=server", "-f", "-")
		if err != nil {
			return errorf("kubectl create: %v: %s", err, out)
		}
		if !strings.Contains(string(out), want) {
			return errorf("kubectl output:\n%s\nlacks: %s", out, want)
		}
		return nil
	})
}
