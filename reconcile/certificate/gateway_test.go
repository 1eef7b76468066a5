package certificate

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listener-operator/listener-operator/api/addresses"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// TestGatewayCertificate: the Certificate of a gateway class's Listener
// names the SNI name clients ask the Gateway for (what the pod must serve
// TLS with, since the Gateway passes the connection through), first, and
// no address of the Gateway itself.
func TestGatewayCertificate(t *testing.T) {
	host := "broker-0.kafka.gw.example.com"
	l := &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: "kafka", Name: "broker-0", UID: "u"}}
	l.Status.IngressAddresses = addresses.GatewayIngress(host, map[string]int32{"tls": 9443})
	class := &v1alpha1.ListenerClass{Spec: v1alpha1.ListenerClassSpec{
		ServiceType: v1alpha1.ServiceTypeClusterIP,
		Hostname:    &v1alpha1.HostnamePolicy{Template: "{listener}.{namespace}.gw.example.com"},
		Gateway:     &v1alpha1.ListenerGateway{ParentRefs: []v1alpha1.GatewayParentRef{{Name: "shared", Namespace: "gw", SectionName: "tls"}}},
		Certificate: &v1alpha1.ListenerCertificate{IssuerRef: v1alpha1.ListenerCertificateIssuer{Name: "ca"}},
	}}
	c := desiredCertificate(l, class, "cluster.local")
	if len(c.Spec.DNSNames) == 0 || c.Spec.DNSNames[0] != host {
		t.Fatalf("dnsNames %v, want %s first", c.Spec.DNSNames, host)
	}
	if !slices.Contains(c.Spec.DNSNames, "broker-0.kafka.svc.cluster.local") || len(c.Spec.IPAddresses) != 0 {
		t.Errorf("dnsNames %v ips %v, want the Service's in-cluster name too and no IP", c.Spec.DNSNames, c.Spec.IPAddresses)
	}
}
