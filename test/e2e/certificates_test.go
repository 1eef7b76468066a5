//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
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

// Issue 25 and 47: a class with spec.certificate names the CA ClusterIssuer
// of the cluster's cert-manager. The operator makes a Certificate that names
// exactly the Listener's address and its Service's in-cluster names;
// cert-manager issues it into the Secret the Listener publishes; the pod
// mounts it and serves TLS with it, and a client that trusts only the CA
// reaches the pod and verifies the certificate for the address the pod reads
// from /stackable/listener. The load balancer's address changes: the
// Certificate follows and cert-manager issues it again. (cert-manager
// installed after the operator, noticed without a restart, is
// reconcile/certificate's TestCertificatesWithoutCertManager.)
func TestCertificateNamesListenerAddresses(t *testing.T) {
	ctx := t.Context()
	requireCertManager(t, ctx)
	cm := certManagerClient(t)
	roots := ensureListenerCA(t, ctx, cm)
	const class = "e2e-certificate"
	ensureClass(t, ctx, listenerClass(class, v1alpha1.ListenerClassSpec{
		ServiceType: v1alpha1.ServiceTypeLoadBalancer, PreferredAddressType: v1alpha1.PreferredAddressIP,
		Certificate: &v1alpha1.ListenerCertificate{IssuerRef: v1alpha1.ListenerCertificateIssuer{Kind: v1alpha1.IssuerKindClusterIssuer, Name: listenerCA}},
	}))
	ns := namespace(t, ctx, "e2e-cert")
	const listenerName, secretName = "listener-tls-0", "listener-tls-0-listener-tls"
	sts := demoStatefulSet(ns, "tls", class, 1)
	pod := &sts.Spec.Template.Spec
	pod.Volumes = append(pod.Volumes, corev1.Volume{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secretName}}})
	pod.Containers[0].VolumeMounts = append(pod.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "tls", MountPath: "/tls", ReadOnly: true})
	pod.Containers[0].Args = []string{"-listen", ":8080", "-tls-dir", "/tls"}
	if err := k8s.client.Create(ctx, sts); err != nil {
		t.Fatalf("create StatefulSet: %v", err)
	}

	eventually(t, ctx, podTimeout, "the replica's Listener has its Service", func(ctx context.Context) (bool, string) {
		var l v1alpha1.Listener
		if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: listenerName}, &l); err != nil {
			return false, err.Error()
		}
		return l.Status.ServiceName != "", "no status.serviceName yet"
	})
	svc := listenerService(t, ctx, ns, "tls-0")
	setIngress := func(ip string) {
		t.Helper()
		patch := client.RawPatch(types.MergePatchType, []byte(`{"status":{"loadBalancer":{"ingress":[{"ip":"`+ip+`"}]}}}`))
		if err := k8s.client.Status().Patch(ctx, svc, patch); err != nil {
			t.Fatalf("set the Service's load balancer ingress: %v", err)
		}
	}
	// Hand-made addresses (hack/cluster/settings.sh: given to no pod and
	// outside MetalLB's pool; the Service has no loadBalancerClass, so
	// MetalLB leaves its status alone); nothing is sent there.
	setIngress("10.88.0.224")

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
	waitCertificate("the operator makes the Certificate", podTimeout, []string{"10.88.0.224"})
	var l v1alpha1.Listener
	eventually(t, ctx, podTimeout, "the Listener says its Certificate is managed", func(ctx context.Context) (bool, string) {
		if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: listenerName}, &l); err != nil {
			return false, err.Error()
		}
		cond := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionCertificateManaged)
		if cond == nil || cond.Status != metav1.ConditionTrue {
			return false, fmt.Sprintf("condition %+v", cond)
		}
		return l.Status.CertificateSecretName == secretName, fmt.Sprintf("status.certificateSecretName %q, want %s", l.Status.CertificateSecretName, secretName)
	})
	eventually(t, ctx, podTimeout, "cert-manager issues the Certificate", func(ctx context.Context) (bool, string) {
		c, why := certificateReady(ctx, cm, ns, secretName)
		return c != nil, why
	})

	// The pod mounts the Secret the Listener publishes and reads a
	// certificate for the address it reads from its listener volume.
	podsReady(t, ctx, ns, "tls", 1, podTimeout)
	addr, _ := defaultAddress(t, tree(t, ctx, ns, "tls-0"))
	if addr != "10.88.0.224" {
		t.Errorf("tls-0 reads %s as its address, want the load balancer's 10.88.0.224", addr)
	}
	leaf, err := parseLeaf([]byte(k8s.kubectlOK(t, ctx, "", "exec", "-n", ns, "tls-0", "-c", "hello", "--", "cat", "/tls/tls.crt")))
	if err != nil {
		t.Fatalf("the pod's /tls/tls.crt: %v", err)
	}
	if err := leaf.VerifyHostname(addr); err != nil {
		t.Errorf("the pod's certificate (SANs %v) does not name the address it reads: %v", sans(leaf), err)
	}
	if want := append(slices.Clone(svcNames), "10.88.0.224"); !slices.Equal(sans(leaf), want) {
		t.Errorf("the pod's certificate names %v, want exactly %v", sans(leaf), want)
	}
	// A client that trusts only the CA reaches the pod (through its
	// Service's cluster IP: the load balancer address is not routed here)
	// and verifies the certificate for the address the pod reads.
	servesTLS(t, ctx, roots, net.JoinHostPort(svc.Spec.ClusterIP, "8080"), addr, "tls-0")

	// The load balancer's address changes: the Certificate follows and
	// cert-manager issues it again; the pod serves it.
	setIngress("10.88.0.225")
	waitCertificate("the Certificate follows the new address", podTimeout, []string{"10.88.0.225"})
	eventually(t, ctx, podTimeout, "the Secret holds a certificate for the new address", func(ctx context.Context) (bool, string) {
		var s corev1.Secret
		if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: secretName}, &s); err != nil {
			return false, err.Error()
		}
		leaf, err := parseLeaf(s.Data[corev1.TLSCertKey])
		if err != nil {
			return false, err.Error()
		}
		return leaf.VerifyHostname("10.88.0.225") == nil && leaf.VerifyHostname("10.88.0.224") != nil, fmt.Sprintf("SANs %v", sans(leaf))
	})
	servesTLS(t, ctx, roots, net.JoinHostPort(svc.Spec.ClusterIP, "8080"), "10.88.0.225", "tls-0")
}

// servesTLS waits until a TLS connection to dial, verified against roots
// for name (an IP address or a DNS name), is answered by pod over HTTPS.
func servesTLS(t *testing.T, ctx context.Context, roots *x509.CertPool, dial, name, pod string) {
	t.Helper()
	_, port, err := net.SplitHostPort(dial)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{
		DisableKeepAlives: true,
		TLSClientConfig:   &tls.Config{ServerName: name, RootCAs: roots, MinVersion: tls.VersionTLS12},
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, dial)
		},
	}
	c := &http.Client{Transport: tr, Timeout: 3 * time.Second}
	eventually(t, ctx, 3*time.Minute, fmt.Sprintf("https via %s answered by %s with a certificate for %s", dial, pod, name), func(ctx context.Context) (bool, string) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+net.JoinHostPort(name, port)+"/", nil)
		if err != nil {
			return false, err.Error()
		}
		resp, err := c.Do(req)
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		got := strings.TrimSpace(string(body))
		return err == nil && got == "hello from "+pod, "answered " + got
	})
}
