//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// The five cases of issue 10, as a user meets them with kubectl on the
// project's cluster (docs/webhooks.md).

// applyFails applies manifest in ns and returns what kubectl printed; the
// apply must fail.
func applyFails(t *testing.T, ctx context.Context, ns, manifest string) string {
	t.Helper()
	out, errOut, err := k8s.run(ctx, manifest, "-n", ns, "apply", "-f", "-")
	if err == nil {
		t.Fatalf("kubectl apply succeeded, want a refusal:\n%s", out)
	}
	return errOut
}

func mustContain(t *testing.T, got string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("kubectl said:\n%s\nwant it to contain %q", got, w)
		}
	}
}

// TestAdmissionOptInAndPolicy: cases 2 to 5.
func TestAdmissionOptInAndPolicy(t *testing.T) {
	ctx := t.Context()
	ensureClass(t, ctx, listenerClass("cluster-internal", v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP}))
	ns := namespace(t, ctx, "e2e-adm")

	t.Run("2: opted-in bare pod of an unknown class", func(t *testing.T) {
		out := applyFails(t, ctx, ns, `apiVersion: v1
kind: Pod
metadata:
  name: bare
  labels: {listeners.stackable.tech/enabled: "true"}
  annotations: {listeners.stackable.tech/listener-class: does-not-exist}
spec:
  containers: [{name: app, image: `+demoImage+`}]
`)
		mustContain(t, out, `metadata.annotations[listeners.stackable.tech/listener-class]: Invalid value: "does-not-exist": ListenerClass "does-not-exist" not found; available:`)
	})
	t.Run("2: Deployment whose pod template opts in with an unknown class", func(t *testing.T) {
		out := applyFails(t, ctx, ns, `apiVersion: apps/v1
kind: Deployment
metadata: {name: api}
spec:
  selector: {matchLabels: {app: api}}
  template:
    metadata:
      labels: {app: api, listeners.stackable.tech/enabled: "true"}
      annotations: {listeners.stackable.tech/listener-class: does-not-exist}
    spec:
      containers: [{name: app, image: `+demoImage+`}]
`)
		mustContain(t, out, `spec.template.metadata.annotations[listeners.stackable.tech/listener-class]: Invalid value: "does-not-exist": ListenerClass "does-not-exist" not found`)
	})
	t.Run("3: Listener overriding what its class decides", func(t *testing.T) {
		out := applyFails(t, ctx, ns, `apiVersion: listeners.stackable.tech/v1alpha1
kind: Listener
metadata: {name: web}
spec:
  className: cluster-internal
  ports: [{name: http, port: 8080}]
  objectOverrides:
  - {apiVersion: v1, kind: Service, metadata: {name: web}, spec: {type: LoadBalancer}}
`)
		mustContain(t, out, `spec.objectOverrides[0].spec.type: Forbidden: spec.type is exposure (who can reach the pods, and on which address) and is decided by ListenerClass "cluster-internal" (cluster policy), not by a Listener`)
	})
	t.Run("4: opting in an existing StatefulSet", func(t *testing.T) {
		sts := demoStatefulSet(ns, "plain", "cluster-internal", 0)
		sts.Labels = nil
		if err := k8s.client.Create(ctx, sts); err != nil {
			t.Fatal(err)
		}
		_, errOut, err := k8s.run(ctx, "", "-n", ns, "label", "sts", "plain", v1alpha1.LabelEnabled+"=true")
		if err == nil {
			t.Fatal("kubectl label succeeded, want a refusal")
		}
		mustContain(t, errOut, `StatefulSet "plain" has no listener volume claim template`, "kubectl delete statefulset plain --cascade=orphan")
	})
	t.Run("5: a StatefulSet before its Listener in one file", func(t *testing.T) {
		out, errOut, err := k8s.run(ctx, `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: lb}
spec:
  replicas: 0
  serviceName: lb
  selector: {matchLabels: {app: lb}}
  template:
    metadata: {labels: {app: lb}}
    spec:
      containers: [{name: app, image: `+demoImage+`, ports: [{name: http, containerPort: 8080}], volumeMounts: [{name: listener, mountPath: /stackable/listener}]}]
  volumeClaimTemplates:
  - metadata:
      name: listener
      annotations: {listeners.stackable.tech/listener-name: lb}
    spec:
      storageClassName: listeners.stackable.tech
      accessModes: [ReadWriteMany]
      resources: {requests: {storage: "1"}}
---
apiVersion: listeners.stackable.tech/v1alpha1
kind: Listener
metadata: {name: lb}
spec:
  className: cluster-internal
  ports: [{name: http, port: 8080}]
`, "-n", ns, "apply", "-f", "-")
		if err != nil {
			t.Fatalf("kubectl apply: %v\n%s", err, errOut)
		}
		mustContain(t, out, "statefulset.apps/lb created", "listener.listeners.stackable.tech/lb created")
		mustContain(t, errOut, `Warning: Listener "lb" does not exist in namespace "`+ns+`" yet`)
	})
}

// TestAdmissionOperatorDown: case 1. With the operator scaled to 0 (no
// webhook server answers), deleting a listener claim and a namespace that
// holds one completes.
func TestAdmissionOperatorDown(t *testing.T) {
	ctx := t.Context()
	ensureClass(t, ctx, listenerClass("cluster-internal", v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP}))
	ns := namespace(t, ctx, "e2e-down")
	claim := `apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: %s
  annotations: {listeners.stackable.tech/listener-class: cluster-internal}
spec:
  storageClassName: listeners.stackable.tech
  accessModes: [ReadWriteMany]
  resources: {requests: {storage: "1"}}
`
	k8s.kubectlOK(t, ctx, fmt.Sprintf(claim, "a")+"---\n"+fmt.Sprintf(claim, "b"), "-n", ns, "apply", "-f", "-")

	var dep appsv1.Deployment
	key := client.ObjectKey{Namespace: operatorNamespace, Name: "listener-operator"}
	if err := k8s.client.Get(ctx, key, &dep); err != nil {
		t.Fatal(err)
	}
	replicas := *dep.Spec.Replicas
	t.Cleanup(func() {
		ctx := context.WithoutCancel(ctx)
		k8s.kubectlOK(t, ctx, "", "-n", operatorNamespace, "scale", "deploy", "listener-operator", fmt.Sprintf("--replicas=%d", replicas))
		k8s.kubectlOK(t, ctx, "", "-n", operatorNamespace, "rollout", "status", "deploy/listener-operator", "--timeout=180s")
		webhooksAnswer(t, ctx)
	})
	k8s.kubectlOK(t, ctx, "", "-n", operatorNamespace, "scale", "deploy", "listener-operator", "--replicas=0")
	eventually(t, ctx, 2*time.Minute, "no operator pod left", func(ctx context.Context) (bool, string) {
		var pods corev1.PodList
		if err := k8s.client.List(ctx, &pods, client.InNamespace(operatorNamespace), client.MatchingLabels{"app.kubernetes.io/component": "controller"}); err != nil {
			return false, err.Error()
		}
		return len(pods.Items) == 0, fmt.Sprintf("%d pods", len(pods.Items))
	})
	// While down, a new listener claim is refused (the webhooks fail
	// closed) ...
	_, errOut, err := k8s.run(ctx, fmt.Sprintf(claim, "c"), "-n", ns, "apply", "-f", "-")
	if err == nil || !strings.Contains(errOut, "failed calling webhook") {
		t.Errorf("a new listener claim while the operator is down: %v %s", err, errOut)
	}
	// ... but deletion completes.
	k8s.kubectlOK(t, ctx, "", "-n", ns, "delete", "pvc", "a", "--timeout=60s")
	k8s.kubectlOK(t, ctx, "", "delete", "ns", ns, "--timeout=120s")
	if err := k8s.client.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace %s still there: %v", ns, err)
	}
}
