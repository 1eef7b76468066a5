package webhooks

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// TestGatewayClassStandaloneClaimPorts: a pod that mounts a standalone
// listener claim (a PersistentVolumeClaim of its own, not a claim template
// or an ephemeral volume) of a gateway class is refused when a container
// port of its becomes a port of the claim's Listener that no section of
// the class routes: the Listener webhook would refuse the claim
// controller's write of that port, and the pod would wait for an address
// that never comes. A claim that shares a Listener, or whose class is not
// a gateway class, is not judged by the class's sections.
func TestGatewayClassStandaloneClaimPorts(t *testing.T) {
	e := testenv.Require(t, env)
	ctx := t.Context()
	if err := testenv.InstallGatewayAPI(e.Config); err != nil {
		t.Fatal(err)
	}
	class := []byte("apiVersion: listeners.stackable.tech/v1alpha1\nkind: ListenerClass\nmetadata: {name: gw-pod}\nspec: {serviceType: ClusterIP, hostname: {template: \"{listener}.{namespace}.gw.test\"}, gateway: {parentRefs: [{name: shared, namespace: gw-system, sectionName: tls}, {name: shared, namespace: gw-system, sectionName: admin}]}}\n")
	if out, err := e.Kubectl(ctx, class, "apply", "-f", "-"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	t.Cleanup(func() { _, _ = e.Kubectl(ctx, nil, "delete", "listenerclass", "gw-pod") })
	ns := e.Namespace(t, ctx, "gwp-")
	claim := func(name string, annotations map[string]string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: annotations},
			Spec: corev1.PersistentVolumeClaimSpec{
				StorageClassName: ptr(v1alpha1.StorageClassName),
				AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
				Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1")}},
			},
		}
	}
	// A class that gains a gateway, and loses it again.
	plainClass := []byte("apiVersion: listeners.stackable.tech/v1alpha1\nkind: ListenerClass\nmetadata: {name: gw-pod-later}\nspec: {serviceType: ClusterIP, hostname: {template: \"{listener}.{namespace}.gw.test\"}}\n")
	if out, err := e.Kubectl(ctx, plainClass, "apply", "-f", "-"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	t.Cleanup(func() { _, _ = e.Kubectl(ctx, nil, "delete", "listenerclass", "gw-pod-later") })
	testenv.Create(t, ctx, e.Client,
		claim("broker", map[string]string{v1alpha1.AnnotationListenerClass: "gw-pod"}),
		claim("later", map[string]string{v1alpha1.AnnotationListenerClass: "gw-pod-later"}),
		claim("plain", map[string]string{v1alpha1.AnnotationListenerClass: "cluster-internal"}),
		claim("shared", map[string]string{v1alpha1.AnnotationListenerName: "gateway"}))
	pod := func(claim, ports string) []byte {
		return fmt.Appendf(nil, `apiVersion: v1
kind: Pod
metadata: {name: broker, namespace: %s}
spec:
  containers: [{name: broker, image: x, ports: %s}]
  volumes: [{name: listener, persistentVolumeClaim: {claimName: %s}}]
`, ns, ports, claim)
	}
	const unrouted = `[{name: tls, containerPort: 9093}, {name: metrics, containerPort: 9404}]`
	for _, tc := range []struct {
		name, claim, ports, want string
		denied                   bool
	}{
		{"ports named after the sections", "broker", `[{name: tls, containerPort: 9093}, {name: admin, containerPort: 9094}]`, "created (server dry run)", false},
		{"a port no section routes", "broker", unrouted,
			`spec.containers: Invalid value: "metrics": the container port "metrics" becomes a port of the Listener of claim "broker": ListenerClass gw-pod routes ports through the Gateway listeners (sections) "tls" (Gateway gw-system/shared), "admin" (Gateway gw-system/shared), and none is named "metrics"`, true},
		{"a class without a gateway", "plain", unrouted, "created (server dry run)", false},
		{"a shared Listener", "shared", unrouted, "created (server dry run)", false},
		{"a claim that does not exist yet", "sooner", unrouted, "created (server dry run)", false},
		{"a class without a gateway yet", "later", unrouted, "created (server dry run)", false},
		{"a class that gained a gateway", "later", unrouted, `ListenerClass gw-pod-later routes ports through the Gateway listeners`, true},
		{"a class that lost its gateway", "later", unrouted, "created (server dry run)", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			switch tc.name {
			case "a class that gained a gateway":
				gateway := bytes.Replace(plainClass, []byte(`gw.test"}}`), []byte(`gw.test"}, gateway: {parentRefs: [{name: shared, namespace: gw-system, sectionName: tls}]}}`), 1)
				if out, err := e.Kubectl(ctx, gateway, "apply", "-f", "-"); err != nil {
					t.Fatalf("%v: %s", err, out)
				}
			case "a class that lost its gateway":
				if out, err := e.Kubectl(ctx, nil, "patch", "listenerclass", "gw-pod-later", "--type=json", "-p", `[{"op":"remove","path":"/spec/gateway"}]`); err != nil {
					t.Fatalf("%v: %s", err, out)
				}
			}
			eventually(t, "the pod judged", func() error {
				out, err := e.Kubectl(ctx, pod(tc.claim, tc.ports), "create", "--dry-run=server", "-f", "-")
				if (err != nil) != tc.denied || !strings.Contains(string(out), tc.want) {
					return errorf("kubectl: %v\n%s\nwant denied=%v and: %s", err, out, tc.denied, tc.want)
				}
				return nil
			})
		})
	}
}
