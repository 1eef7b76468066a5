//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// kubeletClusterDomain is the cluster domain the kubelets give pods (the
// local cluster's CLUSTER_DOMAIN; `make e2e` sets one other than
// cluster.local), read from a node's configz through the API server.
func kubeletClusterDomain(t *testing.T, ctx context.Context) string {
	t.Helper()
	var nodes corev1.NodeList
	if err := k8s.client.List(ctx, &nodes); err != nil || len(nodes.Items) == 0 {
		t.Fatalf("list nodes: %v (%d)", err, len(nodes.Items))
	}
	out := k8s.kubectlOK(t, ctx, "", "get", "--raw", "/api/v1/nodes/"+nodes.Items[0].Name+"/proxy/configz")
	var z struct {
		KubeletConfig struct {
			ClusterDomain string `json:"clusterDomain"`
		} `json:"kubeletconfig"`
	}
	if err := json.Unmarshal([]byte(out), &z); err != nil || z.KubeletConfig.ClusterDomain == "" {
		t.Fatalf("kubelet configz %q: %v", out, err)
	}
	return z.KubeletConfig.ClusterDomain
}

// The operator, deployed without --cluster-domain and without
// KUBERNETES_CLUSTER_DOMAIN, publishes a ClusterIP Listener's hostname in
// the domain the kubelets were configured with (it reads its pod's
// resolv.conf search list; it may not read the kubelet API).
func TestClusterDomainDetected(t *testing.T) {
	ctx := t.Context()
	domain := kubeletClusterDomain(t, ctx)
	t.Logf("kubelet clusterDomain: %s", domain)
	ensureClass(t, ctx, listenerClass("cluster-internal", v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP}))
	ns := namespace(t, ctx, "e2e-domain")
	l := &v1alpha1.Listener{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: v1alpha1.ListenerSpec{
			ClassName: ptr.To("cluster-internal"),
			Ports:     []v1alpha1.ListenerPort{{Name: "http", Port: 8080, Protocol: corev1.ProtocolTCP}},
		},
	}
	if err := k8s.client.Create(ctx, l); err != nil {
		t.Fatalf("create Listener: %v", err)
	}
	eventually(t, ctx, time.Minute, "the Listener publishes its Service's DNS name", func(ctx context.Context) (bool, string) {
		var got v1alpha1.Listener
		if err := k8s.client.Get(ctx, client.ObjectKeyFromObject(l), &got); err != nil {
			return false, err.Error()
		}
		if got.Status.ServiceName == "" || len(got.Status.IngressAddresses) == 0 {
			return false, fmt.Sprintf("status %+v", got.Status)
		}
		want := fmt.Sprintf("%s.%s.svc.%s", got.Status.ServiceName, ns, domain)
		addr := got.Status.IngressAddresses[0]
		return addr.Address == want && addr.AddressType == v1alpha1.AddressTypeHostname,
			fmt.Sprintf("published %s (%s), want %s", addr.Address, addr.AddressType, want)
	})
	// Nothing in the deployed operator names the domain: it was detected.
	out := k8s.kubectlOK(t, ctx, "", "-n", operatorNamespace, "get", "deploy", "listener-operator", "-o", "jsonpath={.spec.template.spec.containers[*].args} {.spec.template.spec.containers[*].env}")
	if strings.Contains(out, "cluster-domain") || strings.Contains(out, "KUBERNETES_CLUSTER_DOMAIN") {
		t.Errorf("the deployed operator is told the domain (%s): this test checks detection", out)
	}
}
