//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// The fault suite (issue 11): routine faults during which the addresses pods
// read must stay right. Each scenario cleans up after itself.

const (
	leaseName = "listener-operator.listeners.stackable.tech"
	// faultListenersEnv sets how many Listeners the leader-kill scenario
	// converges (200 in `make e2e`; 1,000 by hand).
	faultListenersEnv = "E2E_FAULT_LISTENERS"
	e2eNodePortClass  = "e2e-fault-nodeport"
	e2eClusterIPClass = "e2e-fault-clusterip"
)

func faultClasses(t *testing.T, ctx context.Context) {
	ensureClass(t, ctx, listenerClass(e2eClusterIPClass, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP, PreferredAddressType: v1alpha1.PreferredAddressIP}))
	ensureClass(t, ctx, listenerClass(e2eNodePortClass, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeNodePort}))
}

// leader is the operator pod holding the leader election Lease.
func leader(ctx context.Context) (string, error) {
	var lease coordinationv1.Lease
	if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: leaseName}, &lease); err != nil {
		return "", err
	}
	holder := ptr.Deref(lease.Spec.HolderIdentity, "")
	pod, _, _ := strings.Cut(holder, "_")
	if pod == "" {
		return "", fmt.Errorf("lease %s has no holder", leaseName)
	}
	return pod, nil
}

// writes reads listener_operator_writes_total of one operator pod (with
// the metrics-reader token): successful writes by kind.
func writes(t *testing.T, ctx context.Context, pod string) map[string]float64 {
	t.Helper()
	var p corev1.Pod
	if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: pod}, &p); err != nil {
		t.Logf("metrics of %s: %v", pod, err)
		return nil
	}
	out, err := metricsOf(ctx, &p)
	if err != nil {
		t.Logf("metrics of %s: %v", pod, err)
		return nil
	}
	byKind := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "listener_operator_writes_total{") || !strings.Contains(line, `result="success"`) {
			continue
		}
		labels, value, _ := strings.Cut(line, "} ")
		n, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		kind := "?"
		if _, rest, ok := strings.Cut(labels, `kind="`); ok {
			kind, _, _ = strings.Cut(rest, `"`)
		}
		byKind[kind] += n
	}
	return byKind
}

func operatorPods(t *testing.T, ctx context.Context) []corev1.Pod {
	t.Helper()
	var pods corev1.PodList
	if err := k8s.client.List(ctx, &pods, client.InNamespace(operatorNamespace), client.MatchingLabels{"app.kubernetes.io/component": "controller"}); err != nil {
		t.Fatalf("list operator pods: %v", err)
	}
	return pods.Items
}

// TestFaultLeaderKilledDuringConvergence creates N Listeners (half
// ClusterIP, half NodePort) in four batches and kills the elected leader
// after each of the first three: every Listener ends Ready, with exactly one
// Service, and no Service is left without its Listener. It reports the
// writes per Listener.
func TestFaultLeaderKilledDuringConvergence(t *testing.T) {
	ctx := t.Context()
	// The next test needs the webhooks this one disturbs.
	t.Cleanup(func() { webhooksAnswer(t, context.WithoutCancel(ctx)) })
	n := 200
	if v := os.Getenv(faultListenersEnv); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 4 {
			t.Fatalf("%s=%q: want a number of Listeners, at least 4", faultListenersEnv, v)
		}
	}
	faultClasses(t, ctx)
	ns := namespace(t, ctx, "e2e-leader")

	name := func(i int) string { return fmt.Sprintf("l-%04d", i) }
	// One backend pod serves every NodePort Listener, so they have a node
	// to publish: it mounts a listener volume of each (as every exposed pod
	// must), made once the Listeners exist (a claim naming a Listener that
	// does not is refused).
	backend := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "backend", Namespace: ns},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers:                    []corev1.Container{{Name: "hello", Image: demoImage, ImagePullPolicy: corev1.PullIfNotPresent, Args: []string{"-listen", ":8080"}}},
		},
	}
	for i := 1; i < n; i += 2 {
		backend.Spec.Volumes = append(backend.Spec.Volumes, corev1.Volume{Name: name(i), VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
			VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{v1alpha1.AnnotationListenerName: name(i)}},
				Spec: corev1.PersistentVolumeClaimSpec{
					StorageClassName: ptr.To(v1alpha1.StorageClassName),
					AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
					Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1")}},
				},
			},
		}}})
	}

	// Writes before the test, per pod: the counters are per process.
	baseline := map[string]float64{}
	for _, p := range operatorPods(t, ctx) {
		for _, v := range writes(t, ctx, p.Name) {
			baseline[p.Name] += v
		}
	}
	var total float64
	byKind := map[string]float64{}
	count := func(pod string) {
		w := writes(t, ctx, pod)
		sum := 0.0
		for k, v := range w {
			byKind[k] += v
			sum += v
		}
		total += sum - baseline[pod]
		byKind["(earlier tests)"] -= baseline[pod]
		delete(baseline, pod)
	}

	create := func(from, to int) {
		var wg sync.WaitGroup
		errs := make(chan error, to-from)
		sem := make(chan struct{}, 8)
		for i := from; i < to; i++ {
			class := e2eClusterIPClass
			if i%2 == 1 {
				class = e2eNodePortClass
			}
			l := &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Name: name(i), Namespace: ns},
				Spec: v1alpha1.ListenerSpec{ClassName: ptr.To(class), Ports: []v1alpha1.ListenerPort{{Name: "http", Port: 8080, Protocol: corev1.ProtocolTCP}}}}
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				// A killed replica stays among the webhook's endpoints
				// for a moment: the API server's call to it is refused
				// (InternalError), and a retry reaches the other one.
				err := k8s.client.Create(ctx, l)
				for deadline := time.Now().Add(time.Minute); apierrors.IsInternalError(err) && time.Now().Before(deadline); {
					time.Sleep(time.Second)
					err = k8s.client.Create(ctx, l.DeepCopy())
				}
				if err != nil && !apierrors.IsAlreadyExists(err) {
					errs <- fmt.Errorf("create listener %s: %w", l.Name, err)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	}

	start := time.Now()
	kills := 0
	for batch := range 4 {
		create(batch*n/4, (batch+1)*n/4)
		if batch == 3 {
			break
		}
		// Kill the leader of the moment while it works through the batch,
		// once every replica runs: the other one serves the webhooks and
		// takes over.
		eventually(t, ctx, 3*time.Minute, "every operator replica ready", func(ctx context.Context) (bool, string) {
			pods := operatorPods(t, ctx)
			if len(pods) < 2 {
				return false, fmt.Sprintf("%d replicas", len(pods))
			}
			for _, p := range pods {
				if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning || !isReady(&p) {
					return false, p.Name + " " + podState(&p)
				}
			}
			return true, ""
		})
		var victim string
		eventually(t, ctx, 2*time.Minute, "a leader", func(ctx context.Context) (bool, string) {
			p, err := leader(ctx)
			if err != nil {
				return false, err.Error()
			}
			var pod corev1.Pod
			if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: p}, &pod); err != nil || pod.DeletionTimestamp != nil {
				return false, fmt.Sprintf("leader %s is gone or going (%v)", p, err)
			}
			victim = p
			return true, ""
		})
		count(victim)
		if err := k8s.client.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: victim}}, client.GracePeriodSeconds(0)); err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("kill leader %s: %v", victim, err)
		}
		kills++
		t.Logf("batch %d created, leader %s killed (%s)", batch+1, victim, time.Since(start).Round(time.Second))
	}
	if err := k8s.client.Create(ctx, backend); err != nil {
		t.Fatalf("create backend pod: %v", err)
	}

	eventually(t, ctx, 10*time.Minute, fmt.Sprintf("%d Listeners Ready", n), func(ctx context.Context) (bool, string) {
		var ls v1alpha1.ListenerList
		if err := k8s.client.List(ctx, &ls, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		ready, reasons := 0, map[string]int{}
		for _, l := range ls.Items {
			c := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionReady)
			if c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == l.Generation {
				ready++
			} else if c != nil {
				reasons[c.Reason]++
			} else {
				reasons["(no condition)"]++
			}
		}
		return ready == n, fmt.Sprintf("%d/%d Ready, others %v", ready, n, reasons)
	})
	converged := time.Since(start)

	// Exactly one Service per Listener, each named in its status; none
	// without its Listener.
	var ls v1alpha1.ListenerList
	var svcs corev1.ServiceList
	if err := k8s.client.List(ctx, &ls, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if err := k8s.client.List(ctx, &svcs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	byUID := map[types.UID]*v1alpha1.Listener{}
	for i := range ls.Items {
		byUID[ls.Items[i].UID] = &ls.Items[i]
	}
	perListener := map[types.UID]int{}
	orphans, dups := 0, 0
	for _, s := range svcs.Items {
		ref := metav1.GetControllerOf(&s)
		l := (*v1alpha1.Listener)(nil)
		if ref != nil {
			l = byUID[ref.UID]
		}
		if l == nil {
			orphans++
			t.Errorf("Service %s has no Listener (controller %v)", s.Name, ref)
			continue
		}
		if perListener[l.UID]++; perListener[l.UID] > 1 {
			dups++
			t.Errorf("Listener %s has more than one Service (also %s)", l.Name, s.Name)
		}
		if l.Status.ServiceName != s.Name {
			t.Errorf("Listener %s names Service %q, owns %s", l.Name, l.Status.ServiceName, s.Name)
		}
	}
	if len(perListener) != n {
		t.Errorf("%d of %d Listeners have a Service", len(perListener), n)
	}

	// Writes: the killed leaders' counts (read just before each kill) and
	// every operator pod's now.
	eventually(t, ctx, time.Minute, "operator pods running", func(ctx context.Context) (bool, string) {
		for _, p := range operatorPods(t, ctx) {
			if p.Status.Phase != corev1.PodRunning || !isReady(&p) {
				return false, p.Name + " " + podState(&p)
			}
		}
		return true, ""
	})
	for _, p := range operatorPods(t, ctx) {
		count(p.Name)
	}
	delete(byKind, "(earlier tests)")
	t.Logf("%d Listeners (ClusterIP and NodePort), leader killed %d times: all Ready after %s; %d duplicate and %d orphaned Services; %.0f writes, %.2f per Listener (by kind, including earlier tests' counts on surviving pods: %v)",
		n, kills, converged.Round(time.Second), dups, orphans, total, total/float64(n), byKind)

	// Delete the Listeners before the namespace so the Services go with them.
	if err := k8s.client.DeleteAllOf(ctx, &v1alpha1.Listener{}, client.InNamespace(ns)); err != nil {
		t.Logf("delete listeners: %v", err)
	}
}

// faultPod is a bare pod with a generic ephemeral listener volume of class,
// mounted where the demo image's tree helper reads it.
func faultPod(ns, name, class string, restart corev1.RestartPolicy, command ...string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{
			RestartPolicy:                 restart,
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []corev1.Container{{
				Name: "hello", Image: demoImage, ImagePullPolicy: corev1.PullIfNotPresent,
				Command:      command,
				Args:         argsUnless(command, "-listen", ":8080"),
				Ports:        []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
				VolumeMounts: []corev1.VolumeMount{{Name: "listener", MountPath: treeRoot}},
			}},
			Volumes: []corev1.Volume{{Name: "listener", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
				VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
					ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{v1alpha1.AnnotationListenerClass: class}},
					Spec: corev1.PersistentVolumeClaimSpec{
						StorageClassName: ptr.To(v1alpha1.StorageClassName),
						AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
						Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1")}},
					},
				},
			}}}},
		},
	}
}

func argsUnless(command []string, args ...string) []string {
	if len(command) > 0 {
		return nil
	}
	return args
}

// podRunning waits for a bare pod to be Running and Ready.
func podRunning(t *testing.T, ctx context.Context, ns, name string, timeout time.Duration) *corev1.Pod {
	t.Helper()
	var p corev1.Pod
	eventually(t, ctx, timeout, "pod "+name+" running", func(ctx context.Context) (bool, string) {
		if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &p); err != nil {
			return false, err.Error()
		}
		return p.Status.Phase == corev1.PodRunning && isReady(&p), podState(&p) + " " + lastEvent(ctx, ns, name)
	})
	return &p
}

// lastEvent is the note of the newest event about a pod (what a user sees
// in `kubectl describe pod`).
func lastEvent(ctx context.Context, ns, pod string) string {
	var evs corev1.EventList
	if err := k8s.client.List(ctx, &evs, client.InNamespace(ns)); err != nil {
		return ""
	}
	var last *corev1.Event
	for i := range evs.Items {
		e := &evs.Items[i]
		if e.InvolvedObject.Name != pod {
			continue
		}
		if last == nil || e.LastTimestamp.After(last.LastTimestamp.Time) || e.EventTime.After(last.EventTime.Time) {
			last = e
		}
	}
	if last == nil {
		return ""
	}
	return last.Reason + ": " + last.Message
}

// TestFaultPodMeddlesWithItsVolume: a container puts a FIFO, a 1 GB file, a
// symlink to /etc and a directory into its own (read-write) listener
// volume. The node plugin is not blocked (another pod on the node starts),
// and the next republish repairs the tree.
func TestFaultPodMeddlesWithItsVolume(t *testing.T) {
	ctx := t.Context()
	faultClasses(t, ctx)
	ns := namespace(t, ctx, "e2e-meddle")
	if err := k8s.client.Create(ctx, faultPod(ns, "meddler", e2eClusterIPClass, corev1.RestartPolicyAlways)); err != nil {
		t.Fatal(err)
	}
	podRunning(t, ctx, ns, "meddler", podTimeout)
	before := tree(t, ctx, ns, "meddler")
	addr, _ := defaultAddress(t, before)

	// What the pod does: every kind of hostile entry the issue names.
	script := `set -e; cd ` + treeRoot + `; g=$(readlink ..data); d=$g/addresses/` + addr + `
rm -f $d/ports/http && mkfifo $d/ports/http
rm -f $d/address && dd if=/dev/zero of=$d/address bs=1M count=0 seek=1024 2>/dev/null
rm -f default-address && ln -s /etc default-address
rm -f addresses && mkdir -p addresses/` + addr + `/ports && echo 1 > addresses/` + addr + `/ports/http`
	k8s.kubectlOK(t, ctx, "", "exec", "-n", ns, "meddler", "-c", "hello", "--", "sh", "-c", script)

	// The node plugin is free: a new pod on the node starts.
	if err := k8s.client.Create(ctx, faultPod(ns, "neighbour", e2eClusterIPClass, corev1.RestartPolicyAlways)); err != nil {
		t.Fatal(err)
	}
	podRunning(t, ctx, ns, "neighbour", podTimeout)
	if a, p := defaultAddress(t, tree(t, ctx, ns, "neighbour")); a == "" || p != "8080" {
		t.Errorf("the neighbour reads %s:%s", a, p)
	}

	// kubelet republishes (requiresRepublish, about every minute): the
	// meddler's tree is whole again.
	eventually(t, ctx, 3*time.Minute, "the meddler's tree repaired", func(ctx context.Context) (bool, string) {
		script := `cd ` + treeRoot + ` && [ "$(readlink default-address)" = "..data/default-address" ] && [ -f default-address/ports/http ] && cat default-address/address default-address/ports/http`
		out, errOut, err := k8s.run(ctx, "", "exec", "-n", ns, "meddler", "-c", "hello", "--", "sh", "-c", script)
		want := before["default-address/address"] + before["default-address/ports/http"]
		return err == nil && strings.TrimSpace(out) == want, fmt.Sprintf("%q %s %v", out, errOut, err)
	})
	if after := tree(t, ctx, ns, "meddler"); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("repaired tree %v, want %v", after, before)
	}
}

// TestFaultRecreatedClaimWaitsForItsOwnListener: a claim is deleted and
// made again under the same name while the old Listener is still there (a
// finalizer plays a slow garbage collector), in both ways it happens: a
// pod with a generic ephemeral volume made again under its name (claim
// <pod>-<volume>, as a StatefulSet's pods are), and a PersistentVolumeClaim
// deleted and applied again. The new pod waits, saying why, and starts
// with the new Listener's node port once the old one is gone.
func TestFaultRecreatedClaimWaitsForItsOwnListener(t *testing.T) {
	for _, tc := range []struct {
		name      string
		ephemeral bool
	}{
		{name: "ephemeral claim of a pod made again", ephemeral: true},
		{name: "claim deleted and applied again"},
	} {
		t.Run(tc.name, func(t *testing.T) { recreatedClaim(t, tc.ephemeral) })
	}
}

func recreatedClaim(t *testing.T, ephemeral bool) {
	ctx := t.Context()
	faultClasses(t, ctx)
	ns := namespace(t, ctx, "e2e-recreate")
	claim := "web-listener"
	standalone := func() *corev1.PersistentVolumeClaim {
		tmpl := faultPod(ns, "web", e2eNodePortClass, corev1.RestartPolicyAlways).Spec.Volumes[0].Ephemeral.VolumeClaimTemplate
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: claim, Namespace: ns, Annotations: tmpl.Annotations}, Spec: tmpl.Spec}
	}
	makePod := func() {
		p := faultPod(ns, "web", e2eNodePortClass, corev1.RestartPolicyAlways)
		if !ephemeral {
			if err := k8s.client.Create(ctx, standalone()); err != nil {
				t.Fatal(err)
			}
			p.Spec.Volumes[0].VolumeSource = corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}
		}
		if err := k8s.client.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	makePod()
	podRunning(t, ctx, ns, "web", podTimeout)
	var old v1alpha1.Listener
	if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: claim}, &old); err != nil {
		t.Fatal(err)
	}
	hold := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":["e2e.example/slow-gc"]}}`))
	release := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))
	if err := k8s.client.Patch(ctx, &old, hold); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = k8s.client.Patch(context.WithoutCancel(ctx), &v1alpha1.Listener{ObjectMeta: old.ObjectMeta}, release)
	})

	// The pod and its claim go (an ephemeral claim with its pod); the same
	// pod is made again, with a new claim of the same name.
	if err := k8s.client.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	if !ephemeral {
		if err := k8s.client.Delete(ctx, standalone()); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, ctx, 2*time.Minute, "the old pod and claim gone", func(ctx context.Context) (bool, string) {
		errPod := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, &corev1.Pod{})
		errClaim := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: claim}, &corev1.PersistentVolumeClaim{})
		return apierrors.IsNotFound(errPod) && apierrors.IsNotFound(errClaim), fmt.Sprintf("pod: %v, claim: %v", errPod, errClaim)
	})
	makePod()
	eventually(t, ctx, 2*time.Minute, "the new pod waits for its own Listener, and says so", func(ctx context.Context) (bool, string) {
		var evs corev1.EventList
		if err := k8s.client.List(ctx, &evs, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		var notes []string
		for _, e := range evs.Items {
			if e.InvolvedObject.Name == "web" && e.InvolvedObject.Kind == "Pod" {
				if strings.Contains(e.Message, "is being deleted") || strings.Contains(e.Message, "belongs to PersistentVolumeClaim") {
					return true, ""
				}
				notes = append(notes, e.Reason+": "+e.Message)
			}
		}
		return false, strings.Join(notes, "; ")
	})
	var p corev1.Pod
	if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, &p); err != nil || p.Status.Phase == corev1.PodRunning {
		t.Fatalf("the new pod runs with the old claim's Listener (phase %s, err %v)", p.Status.Phase, err)
	}

	if err := k8s.client.Patch(ctx, &old, release); err != nil {
		t.Fatal(err)
	}
	podRunning(t, ctx, ns, "web", podTimeout)
	var l v1alpha1.Listener
	if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: claim}, &l); err != nil {
		t.Fatal(err)
	}
	var c corev1.PersistentVolumeClaim
	if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: claim}, &c); err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(&l); ref == nil || ref.UID != c.UID || l.UID == old.UID {
		t.Errorf("the new claim's Listener: uid %s (old %s), controller %+v; want a new one controlled by claim %s", l.UID, old.UID, ref, c.UID)
	}
	_, port := defaultAddress(t, tree(t, ctx, ns, "web"))
	if port != strconv.Itoa(int(l.Status.NodePorts["http"])) {
		t.Errorf("the pod reads port %s, its Listener publishes node port %d (the old one had %d)", port, l.Status.NodePorts["http"], old.Status.NodePorts["http"])
	}
}

// TestFaultNodePluginRestartWhilePodStarts: the CSI node plugin's pod is
// deleted as a pod with a listener volume is created; the pod starts with
// its tree.
func TestFaultNodePluginRestartWhilePodStarts(t *testing.T) {
	ctx := t.Context()
	faultClasses(t, ctx)
	ns := namespace(t, ctx, "e2e-plugin")
	var plugins corev1.PodList
	if err := k8s.client.List(ctx, &plugins, client.InNamespace(operatorNamespace), client.MatchingLabels{"app.kubernetes.io/component": "csi-node"}); err != nil || len(plugins.Items) == 0 {
		t.Fatalf("node plugin pods: %d (%v)", len(plugins.Items), err)
	}
	if err := k8s.client.Create(ctx, faultPod(ns, "starting", e2eClusterIPClass, corev1.RestartPolicyAlways)); err != nil {
		t.Fatal(err)
	}
	for i := range plugins.Items {
		if err := k8s.client.Delete(ctx, &plugins.Items[i], client.GracePeriodSeconds(0)); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
	podRunning(t, ctx, ns, "starting", podTimeout)
	if a, p := defaultAddress(t, tree(t, ctx, ns, "starting")); a == "" || p != "8080" {
		t.Errorf("the pod reads %s:%s", a, p)
	}
}

// TestFaultFinishedPodKeepsItsAddress: a restartPolicy Never pod with a
// per-claim NodePort Listener exits. Its Listener keeps its ports, its
// Service and its addresses.
func TestFaultFinishedPodKeepsItsAddress(t *testing.T) {
	ctx := t.Context()
	faultClasses(t, ctx)
	ns := namespace(t, ctx, "e2e-finished")
	if err := k8s.client.Create(ctx, faultPod(ns, "job", e2eNodePortClass, corev1.RestartPolicyNever,
		"sh", "-c", "cat "+treeRoot+"/default-address/ports/http; sleep 20")); err != nil {
		t.Fatal(err)
	}
	claim := "job-listener"
	var running v1alpha1.Listener
	eventually(t, ctx, podTimeout, "the job's Listener published", func(ctx context.Context) (bool, string) {
		if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: claim}, &running); err != nil {
			return false, err.Error()
		}
		return running.Status.NodePorts["http"] != 0 && len(running.Status.IngressAddresses) > 0, fmt.Sprintf("%+v", running.Status)
	})
	var pod corev1.Pod
	eventually(t, ctx, podTimeout, "the job finished", func(ctx context.Context) (bool, string) {
		if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "job"}, &pod); err != nil {
			return false, err.Error()
		}
		return pod.Status.Phase == corev1.PodSucceeded, podState(&pod)
	})
	// The claim controller has seen the finished pod once it copies a new
	// label of the claim onto the Listener (it reconciles the claim with
	// the pod's current phase). Before the fix, that reconcile emptied
	// spec.ports: the Service was rejected and the addresses went.
	var pvc corev1.PersistentVolumeClaim
	if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: claim}, &pvc); err != nil {
		t.Fatal(err)
	}
	if err := k8s.client.Patch(ctx, &pvc, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"e2e-seen":"finished"}}}`))); err != nil {
		t.Fatal(err)
	}
	var l v1alpha1.Listener
	eventually(t, ctx, time.Minute, "the claim controller saw the finished pod", func(context.Context) (bool, string) {
		if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: claim}, &l); err != nil {
			return false, err.Error()
		}
		return l.Labels["e2e-seen"] == "finished", fmt.Sprintf("labels %v", l.Labels)
	})
	// What a user reads: the same ports, node ports and addresses, and a
	// condition that is Ready or NoNodes (a finished pod's node no longer
	// serves; the addresses published stay), never Invalid.
	eventually(t, ctx, time.Minute, "the Listener's status current", func(context.Context) (bool, string) {
		if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: claim}, &l); err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionReady)
		return c != nil && c.ObservedGeneration == l.Generation, fmt.Sprintf("generation %d, conditions %+v", l.Generation, l.Status.Conditions)
	})
	if c := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionReady); c.Reason != v1alpha1.ReasonReady && c.Reason != v1alpha1.ReasonNoNodes {
		t.Errorf("after the pod finished the Listener says %s: %s; want Ready or NoNodes", c.Reason, c.Message)
	}
	if fmt.Sprint(l.Spec.Ports) != fmt.Sprint(running.Spec.Ports) || fmt.Sprint(l.Status.IngressAddresses) != fmt.Sprint(running.Status.IngressAddresses) ||
		l.Status.NodePorts["http"] != running.Status.NodePorts["http"] {
		t.Errorf("after the pod finished: ports %+v, addresses %+v, node ports %v; want %+v, %+v, %v",
			l.Spec.Ports, l.Status.IngressAddresses, l.Status.NodePorts, running.Spec.Ports, running.Status.IngressAddresses, running.Status.NodePorts)
	}
	var svc corev1.Service
	if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: l.Status.ServiceName}, &svc); err != nil {
		t.Fatalf("the Listener's Service: %v", err)
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].NodePort != running.Status.NodePorts["http"] {
		t.Errorf("the Service's ports %+v, want node port %d", svc.Spec.Ports, running.Status.NodePorts["http"])
	}
}

// TestFaultKubeAPIServerRestartWhilePodsStart: kube-apiserver restarts while
// pods with listener volumes start; they all reach Running with trees that
// match their Listeners.
func TestFaultKubeAPIServerRestartWhilePodsStart(t *testing.T) {
	ctx := t.Context()
	// The next test needs the webhooks this one disturbs.
	t.Cleanup(func() { webhooksAnswer(t, context.WithoutCancel(ctx)) })
	faultClasses(t, ctx)
	ns := namespace(t, ctx, "e2e-apiserver")
	for i := range 3 {
		if err := k8s.client.Create(ctx, faultPod(ns, fmt.Sprintf("p%d", i), e2eClusterIPClass, corev1.RestartPolicyAlways)); err != nil {
			t.Fatal(err)
		}
	}
	restartClusterProcess(t, ctx, "kube-apiserver")
	for i := range 3 {
		name := fmt.Sprintf("p%d", i)
		podRunning(t, ctx, ns, name, podTimeout)
		var l v1alpha1.Listener
		if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-listener"}, &l); err != nil {
			t.Fatal(err)
		}
		if a, p := defaultAddress(t, tree(t, ctx, ns, name)); len(l.Status.IngressAddresses) == 0 || a != l.Status.IngressAddresses[0].Address || p != "8080" {
			t.Errorf("%s reads %s:%s, its Listener publishes %+v", name, a, p, l.Status.IngressAddresses)
		}
	}
}

// TestFaultKubeletRestartKeepsTrees: kubelet restarts with listener pods
// running; it publishes their volumes again (the existing operator's #284,
// "File exists"), the trees stay whole, and new pods still start.
func TestFaultKubeletRestartKeepsTrees(t *testing.T) {
	ctx := t.Context()
	faultClasses(t, ctx)
	ns := namespace(t, ctx, "e2e-kubelet")
	// Both pods on the node whose kubelet restarts (node 1, the host).
	onNode1 := func(p *corev1.Pod) *corev1.Pod {
		p.Spec.NodeSelector = map[string]string{corev1.LabelHostname: "listener-node-1"}
		return p
	}
	if err := k8s.client.Create(ctx, onNode1(faultPod(ns, "steady", e2eNodePortClass, corev1.RestartPolicyAlways))); err != nil {
		t.Fatal(err)
	}
	podRunning(t, ctx, ns, "steady", podTimeout)
	before := tree(t, ctx, ns, "steady")
	// Event times have whole seconds: a FailedMount of the pod's start (a
	// first publish before the reconciler added its port is normal) is
	// older than this.
	restarted := time.Now().Truncate(time.Second)
	restartClusterProcess(t, ctx, "kubelet")
	eventually(t, ctx, 2*time.Minute, "the node Ready again", func(ctx context.Context) (bool, string) {
		var nodes corev1.NodeList
		if err := k8s.client.List(ctx, &nodes); err != nil {
			return false, err.Error()
		}
		for _, n := range nodes.Items {
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue {
					return false, n.Name + " " + c.Reason
				}
			}
		}
		return true, ""
	})
	if err := k8s.client.Create(ctx, onNode1(faultPod(ns, "after", e2eNodePortClass, corev1.RestartPolicyAlways))); err != nil {
		t.Fatal(err)
	}
	podRunning(t, ctx, ns, "after", podTimeout)
	p := podRunning(t, ctx, ns, "steady", podTimeout)
	for _, cs := range p.Status.ContainerStatuses {
		if cs.RestartCount != 0 {
			t.Errorf("the steady pod's container restarted %d times", cs.RestartCount)
		}
	}
	if after := tree(t, ctx, ns, "steady"); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("tree after the kubelet restart %v, before %v", after, before)
	}
	// The restarted kubelet publishes the steady pod's volume again onto
	// its existing target; a failure would be a FailedMount event (the
	// existing operator's "File exists").
	var evs corev1.EventList
	if err := k8s.client.List(ctx, &evs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range evs.Items {
		last := e.LastTimestamp.Time
		if e.EventTime.After(last) {
			last = e.EventTime.Time
		}
		if e.Series != nil && e.Series.LastObservedTime.After(last) {
			last = e.Series.LastObservedTime.Time
		}
		if e.Reason == "FailedMount" && !last.Before(restarted) {
			t.Errorf("%s %s: %s: %s", e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
		}
	}
}

// TestFaultClassVanishesAndComesBack: a ListenerClass is deleted while the
// webhooks are down (which refuse deleting a class in use). The Listener
// says ClassNotFound and keeps its addresses; when the class comes back it
// is Ready with the same addresses.
func TestFaultClassVanishesAndComesBack(t *testing.T) {
	ctx := t.Context()
	ns := namespace(t, ctx, "e2e-class")
	className := ns + "-vanishing"
	class := listenerClass(className, v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP, PreferredAddressType: v1alpha1.PreferredAddressIP})
	ensureClass(t, ctx, class)
	t.Cleanup(func() {
		_ = k8s.client.Delete(context.WithoutCancel(ctx), listenerClass(className, v1alpha1.ListenerClassSpec{}))
	})
	l := &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: v1alpha1.ListenerSpec{ClassName: ptr.To(className), Ports: []v1alpha1.ListenerPort{{Name: "http", Port: 8080, Protocol: corev1.ProtocolTCP}}}}
	if err := k8s.client.Create(ctx, l); err != nil {
		t.Fatal(err)
	}
	reason := func(want string) *v1alpha1.Listener {
		t.Helper()
		got := &v1alpha1.Listener{}
		eventually(t, ctx, time.Minute, "Listener reason "+want, func(ctx context.Context) (bool, string) {
			if err := k8s.client.Get(ctx, client.ObjectKeyFromObject(l), got); err != nil {
				return false, err.Error()
			}
			c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
			return c != nil && c.Reason == want && c.ObservedGeneration == got.Generation, fmt.Sprintf("%+v", got.Status.Conditions)
		})
		return got
	}
	published := reason(v1alpha1.ReasonReady).Status.IngressAddresses

	// The webhooks are down: their configuration is removed for the
	// moment, and put back afterwards whatever happens.
	var hooks admissionregistrationv1.ValidatingWebhookConfigurationList
	if err := k8s.client.List(ctx, &hooks); err != nil {
		t.Fatal(err)
	}
	var saved []admissionregistrationv1.ValidatingWebhookConfiguration
	for _, h := range hooks.Items {
		for _, w := range h.Webhooks {
			if strings.HasSuffix(w.Name, ".listeners.stackable.tech") {
				saved = append(saved, h)
				break
			}
		}
	}
	if len(saved) == 0 {
		t.Fatal("no validating webhook configuration of the operator: is it deployed?")
	}
	restore := func() {
		for _, h := range saved {
			h := h.DeepCopy()
			h.ResourceVersion, h.UID, h.CreationTimestamp, h.ManagedFields = "", "", metav1.Time{}, nil
			if err := k8s.client.Create(context.WithoutCancel(ctx), h); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Errorf("restore webhook configuration %s: %v", h.Name, err)
			}
		}
	}
	t.Cleanup(restore)
	for i := range saved {
		if err := k8s.client.Delete(ctx, &saved[i]); err != nil {
			t.Fatal(err)
		}
	}
	// The API server drops a deleted webhook configuration from its
	// informer a moment later: until then the webhook still answers.
	eventually(t, ctx, 30*time.Second, "the class deleted with the webhooks down", func(ctx context.Context) (bool, string) {
		err := k8s.client.Delete(ctx, listenerClass(className, v1alpha1.ListenerClassSpec{}))
		if err != nil && !apierrors.IsNotFound(err) {
			return false, err.Error()
		}
		return true, ""
	})
	restore()

	gone := reason(v1alpha1.ReasonClassNotFound)
	if fmt.Sprint(gone.Status.IngressAddresses) != fmt.Sprint(published) {
		t.Errorf("without its class the Listener publishes %+v, want the last addresses %+v", gone.Status.IngressAddresses, published)
	}
	ensureClass(t, ctx, listenerClass(className, class.Spec))
	back := reason(v1alpha1.ReasonReady)
	if fmt.Sprint(back.Status.IngressAddresses) != fmt.Sprint(published) {
		t.Errorf("with its class back the Listener publishes %+v, want %+v", back.Status.IngressAddresses, published)
	}
}
