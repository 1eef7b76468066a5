//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// The cases of issue 20 (class policy a tenant cannot walk around), as a
// user meets them with kubectl on the project's cluster.
func TestClassPolicy(t *testing.T) {
	ctx := t.Context()
	ensureClass(t, ctx, listenerClass("cluster-internal", v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP}))
	ns := namespace(t, ctx, "e2e-policy")

	t.Run("1: override with a case-folded key", func(t *testing.T) {
		out := applyFails(t, ctx, ns, `apiVersion: listeners.stackable.tech/v1alpha1
kind: Listener
metadata: {name: web}
spec:
  className: cluster-internal
  ports: [{name: http, port: 8080}]
  objectOverrides:
  - {apiVersion: v1, kind: Service, Metadata: 5, metadata: {name: web}, spec: {type: NodePort}}
  - {apiVersion: v1, kind: Service, Metadata: null, metadata: {name: web}}
`)
		mustContain(t, out, `spec.objectOverrides[0].Metadata: Forbidden: unknown key (keys are case-sensitive); rename it to "metadata"`)
		if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, &corev1.Service{}); !apierrors.IsNotFound(err) {
			t.Errorf("a Service web exists: %v", err)
		}
	})
	t.Run("2: externalIPs and a load-balancer pool", func(t *testing.T) {
		out := applyFails(t, ctx, ns, `apiVersion: listeners.stackable.tech/v1alpha1
kind: Listener
metadata: {name: web}
spec:
  className: cluster-internal
  ports: [{name: http, port: 8080}]
  objectOverrides:
  - apiVersion: v1
    kind: Service
    metadata: {name: web, annotations: {metallb.universe.tf/address-pool: public}}
    spec: {externalIPs: [203.0.113.10]}
`)
		mustContain(t, out,
			`spec.objectOverrides[0].spec.externalIPs: Forbidden: spec.externalIPs is exposure (who can reach the pods, and on which address) and is decided by ListenerClass "cluster-internal"`,
			`spec.objectOverrides[0].metadata.annotations[metallb.universe.tf/address-pool]: Forbidden`)
	})
	t.Run("3: a Listener that loses its class loses its Service", func(t *testing.T) {
		k8s.kubectlOK(t, ctx, `apiVersion: listeners.stackable.tech/v1alpha1
kind: Listener
metadata: {name: lost}
spec:
  className: cluster-internal
  ports: [{name: http, port: 8080}]
`, "-n", ns, "apply", "-f", "-")
		eventually(t, ctx, time.Minute, "Listener lost has a Service and an address", func(ctx context.Context) (bool, string) {
			var l v1alpha1.Listener
			if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "lost"}, &l); err != nil {
				return false, err.Error()
			}
			return len(l.Status.IngressAddresses) > 0 && l.Status.ClassName == "cluster-internal", fmt.Sprintf("%+v", l.Status)
		})
		k8s.kubectlOK(t, ctx, "", "-n", ns, "patch", "listener", "lost", "--type=json", "-p", `[{"op":"remove","path":"/spec/className"}]`)
		eventually(t, ctx, time.Minute, "the Service of Listener lost deleted, its addresses gone", func(ctx context.Context) (bool, string) {
			err := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "lost"}, &corev1.Service{})
			var l v1alpha1.Listener
			if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "lost"}, &l); err != nil {
				return false, err.Error()
			}
			return apierrors.IsNotFound(err) && len(l.Status.IngressAddresses) == 0 && l.Status.ClassName == "", fmt.Sprintf("service: %v, status %+v", err, l.Status)
		})
	})
	t.Run("4: a bound claim cannot be re-pointed", func(t *testing.T) {
		k8s.kubectlOK(t, ctx, `apiVersion: listeners.stackable.tech/v1alpha1
kind: Listener
metadata: {name: a}
spec: {className: cluster-internal, ports: [{name: http, port: 8080}]}
---
apiVersion: listeners.stackable.tech/v1alpha1
kind: Listener
metadata: {name: b}
spec: {className: cluster-internal, ports: [{name: http, port: 8080}]}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data
  annotations: {listeners.stackable.tech/listener-name: a}
spec:
  storageClassName: listeners.stackable.tech
  accessModes: [ReadWriteMany]
  resources: {requests: {storage: "1"}}
---
apiVersion: v1
kind: Pod
metadata: {name: user}
spec:
  terminationGracePeriodSeconds: 1
  containers: [{name: app, image: `+demoImage+`, args: ["-listen", ":8080"], ports: [{name: http, containerPort: 8080}], volumeMounts: [{name: l, mountPath: /stackable/listener}]}]
  volumes: [{name: l, persistentVolumeClaim: {claimName: data}}]
`, "-n", ns, "apply", "-f", "-")
		eventually(t, ctx, 2*time.Minute, "claim data bound", func(ctx context.Context) (bool, string) {
			var c corev1.PersistentVolumeClaim
			if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "data"}, &c); err != nil {
				return false, err.Error()
			}
			return c.Spec.VolumeName != "", string(c.Status.Phase)
		})
		_, errOut, err := k8s.run(ctx, "", "-n", ns, "annotate", "pvc", "data", v1alpha1.AnnotationListenerName+"=b", "--overwrite")
		if err == nil {
			t.Fatal("re-pointing a bound claim was admitted")
		}
		mustContain(t, errOut, `metadata.annotations[listeners.stackable.tech/listener-name]: Forbidden: is immutable once the claim is bound`, "delete the claim and create it again")
	})
	t.Run("5: a per-claim listener without a port", func(t *testing.T) {
		out := applyFails(t, ctx, ns, `apiVersion: v1
kind: Pod
metadata: {name: portless}
spec:
  containers: [{name: app, image: `+demoImage+`}]
  volumes:
  - name: listener
    ephemeral:
      volumeClaimTemplate:
        metadata: {annotations: {listeners.stackable.tech/listener-class: cluster-internal}}
        spec: {storageClassName: listeners.stackable.tech, accessModes: [ReadWriteMany], resources: {requests: {storage: "1"}}}
`)
		mustContain(t, out, `spec.containers: Required value: listener volume "listener" gets a Listener of its own whose ports are the containers' ports, and no container declares one`, `declare the served ports on container "app"`)
	})
}

// TestStackableOverridesCase is the existing operator's kuttl test
// tests/templates/kuttl/overrides, re-expressed: class serviceAnnotations <
// class serviceOverrides < Listener objectOverrides (issue 20, case 6).
func TestStackableOverridesCase(t *testing.T) {
	ctx := t.Context()
	ns := namespace(t, ctx, "e2e-overrides")
	class := "listener-operator-test-overrides-" + ns
	k8s.kubectlOK(t, ctx, `apiVersion: listeners.stackable.tech/v1alpha1
kind: ListenerClass
metadata:
  name: `+class+`
spec:
  serviceType: ClusterIP
  serviceAnnotations:
    deprecated: was here
    winner: deprecated
  serviceOverrides:
    metadata:
      annotations:
        serviceOverrides: was here
        winner: serviceOverrides
    spec:
      sessionAffinity: ClientIP
`, "apply", "-f", "-")
	t.Cleanup(func() {
		ctx := context.WithoutCancel(ctx)
		_, _, _ = k8s.run(ctx, "", "delete", "ns", ns, "--wait", "--timeout=60s")
		_, _, _ = k8s.run(ctx, "", "delete", "listenerclass", class, "--timeout=60s")
	})
	k8s.kubectlOK(t, ctx, `apiVersion: listeners.stackable.tech/v1alpha1
kind: Listener
metadata:
  name: listener
spec:
  className: `+class+`
  ports:
    - name: http
      port: 80
  objectOverrides:
    - apiVersion: v1
      kind: Service
      metadata:
        name: listener
        namespace: `+ns+`
        annotations:
          listener: was here
          winner: listener
      spec:
        internalTrafficPolicy: Local
`, "-n", ns, "apply", "-f", "-")
	eventually(t, ctx, time.Minute, "Service listener as the kuttl assert says", func(ctx context.Context) (bool, string) {
		var svc corev1.Service
		if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "listener"}, &svc); err != nil {
			return false, err.Error()
		}
		want := map[string]string{"deprecated": "was here", "serviceOverrides": "was here", "listener": "was here", "winner": "listener"}
		var bad []string
		for k, v := range want {
			if svc.Annotations[k] != v {
				bad = append(bad, fmt.Sprintf("%s=%q", k, svc.Annotations[k]))
			}
		}
		if svc.Spec.Type != corev1.ServiceTypeClusterIP || svc.Spec.SessionAffinity != corev1.ServiceAffinityClientIP ||
			svc.Spec.InternalTrafficPolicy == nil || *svc.Spec.InternalTrafficPolicy != corev1.ServiceInternalTrafficPolicyLocal ||
			len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Name != "http" || svc.Spec.Ports[0].Port != 80 {
			bad = append(bad, fmt.Sprintf("spec %+v", svc.Spec))
		}
		return len(bad) == 0, strings.Join(bad, ", ")
	})
}
