package webhooks

import (
	"strings"
	"testing"

	"github.com/listener-operator/listener-operator/internal/testenv"
)

// TestTenantMetadataAtAdmission: what a tenant writes that reaches a
// Listener's Service is judged by the class's allow-list when it is
// applied, and when only the labels change later (issue 37, parts 1, 3, 4).
func TestTenantMetadataAtAdmission(t *testing.T) {
	e := testenv.Require(t, env)
	ns := namespace(t, nil)
	for _, tc := range []struct {
		name, manifest string
		denied         bool
		want           []string
	}{
		{"exposure labels on the Listener: admitted, warned", `
apiVersion: listeners.stackable.tech/v1alpha1
kind: Listener
metadata: {name: labelled, namespace: NS, labels: {service.kubernetes.io/service-proxy-name: elsewhere, lbipam.cilium.io/pool: public, app: web}}
spec: {className: cluster-internal, ports: [{name: http, port: 80}]}`, false, []string{
			"Warning: the Listener's label lbipam.cilium.io/pool does not reach its Service: it is an exposure label",
			"Warning: the Listener's label service.kubernetes.io/service-proxy-name does not reach its Service",
		}},
		{"an annotation off the allow-list in an override: refused", `
apiVersion: listeners.stackable.tech/v1alpha1
kind: Listener
metadata: {name: nlb, namespace: NS}
spec:
  className: external-unstable
  ports: [{name: http, port: 80}]
  objectOverrides:
  - {apiVersion: v1, kind: Service, metadata: {name: nlb, annotations: {lb.example.com/tier: premium}}}`, true, []string{
			`spec.objectOverrides[0].metadata.annotations[lb.example.com/tier]: Forbidden: metadata.annotations[lb.example.com/tier] is not on the annotations ListenerClass "external-unstable" allows tenants to set`,
			`spec.tenantMetadata.annotations of the class`,
		}},
		{"ports added by an override: refused", `
apiVersion: listeners.stackable.tech/v1alpha1
kind: Listener
metadata: {name: ports, namespace: NS}
spec:
  className: external-unstable
  ports: [{name: http, port: 80}]
  objectOverrides:
  - {apiVersion: v1, kind: Service, metadata: {name: ports}, spec: {ports: [{name: http, port: 80}, {name: extra, port: 81}]}}`, true, []string{
			`spec.objectOverrides[0].spec.ports: Forbidden: spec.ports of a Listener's Service are exactly the Listener's spec.ports (http), and the override adds 1 port(s) (extra)`,
		}},
		{"a claim's labels that its Listener's Service will not get: admitted, warned", `
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: kafka-0-listener
  namespace: NS
  labels: {app: kafka, lbipam.cilium.io/pool: public}
  annotations: {listeners.stackable.tech/listener-class: cluster-internal}
spec: {storageClassName: listeners.stackable.tech, accessModes: [ReadWriteMany], resources: {requests: {storage: "1"}}}`, false, []string{
			"Warning: the claim's labels go to its Listener: the Listener's label lbipam.cilium.io/pool does not reach its Service: it is an exposure label",
		}},
		{"a pattern that is not one: refused", `
apiVersion: listeners.stackable.tech/v1alpha1
kind: ListenerClass
metadata: {name: bad-pattern-NS}
spec: {serviceType: ClusterIP, tenantMetadata: {labels: ["*"]}}`, true, []string{
			`spec.tenantMetadata.labels[0]: Invalid value: "*"`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := e.Kubectl(t.Context(), []byte(strings.ReplaceAll(tc.manifest, "NS", ns)), "apply", "-f", "-")
			if tc.denied != (err != nil) {
				t.Fatalf("kubectl apply: err %v (want denied: %v): %s", err, tc.denied, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("kubectl output:\n%s\nlacks: %s", out, w)
				}
			}
		})
	}

	// A label added later is judged too: the match condition lets label
	// updates through to the webhook.
	out, err := e.Kubectl(t.Context(), nil, "label", "-n", ns, "listener", "labelled", "metallb.io/pool=x", "team=a")
	if err != nil {
		t.Fatalf("kubectl label: %v: %s", err, out)
	}
	if !strings.Contains(out, "Warning: the Listener's label metallb.io/pool does not reach its Service") {
		t.Errorf("kubectl label printed no warning for a label off the allow-list:\n%s", out)
	}
}
