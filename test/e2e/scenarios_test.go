//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

const podTimeout = 3 * time.Minute

// Scenario 1: a StatefulSet with the opt-in label and a pinned NodePort class.
// Each pod reads its own address, the host reaches that pod there, and a
// deleted pod comes back with the same address.
func TestStatefulSetPinnedNodePort(t *testing.T) {
	ctx := t.Context()
	ensureClass(t, ctx, listenerClass("e2e-nodeport-pinned", v1alpha1.ListenerClassSpec{
		ServiceType: v1alpha1.ServiceTypeNodePort, PinnedNodePorts: ptr.To(true),
		PreferredAddressType: v1alpha1.PreferredAddressIP,
	}))
	ns := namespace(t, ctx, "e2e-nodeport")
	if err := k8s.client.Create(ctx, demoStatefulSet(ns, "hello", "e2e-nodeport-pinned", 2)); err != nil {
		t.Fatalf("create StatefulSet: %v", err)
	}
	pods := podsReady(t, ctx, ns, "hello", 2, podTimeout)

	before := map[string]string{}
	for _, name := range []string{"hello-0", "hello-1"} {
		files := tree(t, ctx, ns, name)
		addr, port := defaultAddress(t, files)
		before[name] = addr + ":" + port

		l := listener(t, ctx, ns, name)
		if !hasIngress(l, addr, port) {
			t.Errorf("pod %s reads %s:%s but its Listener %s advertises %+v", name, addr, port, l.Name, l.Status.IngressAddresses)
		}
		// The replica's Service selects it by the StatefulSet controller's
		// pod-name label: no label of the operator was patched in.
		for k := range pods[name].Labels {
			if strings.HasPrefix(k, v1alpha1.PodSelectorLabelPrefix) {
				t.Errorf("pod %s carries %s; a replica of a new StatefulSet needs no operator label", name, k)
			}
		}
		svc := listenerService(t, ctx, ns, name)
		if want := map[string]string{v1alpha1.LabelStatefulSetPodName: name}; !maps.Equal(svc.Spec.Selector, want) {
			t.Errorf("Service %s selects %v, want %v", svc.Name, svc.Spec.Selector, want)
		}
		// kube-proxy programs the node port asynchronously after the pod is
		// Ready; a client retrying for a while is what a user does too.
		answers(t, ctx, addr, port, name)
		// Pinned: the volume is bound to the node the pod first ran on.
		pv := boundVolume(t, ctx, ns, v1alpha1.VolumeName+"-"+name)
		if got := pinnedNode(pv); got != pods[name].Spec.NodeName {
			t.Errorf("PV %s of %s is pinned to %q, want node %q", pv.Name, name, got, pods[name].Spec.NodeName)
		}
	}
	if before["hello-0"] == before["hello-1"] {
		t.Errorf("both pods read the same address %s; each needs its own Listener", before["hello-0"])
	}

	old := pods["hello-0"]
	if err := k8s.client.Delete(ctx, old); err != nil {
		t.Fatalf("delete pod: %v", err)
	}
	eventually(t, ctx, podTimeout, "hello-0 replaced", func(ctx context.Context) (bool, string) {
		var p corev1.Pod
		if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "hello-0"}, &p); err != nil {
			return false, err.Error()
		}
		return p.UID != old.UID && p.Status.Phase == corev1.PodRunning && isReady(&p), podState(&p)
	})
	addr, port := defaultAddress(t, tree(t, ctx, ns, "hello-0"))
	if got := addr + ":" + port; got != before["hello-0"] {
		t.Errorf("hello-0 came back with address %s, want the same %s", got, before["hello-0"])
	}
	answers(t, ctx, addr, port, "hello-0")
}

func hasIngress(l *v1alpha1.Listener, addr, port string) bool {
	for _, in := range l.Status.IngressAddresses {
		if in.Address == addr && strconv.Itoa(int(in.Ports["http"])) == port {
			return true
		}
	}
	return false
}

func boundVolume(t *testing.T, ctx context.Context, ns, claim string) *corev1.PersistentVolume {
	t.Helper()
	var pvc corev1.PersistentVolumeClaim
	if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: claim}, &pvc); err != nil {
		t.Fatalf("get claim %s/%s: %v", ns, claim, err)
	}
	var pv corev1.PersistentVolume
	if err := k8s.client.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, &pv); err != nil {
		t.Fatalf("get the volume of claim %s/%s: %v", ns, claim, err)
	}
	return &pv
}

// pinnedNode is the node a listener volume's node affinity names.
func pinnedNode(pv *corev1.PersistentVolume) string {
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return ""
	}
	for _, term := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
		for _, e := range term.MatchExpressions {
			if e.Key == v1alpha1.TopologyKeyHostname && len(e.Values) == 1 {
				return e.Values[0]
			}
		}
	}
	return ""
}

// Scenario 2: ClusterIP classes. With IP preference the pod reads its
// Service's ClusterIP and another pod reaches it there through kube-proxy;
// with the default preference it reads the Service's DNS name.
func TestClusterIP(t *testing.T) {
	ctx := t.Context()
	ensureClass(t, ctx, listenerClass("e2e-clusterip", v1alpha1.ListenerClassSpec{
		ServiceType: v1alpha1.ServiceTypeClusterIP, PreferredAddressType: v1alpha1.PreferredAddressIP,
	}))
	ns := namespace(t, ctx, "e2e-clusterip")
	if err := k8s.client.Create(ctx, demoStatefulSet(ns, "ip", "e2e-clusterip", 1)); err != nil {
		t.Fatalf("create StatefulSet: %v", err)
	}
	if err := k8s.client.Create(ctx, demoStatefulSet(ns, "dns", "cluster-internal", 1)); err != nil {
		t.Fatalf("create StatefulSet: %v", err)
	}
	clientPod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "client", Namespace: ns, Labels: map[string]string{"app": "client"}},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []corev1.Container{{Name: "hello", Image: demoImage, ImagePullPolicy: corev1.PullIfNotPresent,
				Command: []string{"sleep", "3600"}}},
		},
	}
	if err := k8s.client.Create(ctx, clientPod); err != nil {
		t.Fatalf("create client pod: %v", err)
	}
	podsReady(t, ctx, ns, "ip", 1, podTimeout)
	podsReady(t, ctx, ns, "dns", 1, podTimeout)
	podsReady(t, ctx, ns, "client", 1, podTimeout)

	t.Run("IP", func(t *testing.T) {
		addr, port := defaultAddress(t, tree(t, ctx, ns, "ip-0"))
		svc := listenerService(t, ctx, ns, "ip-0")
		if addr != svc.Spec.ClusterIP || port != "8080" {
			t.Errorf("ip-0 reads %s:%s, want its Service's ClusterIP %s:8080", addr, port, svc.Spec.ClusterIP)
		}
		eventually(t, ctx, time.Minute, "another pod reaches ip-0 through its ClusterIP", func(ctx context.Context) (bool, string) {
			out, errOut, err := k8s.run(ctx, "", "exec", "-n", ns, "client", "--", "/demo-server", "-get", "http://"+addr+":"+port+"/")
			if err != nil {
				return false, fmt.Sprintf("%v: %s%s", err, out, errOut)
			}
			return strings.TrimSpace(out) == "hello from ip-0", out
		})
	})
	t.Run("Hostname", func(t *testing.T) {
		addr, port := defaultAddress(t, tree(t, ctx, ns, "dns-0"))
		svc := listenerService(t, ctx, ns, "dns-0")
		want := fmt.Sprintf("%s.%s.svc.%s", svc.Name, ns, kubeletClusterDomain(t, ctx))
		if addr != want || port != "8080" {
			t.Errorf("dns-0 reads %s:%s, want its Service's DNS name %s:8080", addr, port, want)
		}
	})
}

// listenerService is the Service the Listener of a StatefulSet pod points at.
func listenerService(t *testing.T, ctx context.Context, ns, pod string) *corev1.Service {
	t.Helper()
	l := listener(t, ctx, ns, pod)
	var svc corev1.Service
	if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: l.Status.ServiceName}, &svc); err != nil {
		t.Fatalf("get Service %q of Listener %s: %v", l.Status.ServiceName, l.Name, err)
	}
	return &svc
}

// Scenario 3: a LoadBalancer class on a cluster without a load balancer
// controller. The pod waits in ContainerCreating until the Service has an
// ingress (the test plays the load balancer), then reads that address.
func TestLoadBalancer(t *testing.T) {
	ctx := t.Context()
	ensureClass(t, ctx, listenerClass("e2e-loadbalancer", v1alpha1.ListenerClassSpec{
		ServiceType: v1alpha1.ServiceTypeLoadBalancer, PreferredAddressType: v1alpha1.PreferredAddressIP,
	}))
	ns := namespace(t, ctx, "e2e-lb")
	if err := k8s.client.Create(ctx, demoStatefulSet(ns, "lb", "e2e-loadbalancer", 1)); err != nil {
		t.Fatalf("create StatefulSet: %v", err)
	}
	// The Service exists (the Listener was created for the claim) while the
	// pod cannot start: its volume has no address to publish yet.
	var svc corev1.Service
	eventually(t, ctx, podTimeout, "the pod waits in ContainerCreating with its Service created", func(ctx context.Context) (bool, string) {
		var p corev1.Pod
		if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "lb-0"}, &p); err != nil {
			return false, err.Error()
		}
		var l v1alpha1.Listener
		if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "listener-lb-0"}, &l); err != nil || l.Status.ServiceName == "" {
			return false, "pod " + podState(&p) + "; no Listener with a Service yet"
		}
		if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: l.Status.ServiceName}, &svc); err != nil {
			return false, err.Error()
		}
		return p.Spec.NodeName != "" && podState(&p) == "ContainerCreating", podState(&p)
	})
	// kubelet asked for the volume and was told why the pod waits (what
	// `kubectl describe pod` shows); after that answer the pod is still not
	// Running: it does not start without an address.
	const waiting = "waiting for the load balancer of its Service to get an address"
	eventually(t, ctx, podTimeout, "a FailedMount event of lb-0 saying it waits for the load balancer", func(ctx context.Context) (bool, string) {
		var evs corev1.EventList
		if err := k8s.client.List(ctx, &evs, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		for _, e := range evs.Items {
			if e.InvolvedObject.Name == "lb-0" && e.Reason == "FailedMount" && strings.Contains(e.Message, waiting) {
				return true, ""
			}
		}
		return false, lastEvent(ctx, ns, "lb-0")
	})
	var p corev1.Pod
	if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "lb-0"}, &p); err != nil {
		t.Fatal(err)
	}
	if p.Status.Phase == corev1.PodRunning {
		t.Fatalf("lb-0 is Running although its LoadBalancer Service has no ingress yet")
	}

	// A hand-made address (hack/cluster/settings.sh: given to no pod and
	// outside MetalLB's pool; the Service has no loadBalancerClass, so
	// MetalLB leaves its status alone); nothing is sent there.
	const lbIP = "10.88.0.234"
	patch := client.RawPatch(types.MergePatchType, []byte(`{"status":{"loadBalancer":{"ingress":[{"ip":"`+lbIP+`"}]}}}`))
	if err := k8s.client.Status().Patch(ctx, &svc, patch); err != nil {
		t.Fatalf("set the Service's load balancer ingress: %v", err)
	}
	podsReady(t, ctx, ns, "lb", 1, podTimeout)
	addr, port := defaultAddress(t, tree(t, ctx, ns, "lb-0"))
	if addr != lbIP || port != "8080" {
		t.Errorf("lb-0 reads %s:%s, want the load balancer's %s:8080", addr, port, lbIP)
	}
}

// Scenario 4: misconfiguration is refused at kubectl apply, with a message
// that says what to fix.
func TestAdmissionRefusesMisconfiguration(t *testing.T) {
	ctx := t.Context()
	ns := namespace(t, ctx, "e2e-admission")
	cases := []struct {
		name     string
		manifest string
		want     []string
	}{{
		name: "claim with an unknown class",
		manifest: `apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: web
  annotations: {listeners.stackable.tech/listener-class: no-such-class}
spec:
  storageClassName: listeners.stackable.tech
  accessModes: [ReadWriteMany]
  resources: {requests: {storage: 1}}
`,
		want: []string{`ListenerClass "no-such-class" not found; available:`, "cluster-internal"},
	}, {
		name: "claim with both annotations",
		manifest: `apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: web
  annotations:
    listeners.stackable.tech/listener-class: cluster-internal
    listeners.stackable.tech/listener-name: shared
spec:
  storageClassName: listeners.stackable.tech
  accessModes: [ReadWriteMany]
  resources: {requests: {storage: 1}}
`,
		want: []string{"set only one of listeners.stackable.tech/listener-class"},
	}, {
		name: "listener with an unknown class",
		manifest: `apiVersion: listeners.stackable.tech/v1alpha1
kind: Listener
metadata: {name: web}
spec:
  className: no-such-class
  ports: [{name: http, port: 8080}]
`,
		want: []string{`ListenerClass "no-such-class" not found; available:`},
	}, {
		// Caught by the schema (ports are a map keyed by name) before the
		// webhooks; the user still learns which entry to fix.
		name: "listener with two ports of one name",
		manifest: `apiVersion: listeners.stackable.tech/v1alpha1
kind: Listener
metadata: {name: web}
spec:
  className: cluster-internal
  ports: [{name: http, port: 8080}, {name: http, port: 8081}]
`,
		want: []string{`spec.ports[1]: Duplicate value: {"name":"http"}`},
	}, {
		name: "listener with one port number twice",
		manifest: `apiVersion: listeners.stackable.tech/v1alpha1
kind: Listener
metadata: {name: web}
spec:
  className: cluster-internal
  ports: [{name: http, port: 8080}, {name: web, port: 8080}]
`,
		want: []string{"spec.ports[1].port", `spec.ports[0] ("http") already exposes 8080/TCP`},
	}, {
		name: "opted-in StatefulSet with an unknown class",
		manifest: `apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: web
  labels: {listeners.stackable.tech/enabled: "true"}
  annotations: {listeners.stackable.tech/listener-class: no-such-class}
spec:
  serviceName: web
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: localhost/listener-demo:dev}]
`,
		want: []string{`ListenerClass "no-such-class" not found`},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, dryRun := range []string{"--dry-run=server", "--dry-run=none"} {
				_, errOut, err := k8s.run(ctx, tc.manifest, "apply", "-n", ns, dryRun, "-f", "-")
				if err == nil {
					t.Fatalf("kubectl apply %s accepted it; want a refusal", dryRun)
				}
				for _, w := range tc.want {
					if !strings.Contains(errOut, w) {
						t.Errorf("kubectl apply %s said:\n%s\nwant it to contain %q", dryRun, errOut, w)
					}
				}
			}
		})
	}
}

// Scenario 5: deleting a StatefulSet and its claims removes everything the
// operator created for it.
func TestDeleteCleansUp(t *testing.T) {
	ctx := t.Context()
	ns := namespace(t, ctx, "e2e-cleanup")
	sts := demoStatefulSet(ns, "gone", "cluster-internal", 2)
	if err := k8s.client.Create(ctx, sts); err != nil {
		t.Fatalf("create StatefulSet: %v", err)
	}
	podsReady(t, ctx, ns, "gone", 2, podTimeout)
	if n := countOwned(t, ctx, ns); n.listeners != 2 || n.services != 2 || n.podListeners != 2 {
		t.Fatalf("before deleting: %+v, want 2 Listeners, 2 Services, 2 PodListeners", n)
	}

	if err := k8s.client.Delete(ctx, sts, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
		t.Fatalf("delete StatefulSet: %v", err)
	}
	if err := k8s.client.DeleteAllOf(ctx, &corev1.PersistentVolumeClaim{}, client.InNamespace(ns), client.MatchingLabels{"app": "gone"}); err != nil {
		t.Fatalf("delete claims: %v", err)
	}
	eventually(t, ctx, podTimeout, "Listeners, Services and PodListeners gone", func(ctx context.Context) (bool, string) {
		n := countOwned(t, ctx, ns)
		return n == (owned{}), fmt.Sprintf("%+v left", n)
	})
}

type owned struct{ listeners, services, podListeners int }

func countOwned(t *testing.T, ctx context.Context, ns string) owned {
	t.Helper()
	var ls v1alpha1.ListenerList
	var svcs corev1.ServiceList
	var pls v1alpha1.PodListenersList
	for _, l := range []client.ObjectList{&ls, &svcs, &pls} {
		if err := k8s.client.List(ctx, l, client.InNamespace(ns)); err != nil {
			t.Fatalf("list: %v", err)
		}
	}
	return owned{len(ls.Items), len(listenerServices(svcs.Items)), len(pls.Items)}
}

// listenerServices are the Services a Listener owns.
func listenerServices(all []corev1.Service) []corev1.Service {
	var out []corev1.Service
	for _, s := range all {
		if ref := metav1.GetControllerOf(&s); ref != nil && ref.Kind == "Listener" {
			out = append(out, s)
		}
	}
	return out
}

// Scenario 6: the operator's pods are deleted while a StatefulSet scales from
// 0 to 3. Everything converges: three pods with addresses, one Service per
// Listener, nothing duplicated or orphaned.
func TestOperatorRestartWhileScaling(t *testing.T) {
	ctx := t.Context()
	ns := namespace(t, ctx, "e2e-restart")
	sts := demoStatefulSet(ns, "scale", "e2e-clusterip", 0)
	ensureClass(t, ctx, listenerClass("e2e-clusterip", v1alpha1.ListenerClassSpec{
		ServiceType: v1alpha1.ServiceTypeClusterIP, PreferredAddressType: v1alpha1.PreferredAddressIP,
	}))
	if err := k8s.client.Create(ctx, sts); err != nil {
		t.Fatalf("create StatefulSet: %v", err)
	}
	scale := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":3}}`))
	if err := k8s.client.Patch(ctx, &appsv1.StatefulSet{ObjectMeta: sts.ObjectMeta}, scale); err != nil {
		t.Fatalf("scale to 3: %v", err)
	}
	var ops corev1.PodList
	if err := k8s.client.List(ctx, &ops, client.InNamespace(operatorNamespace)); err != nil {
		t.Fatalf("list operator pods: %v", err)
	}
	if len(ops.Items) == 0 {
		t.Fatalf("no pods in namespace %s: is the operator deployed?", operatorNamespace)
	}
	for i := range ops.Items {
		if err := k8s.client.Delete(ctx, &ops.Items[i], client.GracePeriodSeconds(0)); err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("delete operator pod %s: %v", ops.Items[i].Name, err)
		}
	}
	t.Logf("deleted %d operator pods while scaling 0→3", len(ops.Items))
	t.Cleanup(func() { webhooksAnswer(t, context.WithoutCancel(ctx)) })

	pods := podsReady(t, ctx, ns, "scale", 3, 2*podTimeout)
	names := make([]string, 0, len(pods))
	for n := range pods {
		names = append(names, n)
	}
	sort.Strings(names)
	addrs := map[string]string{}
	for _, name := range names {
		addr, port := defaultAddress(t, tree(t, ctx, ns, name))
		svc := listenerService(t, ctx, ns, name)
		if addr != svc.Spec.ClusterIP || port != "8080" {
			t.Errorf("%s reads %s:%s, want its Service's %s:8080", name, addr, port, svc.Spec.ClusterIP)
		}
		if other, dup := addrs[addr]; dup {
			t.Errorf("%s and %s read the same address %s", other, name, addr)
		}
		addrs[addr] = name
	}
	// Nothing but the three Listeners' Services in the namespace, each owned
	// by a Listener that exists and names it.
	var svcs corev1.ServiceList
	var ls v1alpha1.ListenerList
	if err := k8s.client.List(ctx, &svcs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if err := k8s.client.List(ctx, &ls, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	byUID := map[types.UID]v1alpha1.Listener{}
	for _, l := range ls.Items {
		byUID[l.UID] = l
	}
	var got []string
	for _, s := range svcs.Items {
		got = append(got, s.Name)
		ref := metav1.GetControllerOf(&s)
		if ref == nil || ref.Kind != "Listener" {
			t.Errorf("Service %s is not owned by a Listener", s.Name)
			continue
		}
		if l, ok := byUID[ref.UID]; !ok {
			t.Errorf("Service %s is orphaned: its Listener %s is gone", s.Name, ref.Name)
		} else if l.Status.ServiceName != s.Name {
			t.Errorf("Service %s is owned by Listener %s, which names Service %q", s.Name, l.Name, l.Status.ServiceName)
		}
	}
	if len(svcs.Items) != 3 || len(ls.Items) != 3 {
		t.Errorf("%d Listeners and Services %v; want 3 of each, one per pod", len(ls.Items), got)
	}
}
