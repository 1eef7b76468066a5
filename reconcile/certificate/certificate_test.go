package certificate

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/listener-operator/listener-operator/reconcile/internal/reconciletest"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

func TestDesiredCertificate(t *testing.T) {
	issuer := func(kind v1alpha1.IssuerKind) *v1alpha1.ListenerClass {
		return &v1alpha1.ListenerClass{Spec: v1alpha1.ListenerClassSpec{Certificate: &v1alpha1.ListenerCertificate{IssuerRef: v1alpha1.ListenerCertificateIssuer{Kind: kind, Name: "ca"}}}}
	}
	svcNames := func(svc string) []string {
		return []string{svc, svc + ".ns", svc + ".ns.svc", svc + ".ns.svc.example.test"}
	}
	for _, tc := range []struct {
		name     string
		listener string
		addrs    []v1alpha1.ListenerIngress
		class    *v1alpha1.ListenerClass
		wantDNS  []string
		wantIPs  []string
		wantKind string
		wantName string
	}{
		{name: "no addresses yet: the Service's names", listener: "web", class: issuer(""),
			wantDNS: svcNames("web"), wantKind: "ClusterIssuer", wantName: "web-listener-tls"},
		{name: "IPs and hostnames, each once, in published order", listener: "web", class: issuer(v1alpha1.IssuerKindIssuer),
			addrs: []v1alpha1.ListenerIngress{
				{Address: "lb.example.test", AddressType: v1alpha1.AddressTypeHostname},
				{Address: "198.51.100.8", AddressType: v1alpha1.AddressTypeIP},
				{Address: "198.51.100.7", AddressType: v1alpha1.AddressTypeIP},
				{Address: "198.51.100.8", AddressType: v1alpha1.AddressTypeIP},
			},
			wantDNS: append([]string{"lb.example.test"}, svcNames("web")...), wantIPs: []string{"198.51.100.8", "198.51.100.7"}, wantKind: "Issuer", wantName: "web-listener-tls"},
		{name: "the ClusterIP hostname is the Service's own name", listener: "web", class: issuer(""),
			addrs:   []v1alpha1.ListenerIngress{{Address: "web.ns.svc.example.test", AddressType: v1alpha1.AddressTypeHostname}},
			wantDNS: []string{"web.ns.svc.example.test", "web", "web.ns", "web.ns.svc"}, wantKind: "ClusterIssuer", wantName: "web-listener-tls"},
		{name: "a name that is no Service name", listener: "my.listener", class: issuer(""),
			wantDNS: svcNames("my-listener-376a02dd91"), wantKind: "ClusterIssuer", wantName: "my-listener-376a02dd91-listener-tls"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Name: tc.listener, Namespace: "ns", UID: "u1"}, Status: v1alpha1.ListenerStatus{IngressAddresses: tc.addrs}}
			got := desiredCertificate(l, tc.class, "example.test")
			if !reflect.DeepEqual(got.Spec.DNSNames, tc.wantDNS) || !reflect.DeepEqual(got.Spec.IPAddresses, tc.wantIPs) {
				t.Errorf("dnsNames %v, ipAddresses %v; want %v, %v", got.Spec.DNSNames, got.Spec.IPAddresses, tc.wantDNS, tc.wantIPs)
			}
			wantRef := cmmeta.IssuerReference{Group: "cert-manager.io", Kind: tc.wantKind, Name: "ca"}
			if got.Spec.IssuerRef != wantRef || got.Name != tc.wantName || got.Spec.SecretName != tc.wantName || got.Namespace != "ns" {
				t.Errorf("certificate %s/%s secret %s issuer %+v; want %s, issuer %+v", got.Namespace, got.Name, got.Spec.SecretName, got.Spec.IssuerRef, tc.wantName, wantRef)
			}
			if ref := metav1.GetControllerOf(got); ref == nil || ref.UID != "u1" || ref.Kind != "Listener" {
				t.Errorf("controller %+v, want the Listener", ref)
			}
		})
	}
}

// waitCertificate waits until the Listener's Certificate names exactly
// dnsNames and ips.
func waitCertificate(t *testing.T, c client.Client, ns, listener string, dnsNames, ips []string) *cmv1.Certificate {
	t.Helper()
	cert := &cmv1.Certificate{}
	testenv.Converges(t, "certificate of "+listener, func() error {
		if err := c.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: names.CertificateName(listener)}, cert); err != nil {
			return err
		}
		if !reflect.DeepEqual(cert.Spec.DNSNames, dnsNames) || !reflect.DeepEqual(cert.Spec.IPAddresses, ips) {
			return fmt.Errorf("dnsNames %v, ipAddresses %v; want %v, %v", cert.Spec.DNSNames, cert.Spec.IPAddresses, dnsNames, ips)
		}
		return nil
	})
	return cert
}

func TestCertificateFollowsAddresses(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	svcNames := func(svc string) []string {
		return []string{svc, svc + "." + ns, svc + "." + ns + ".svc", svc + "." + ns + ".svc.example.test"}
	}

	// A LoadBalancer Listener: the certificate follows its ingress.
	lbClass := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{
		ServiceType:                   v1alpha1.ServiceTypeLoadBalancer,
		LoadBalancerAllocateNodePorts: ptr.To(false),
		Certificate:                   &v1alpha1.ListenerCertificate{IssuerRef: v1alpha1.ListenerCertificateIssuer{Name: "listeners-ca"}},
	})
	testenv.Create(t, ctx, c, reconciletest.Listener(ns, "lb", lbClass.Name, reconciletest.Port("tls", 443)))
	l := reconciletest.WaitStatus(t, ctx, c, ns, "lb", func(l *v1alpha1.Listener) error {
		if l.Status.CertificateSecretName != "lb-listener-tls" {
			return fmt.Errorf("status.certificateSecretName %q, want lb-listener-tls", l.Status.CertificateSecretName)
		}
		return nil
	})
	cert := waitCertificate(t, c, ns, "lb", svcNames("lb"), nil)
	waitCertificateCondition(t, c, ns, "lb", metav1.ConditionTrue, v1alpha1.ReasonCertificateManaged)
	if ref := metav1.GetControllerOf(cert); ref == nil || ref.UID != l.UID {
		t.Errorf("certificate controller %+v, want Listener lb (%s)", ref, l.UID)
	}
	if cert.Spec.SecretName != "lb-listener-tls" || cert.Spec.IssuerRef != (cmmeta.IssuerReference{Group: "cert-manager.io", Kind: "ClusterIssuer", Name: "listeners-ca"}) {
		t.Errorf("certificate secret %s issuer %+v", cert.Spec.SecretName, cert.Spec.IssuerRef)
	}
	svc := reconciletest.GetService(t, ctx, c, ns, "lb", nil)
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "198.51.100.7"}}
	if err := c.Status().Update(ctx, svc); err != nil {
		t.Fatal(err)
	}
	waitCertificate(t, c, ns, "lb", svcNames("lb"), []string{"198.51.100.7"})
	// The load balancer moves to a hostname and another IP.
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{Hostname: "lb.example.test"}, {IP: "198.51.100.9"}}
	if err := c.Status().Update(ctx, svc); err != nil {
		t.Fatal(err)
	}
	waitCertificate(t, c, ns, "lb", append([]string{"lb.example.test"}, svcNames("lb")...), []string{"198.51.100.9"})
	reconciletest.WaitEvent(t, ctx, c, ns, "lb", EventCertificateUpdated)

	// A NodePort Listener with a namespaced Issuer: the certificate follows
	// its node's address.
	n := reconciletest.Node(t, ctx, c, ns+"-n1", corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.3.0.1"})
	npClass := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{
		ServiceType: v1alpha1.ServiceTypeNodePort,
		Certificate: &v1alpha1.ListenerCertificate{IssuerRef: v1alpha1.ListenerCertificateIssuer{Kind: v1alpha1.IssuerKindIssuer, Name: "team-ca"}},
	})
	npClaim := reconciletest.ListenerClaim(ns, "np-0", map[string]string{v1alpha1.AnnotationListenerName: "np"})
	testenv.Create(t, ctx, c, reconciletest.Listener(ns, "np", npClass.Name, reconciletest.Port("tls", 443)), npClaim)
	reconciletest.ServingPod(t, ctx, c, ns, "np-0", n.Name, true, npClaim.Name)
	cert = waitCertificate(t, c, ns, "np", svcNames("np"), []string{"10.3.0.1"})
	if cert.Spec.IssuerRef.Kind != "Issuer" || cert.Spec.IssuerRef.Name != "team-ca" {
		t.Errorf("issuer %+v, want the Issuer team-ca of the Listener's namespace", cert.Spec.IssuerRef)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(n), n); err != nil {
		t.Fatal(err)
	}
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.3.0.11"}}
	if err := c.Status().Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	waitCertificate(t, c, ns, "np", svcNames("np"), []string{"10.3.0.11"})

	// The class stops asking: the Certificate goes, and so does the name.
	if err := c.Get(ctx, client.ObjectKeyFromObject(npClass), npClass); err != nil {
		t.Fatal(err)
	}
	npClass.Spec.Certificate = nil
	if err := c.Update(ctx, npClass); err != nil {
		t.Fatal(err)
	}
	testenv.Converges(t, "certificate of np deleted", func() error {
		err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: names.CertificateName("np")}, &cmv1.Certificate{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("get: %v, want NotFound", err)
		}
		return nil
	})
	reconciletest.WaitStatus(t, ctx, c, ns, "np", func(l *v1alpha1.Listener) error {
		if l.Status.CertificateSecretName != "" {
			return fmt.Errorf("status.certificateSecretName %q, want none", l.Status.CertificateSecretName)
		}
		if cond := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionCertificateManaged); cond != nil {
			return fmt.Errorf("condition %+v, want none once the class asks for no certificate", cond)
		}
		return nil
	})
}

// waitCertificateCondition waits until the Listener's CertificateManaged
// condition has status and reason.
func waitCertificateCondition(t *testing.T, c client.Client, ns, listener string, status metav1.ConditionStatus, reason string) *metav1.Condition {
	t.Helper()
	var cond *metav1.Condition
	reconciletest.WaitStatus(t, t.Context(), c, ns, listener, func(l *v1alpha1.Listener) error {
		cond = meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionCertificateManaged)
		if cond == nil || cond.Status != status || cond.Reason != reason {
			return fmt.Errorf("condition %s %+v, want %s %s", v1alpha1.ConditionCertificateManaged, cond, status, reason)
		}
		return nil
	})
	return cond
}

func TestForeignCertificateIsLeftAlone(t *testing.T) {
	e, ctx, ns := reconciletest.Setup(t)
	c := e.Client
	class := reconciletest.NewClass(t, ctx, c, v1alpha1.ListenerClassSpec{
		ServiceType: v1alpha1.ServiceTypeClusterIP,
		Certificate: &v1alpha1.ListenerCertificate{IssuerRef: v1alpha1.ListenerCertificateIssuer{Name: "listeners-ca"}},
	})
	mine := &cmv1.Certificate{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: names.CertificateName("web")},
		Spec:       cmv1.CertificateSpec{SecretName: "mine", DNSNames: []string{"mine.example.test"}, IssuerRef: cmmeta.IssuerReference{Name: "other"}},
	}
	testenv.Create(t, ctx, c, mine, reconciletest.Listener(ns, "web", class.Name, reconciletest.Port("http", 80)))
	reconciletest.WaitEvent(t, ctx, c, ns, "web", EventCertificateConflict)
	if cond := waitCertificateCondition(t, c, ns, "web", metav1.ConditionFalse, v1alpha1.ReasonCertificateConflict); !strings.Contains(cond.Message, "delete or rename it") {
		t.Errorf("condition message %q, want the fix", cond.Message)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(mine), mine); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(mine.Spec.DNSNames, []string{"mine.example.test"}) || mine.Spec.SecretName != "mine" {
		t.Errorf("the user's Certificate was changed: %+v", mine.Spec)
	}
}

// TestCertificatesWithoutCertManager: without cert-manager's CRDs the
// controller says so on the Listener (condition and one event) and looks
// again after certManagerRecheck, with one API call per look whatever the
// number of Listeners; once the CRDs are there it makes the Certificate,
// without a restart.
func TestCertificatesWithoutCertManager(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := cmv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	withCert := &v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{Name: "tls"}, Spec: v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP,
		Certificate: &v1alpha1.ListenerCertificate{IssuerRef: v1alpha1.ListenerCertificateIssuer{Kind: v1alpha1.IssuerKindClusterIssuer, Name: "ca"}}}}
	plain := &v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{Name: "plain"}, Spec: v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(withCert, plain,
		reconciletest.Listener("ns", "a", "tls"), reconciletest.Listener("ns", "a2", "tls"), reconciletest.Listener("ns", "b", "plain")).
		WithStatusSubresource(&v1alpha1.Listener{}).Build()
	certGets, installed := 0, false
	live := interceptor.NewClient(fake.NewClientBuilder().WithScheme(scheme).Build(), interceptor.Funcs{
		Get: func(ctx context.Context, cl client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			certGets++
			if installed {
				return apierrors.NewNotFound(cmv1.SchemeGroupVersion.WithResource("certificates").GroupResource(), key.Name)
			}
			return &meta.NoKindMatchError{GroupKind: cmv1.SchemeGroupVersion.WithKind("Certificate").GroupKind(), SearchedVersions: []string{"v1"}}
		},
	})
	now := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	recorder := events.NewFakeRecorder(10)
	r := &certificateReconciler{client: c, live: live, recorder: recorder, clusterDomain: "example.test", now: func() time.Time { return now }}
	reconcile := func(name string) ctrl.Result {
		t.Helper()
		res, err := r.Reconcile(t.Context(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: name}})
		if err != nil {
			t.Fatalf("reconcile %s: %v", name, err)
		}
		return res
	}
	condition := func(name string) *metav1.Condition {
		t.Helper()
		l := &v1alpha1.Listener{}
		if err := c.Get(t.Context(), types.NamespacedName{Namespace: "ns", Name: name}, l); err != nil {
			t.Fatal(err)
		}
		return meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionCertificateManaged)
	}

	for _, name := range []string{"a", "a2", "b", "a"} {
		if res := reconcile(name); name != "b" && res.RequeueAfter != certManagerRecheck {
			t.Errorf("reconcile %s: %+v; want a look again after %s", name, res, certManagerRecheck)
		}
	}
	if certGets != 1 {
		t.Errorf("%d reads of Certificates, want 1 while cert-manager is known missing", certGets)
	}
	cond := condition("a")
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != v1alpha1.ReasonCertManagerMissing ||
		!strings.Contains(cond.Message, "ListenerClass tls asks for a certificate") || !strings.Contains(cond.Message, "cert-manager is not installed") {
		t.Errorf("condition %+v, want CertificateManaged False CertManagerMissing naming the class", cond)
	}
	if cond := condition("b"); cond != nil {
		t.Errorf("Listener of a class without certificates has condition %+v", cond)
	}
	if n := len(recorder.Events); n != 2 {
		t.Errorf("%d events, want one %s per Listener of class tls", n, EventCertificateUnavailable)
	}
	for len(recorder.Events) > 0 {
		if ev := <-recorder.Events; !strings.Contains(ev, EventCertificateUnavailable) || !strings.Contains(ev, "cert-manager is not installed") {
			t.Errorf("event %q, want %s saying cert-manager is not installed", ev, EventCertificateUnavailable)
		}
	}

	// cert-manager is installed; the next look finds it.
	installed = true
	now = now.Add(certManagerRecheck)
	reconcile("a")
	cert := &cmv1.Certificate{}
	if err := c.Get(t.Context(), types.NamespacedName{Namespace: "ns", Name: "a-listener-tls"}, cert); err != nil {
		t.Fatalf("no Certificate once cert-manager is installed: %v", err)
	}
	if cond := condition("a"); cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != v1alpha1.ReasonCertificateManaged {
		t.Errorf("condition %+v, want CertificateManaged True", cond)
	}
}
