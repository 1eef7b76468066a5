//go:build e2e

package e2e

import (
	"context"
	"crypto/x509"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// certManagerNoticed bounds how long the operator may take to notice
// cert-manager's CRDs installed after it started (it looks again every
// 15 s while a class asks for certificates and they are missing), plus the
// Certificate's creation.
const certManagerNoticed = 90 * time.Second

// Issue 25: a class with spec.certificate on a cluster without cert-manager.
// The Listener says cert-manager is missing; its CRDs are installed while
// the operator runs, and without a restart it makes a Certificate that
// names exactly the Listener's address and its Service's in-cluster names;
// a signer standing in for cert-manager issues it into the Secret the
// Listener publishes, and the pod that mounts it reads a certificate for
// the address it reads from /stackable/listener. The load balancer's
// address changes: the Certificate follows and is issued again.
func TestCertificateNamesListenerAddresses(t *testing.T) {
	ctx := t.Context()
	cm := certManagerClient(t)
	// The operator must find cert-manager missing first (a CRD left by an
	// earlier run on a kept cluster is removed).
	removeCertManagerCRDs(t, ctx)
	const class, issuer = "e2e-certificate", "e2e-test-signer"
	ensureClass(t, ctx, listenerClass(class, v1alpha1.ListenerClassSpec{
		ServiceType: v1alpha1.ServiceTypeLoadBalancer, PreferredAddressType: v1alpha1.PreferredAddressIP,
		Certificate: &v1alpha1.ListenerCertificate{IssuerRef: v1alpha1.ListenerCertificateIssuer{Kind: v1alpha1.IssuerKindClusterIssuer, Name: issuer}},
	}))
	ns := namespace(t, ctx, "e2e-cert")
	const listenerName, secretName = "listener-tls-0", "listener-tls-0-listener-tls"
	sts := demoStatefulSet(ns, "tls", class, 1)
	pod := &sts.Spec.Template.Spec
	pod.Volumes = append(pod.Volumes, corev1.Volume{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secretName}}})
	pod.Containers[0].VolumeMounts = append(pod.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "tls", MountPath: "/tls", ReadOnly: true})
	if err := k8s.client.Create(ctx, sts); err != nil {
		t.Fatalf("create StatefulSet: %v", err)
	}

	var l v1alpha1.Listener
	eventually(t, ctx, podTimeout, "the replica's Listener says cert-manager is missing", func(ctx context.Context) (bool, string) {
		if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: listenerName}, &l); err != nil {
			return false, err.Error()
		}
		cond := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionCertificateManaged)
		if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != v1alpha1.ReasonCertManagerMissing {
			return false, fmt.Sprintf("condition %+v", cond)
		}
		return l.Status.CertificateSecretName == secretName, fmt.Sprintf("status.certificateSecretName %q, want %s", l.Status.CertificateSecretName, secretName)
	})
	if msg := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionCertificateManaged).Message; !strings.Contains(msg, "ListenerClass "+class) || !strings.Contains(msg, "cert-manager is not installed") {
		t.Errorf("condition message %q, want it to name the class and say cert-manager is not installed", msg)
	}
	svc := listenerService(t, ctx, ns, "tls-0")
	setIngress := func(ip string) {
		t.Helper()
		patch := client.RawPatch(types.MergePatchType, []byte(`{"status":{"loadBalancer":{"ingress":[{"ip":"`+ip+`"}]}}}`))
		if err := k8s.client.Status().Patch(ctx, svc, patch); err != nil {
			t.Fatalf("set the Service's load balancer ingress: %v", err)
		}
	}
	// Addresses in the cluster's pod subnet but outside the range pods get;
	// nothing is sent there.
	setIngress("10.88.0.240")

	installCertManagerCRDs(t, ctx)
	startSigner(t, ctx, cm, ns, issuer)
	domain := kubeletClusterDomain(t, ctx)
	svcNames := []string{svc.Name, svc.Name + "." + ns, svc.Name + "." + ns + ".svc", svc.Name + "." + ns + ".svc." + domain}
	waitCertificate := func(what string, timeout time.Duration, ips []string) {
		t.Helper()
		eventually(t, ctx, timeout, what, func(ctx context.Context) (bool, string) {
			var cert cmv1.Certificate
			if err := cm.Get(ctx, client.ObjectKey{Namespace: ns, Name: secretName}, &cert); err != nil {
				return false, err.Error()
			}
			if cert.Spec.SecretName != secretName || !slices.Equal(cert.Spec.DNSNames, svcNames) || !slices.Equal(cert.Spec.IPAddresses, ips) {
				return false, fmt.Sprintf("secretName %s, dnsNames %v, ipAddresses %v; want %s, %v, %v", cert.Spec.SecretName, cert.Spec.DNSNames, cert.Spec.IPAddresses, secretName, svcNames, ips)
			}
			return true, ""
		})
	}
	waitCertificate("the operator notices cert-manager and makes the Certificate", certManagerNoticed, []string{"10.88.0.240"})
	eventually(t, ctx, podTimeout, "the Listener says its Certificate is managed", func(ctx context.Context) (bool, string) {
		if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: listenerName}, &l); err != nil {
			return false, err.Error()
		}
		cond := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionCertificateManaged)
		return cond != nil && cond.Status == metav1.ConditionTrue, fmt.Sprintf("condition %+v", cond)
	})

	// The pod mounts the Secret the Listener publishes and reads a
	// certificate for the address it reads from its listener volume.
	podsReady(t, ctx, ns, "tls", 1, podTimeout)
	addr, _ := defaultAddress(t, tree(t, ctx, ns, "tls-0"))
	if addr != "10.88.0.240" {
		t.Errorf("tls-0 reads %s as its address, want the load balancer's 10.88.0.240", addr)
	}
	leaf, err := parseLeaf([]byte(k8s.kubectlOK(t, ctx, "", "exec", "-n", ns, "tls-0", "-c", "hello", "--", "cat", "/tls/tls.crt")))
	if err != nil {
		t.Fatalf("the pod's /tls/tls.crt: %v", err)
	}
	if err := leaf.VerifyHostname(addr); err != nil {
		t.Errorf("the pod's certificate (SANs %v) does not name the address it reads: %v", sans(leaf), err)
	}
	if want := append(slices.Clone(svcNames), "10.88.0.240"); !slices.Equal(sans(leaf), want) {
		t.Errorf("the pod's certificate names %v, want exactly %v", sans(leaf), want)
	}
	caPEM := k8s.kubectlOK(t, ctx, "", "exec", "-n", ns, "tls-0", "-c", "hello", "--", "cat", "/tls/ca.crt")
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM([]byte(caPEM)) {
		t.Fatalf("the pod's /tls/ca.crt holds no certificate")
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: svcNames[3]}); err != nil {
		t.Errorf("the pod's certificate does not verify with its ca.crt for %s: %v", svcNames[3], err)
	}

	// The load balancer's address changes: the Certificate follows and the
	// signer issues it again.
	setIngress("10.88.0.241")
	waitCertificate("the Certificate follows the new address", podTimeout, []string{"10.88.0.241"})
	eventually(t, ctx, podTimeout, "the Secret holds a certificate for the new address", func(ctx context.Context) (bool, string) {
		var s corev1.Secret
		if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: secretName}, &s); err != nil {
			return false, err.Error()
		}
		leaf, err := parseLeaf(s.Data[corev1.TLSCertKey])
		if err != nil {
			return false, err.Error()
		}
		return leaf.VerifyHostname("10.88.0.241") == nil && leaf.VerifyHostname("10.88.0.240") != nil, fmt.Sprintf("SANs %v", sans(leaf))
	})
}
