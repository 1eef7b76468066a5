//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/certs"
	"github.com/listener-operator/listener-operator/internal/metricsscrape"
)

// scraperCache holds the e2e tests' metrics scraper: a token of the service
// account listener-operator-e2e-scraper, bound to the metrics-reader role.
// The account lives in the operator's namespace, which the Helm test deletes
// and makes again: a token of the account that was deleted is refused, so
// the scraper is kept only while the account is the same one (by UID).
var scraperCache struct {
	sync.Mutex
	uid types.UID
	s   *metricsscrape.Scraper
}

const scraperAccount = "listener-operator-e2e-scraper"

// metricsOf reads an operator pod's /metrics as Prometheus does (HTTPS,
// a service account token allowed to get /metrics), from the host, which
// reaches pod IPs over the bridge.
func metricsOf(ctx context.Context, pod *corev1.Pod) (string, error) {
	s, err := scraper(ctx)
	if err != nil {
		return "", err
	}
	return s.Get(ctx, pod.Status.PodIP)
}

// scraper returns the cached scraper while its service account still
// exists, or makes the account and a token anew.
func scraper(ctx context.Context) (*metricsscrape.Scraper, error) {
	scraperCache.Lock()
	defer scraperCache.Unlock()
	var sa corev1.ServiceAccount
	err := k8s.client.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: scraperAccount}, &sa)
	if err == nil && scraperCache.s != nil && sa.UID == scraperCache.uid {
		return scraperCache.s, nil
	}
	s, err := metricsscrape.ForServiceAccount(ctx, k8s.client, operatorNamespace, scraperAccount)
	if err != nil {
		return nil, err
	}
	if err := k8s.client.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: scraperAccount}, &sa); err != nil {
		return nil, fmt.Errorf("read service account %s/%s: %w", operatorNamespace, scraperAccount, err)
	}
	scraperCache.uid, scraperCache.s = sa.UID, s
	return s, nil
}

// TestMetricsNeedAToken: every component (manager replicas, CSI controller,
// node plugins) refuses a scrape without credentials and serves one with
// the token of a service account bound to listener-operator-metrics-reader.
func TestMetricsNeedAToken(t *testing.T) {
	ctx := t.Context()
	var pods corev1.PodList
	if err := k8s.client.List(ctx, &pods, client.InNamespace(operatorNamespace)); err != nil {
		t.Fatal(err)
	}
	anonymous := metricsscrape.New("")
	seen := map[string]bool{}
	for i := range pods.Items {
		p := &pods.Items[i]
		comp := p.Labels["app.kubernetes.io/component"]
		if p.Status.PodIP == "" || p.DeletionTimestamp != nil || (comp != "controller" && comp != "csi-controller" && comp != "csi-node") {
			continue
		}
		seen[comp] = true
		t.Run(p.Name, func(t *testing.T) {
			url := "https://" + p.Status.PodIP + ":8443/metrics"
			if code, body, err := anonymous.Do(ctx, url); err != nil || code != http.StatusUnauthorized {
				t.Errorf("scrape without a token: %d %.100q %v, want 401", code, body, err)
			}
			// Nor over plain HTTP, as before.
			if code, _, err := anonymous.Do(ctx, "http://"+p.Status.PodIP+":8080/metrics"); err == nil {
				t.Errorf("plain HTTP on :8080 answered %d, want nothing listening", code)
			}
			body, err := metricsOf(ctx, p)
			if err != nil {
				t.Fatalf("scrape with the metrics-reader token: %v", err)
			}
			if !strings.Contains(body, "# TYPE rest_client_requests_total") {
				t.Errorf("scrape with the metrics-reader token: no client-go metrics in %.300q", body)
			}
		})
	}
	for _, comp := range []string{"controller", "csi-controller", "csi-node"} {
		if !seen[comp] {
			t.Errorf("no running %s pod in %s", comp, operatorNamespace)
		}
	}
}

// TestForgedReviewLeaksNoNames posts a hand-made AdmissionReview (DELETE of
// a ListenerClass in use, a userInfo of the sender's choosing, no
// credentials) straight to an operator pod's webhook port from the host, as
// any pod could: the denial counts the users and their namespaces and names
// none of them, neither a Listener nor a namespace (issue 37, case 7).
func TestForgedReviewLeaksNoNames(t *testing.T) {
	ctx := t.Context()
	victim := namespace(t, ctx, "victim")
	// Shared by runs (classes are kept), and named apart from the
	// namespace, which the answer must not name.
	class := listenerClass("forged-review", v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP})
	ensureClass(t, ctx, class)
	secret := &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: victim, Name: "secret-name"},
		Spec: v1alpha1.ListenerSpec{ClassName: ptr.To(class.Name), Ports: []v1alpha1.ListenerPort{{Name: "http", Port: 8080, Protocol: corev1.ProtocolTCP}}}}
	if err := k8s.client.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	pods := operatorPods(t, ctx)
	if len(pods) == 0 || pods[0].Status.PodIP == "" {
		t.Fatalf("no running operator pod")
	}
	review := `{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
	  "uid": "00000000-0000-0000-0000-000000000001",
	  "kind": {"group": "listeners.stackable.tech", "version": "v1alpha1", "kind": "ListenerClass"},
	  "resource": {"group": "listeners.stackable.tech", "version": "v1alpha1", "resource": "listenerclasses"},
	  "name": "` + class.Name + `", "operation": "DELETE",
	  "userInfo": {"username": "kubernetes-admin", "groups": ["system:masters"]}}}`
	url := "https://" + pods[0].Status.PodIP + ":9443/validate-listeners-stackable-tech-v1alpha1-listenerclass"
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	eventually(t, ctx, 30*time.Second, "the forged review is denied with counts", func(ctx context.Context) (bool, string) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(review))
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		var out admissionv1.AdmissionReview
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.Response == nil || out.Response.Result == nil {
			return false, fmt.Sprintf("HTTP %d, not an AdmissionReview: %v", resp.StatusCode, err)
		}
		msg := out.Response.Result.Message
		// Earlier runs' namespaces may still be terminating: at least this
		// one's Listener is counted.
		if out.Response.Allowed || !forgedCount.MatchString(msg) {
			return false, "answer: " + msg
		}
		answer, _, _ := strings.Cut(msg, "(list them: ")
		for _, name := range []string{secret.Name, victim} {
			if strings.Contains(answer, name) {
				t.Errorf("the forged review's answer names %s: %s", name, msg)
			}
		}
		return true, ""
	})
}

// forgedCount is the count a class deletion denial gives.
var forgedCount = regexp.MustCompile(`is still used by [1-9][0-9]* Listeners? in [1-9][0-9]* namespaces?; `)

// TestManagerRolesAreNarrow asks the API server, as the manager's service
// account, what it may do: in the self-signed mode patch its own webhook
// configurations and update its certificate Secret, in the cert-manager
// mode neither (cainjector writes the caBundle) but read its serving
// Certificate; no other webhook configuration in either; delete
// listener claims but not other claims, nor running pods (the
// listener-operator-deletes policy); mark listener claims but not label
// other claims (the listener-operator-claim-labels policy); create only
// listener volumes (the listener-operator-volumes policy).
func TestManagerRolesAreNarrow(t *testing.T) {
	ctx := t.Context()
	as := "--as=system:serviceaccount:" + operatorNamespace + ":listener-operator"
	selfSigned, certManager := "yes", "no"
	if operatorCertMode(t, ctx) == certModeCertManager {
		selfSigned, certManager = "no", "yes"
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"patch", "validatingwebhookconfigurations/listener-operator-validating"}, selfSigned},
		{[]string{"patch", "mutatingwebhookconfigurations/listener-operator-mutating"}, selfSigned},
		{[]string{"patch", "validatingwebhookconfigurations/another"}, "no"},
		{[]string{"create", "validatingwebhookconfigurations"}, "no"},
		{[]string{"get", "secrets/another", "-n", operatorNamespace}, "no"},
		{[]string{"update", "secrets/listener-operator-webhook-cert", "-n", operatorNamespace}, selfSigned},
		{[]string{"get", "certificates.cert-manager.io/listener-operator-serving-cert", "-n", operatorNamespace}, certManager},
		// Other Certificates: the manager makes the Listener certificates
		// (spec.certificate) in every namespace, so it may get them; it
		// may neither sign nor force an issuance itself.
		{[]string{"create", "certificaterequests.cert-manager.io", "-n", operatorNamespace}, "no"},
		{[]string{"update", "certificates.cert-manager.io/another", "--subresource=status", "-n", operatorNamespace}, "no"},
		{[]string{"create", "tokenreviews.authentication.k8s.io"}, "yes"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, _, _ := k8s.run(ctx, "", append([]string{"auth", "can-i", as}, tc.args...)...)
			if got := strings.TrimSpace(out); got != tc.want {
				t.Errorf("can-i %v: %q, want %q", tc.args, got, tc.want)
			}
		})
	}
	// RBAC allows delete on every claim and pod; the policy narrows it.
	ns := namespace(t, ctx, "roles")
	other := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"}, Spec: corev1.PersistentVolumeClaimSpec{
		StorageClassName: ptr.To("standard"), AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	if err := k8s.client.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	_, errOut, err := k8s.run(ctx, "", as, "-n", ns, "delete", "pvc", "db", "--dry-run=server")
	if err == nil || !strings.Contains(errOut, "the listener operator may only delete listener claims") {
		t.Errorf("the manager's account deleted claim db (storage class standard): %v %s", err, errOut)
	}
	// RBAC allows patch on every claim; the claim-label policy narrows it
	// to the mark on listener claims.
	_, errOut, err = k8s.run(ctx, "", as, "-n", ns, "label", "pvc", "db", "listeners.stackable.tech/listener-volume=true", "--dry-run=server")
	if err == nil || !strings.Contains(errOut, "the listener operator may only mark listener claims") {
		t.Errorf("the manager's account labelled claim db (storage class standard): %v %s", err, errOut)
	}
	// RBAC allows create on every volume (the provisioner); the volume
	// policy narrows it to listener volumes bound to their claim.
	foreign := `{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"roles-hostpath"},` +
		`"spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],"hostPath":{"path":"/etc"}}}`
	_, errOut, err = k8s.run(ctx, foreign, as, "create", "-f", "-", "--dry-run=server")
	if err == nil || !strings.Contains(errOut, "the listener operator may only create and label volumes of the listener driver") {
		t.Errorf("the manager's account created a hostPath volume: %v %s", err, errOut)
	}
	running := operatorPods(t, ctx)[0]
	_, errOut, err = k8s.run(ctx, "", as, "-n", operatorNamespace, "delete", "pod", running.Name, "--dry-run=server")
	if err == nil || !strings.Contains(errOut, "the listener operator may only delete pods that no node runs") {
		t.Errorf("the manager's account deleted running pod %s: %v %s", running.Name, err, errOut)
	}
}

// TestCARotationRefusesNothing forces the self-signed mode to issue a new
// CA (its key in the Secret replaced by garbage, as after a leak) while 4
// clients dry-run-create Listeners through the fail-closed validating
// webhook, until every replica serves a certificate of the new CA, the old
// CA has left the caBundle, and a little after: no request may fail (no
// TLS or x509 error: the API server trusts the old and the new CA while
// replicas may serve either).
func TestCARotationRefusesNothing(t *testing.T) {
	ctx := t.Context()
	if m := operatorCertMode(t, ctx); m != "self-signed" {
		t.Skipf("the operator runs --cert-mode=%s: the CA is cert-manager's (TestCertManagerCARotationRefusesNothing); this test is the self-signed mode's (make e2e CERT_MODE=self-signed)", m)
	}
	ns := namespace(t, ctx, "ca")
	class := listenerClass("ca-rotation", v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP})
	ensureClass(t, ctx, class)
	key := client.ObjectKey{Namespace: operatorNamespace, Name: "listener-operator-webhook-cert"}
	var secret corev1.Secret
	if err := k8s.client.Get(ctx, key, &secret); err != nil {
		t.Fatal(err)
	}
	oldCA := secret.Data[certs.KeyCACert]

	admissions := startAdmissionProbe(ctx, 4, 100*time.Millisecond, func(c, i int) client.Object {
		return &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("c%d-%d", c, i)},
			Spec: v1alpha1.ListenerSpec{ClassName: ptr.To(class.Name), Ports: []v1alpha1.ListenerPort{{Name: "http", Port: 8080, Protocol: corev1.ProtocolTCP}}}}
	})
	defer admissions.Stop()
	admissions.waitAnswers(t, ctx, 4, "before the CA changes")

	// Replace the CA key; a change of a webhook configuration wakes the
	// leader at once (it would look at its next resync otherwise).
	secret.Data[certs.KeyCAKey] = []byte("replaced")
	if err := k8s.client.Update(ctx, &secret); err != nil {
		t.Fatal(err)
	}
	k8s.kubectlOK(t, ctx, "", "annotate", "--overwrite", "validatingwebhookconfiguration", "listener-operator-validating", "e2e.listeners.stackable.tech/ca-rotation="+ns)

	var newCA []byte
	eventually(t, ctx, 2*time.Minute, "every replica serves a certificate of the new CA and the old CA is no longer trusted", func(ctx context.Context) (bool, string) {
		var s corev1.Secret
		if err := k8s.client.Get(ctx, key, &s); err != nil {
			return false, err.Error()
		}
		newCA = s.Data[certs.KeyCACert]
		if bytes.Equal(newCA, oldCA) {
			return false, "no new CA yet"
		}
		if _, ok := s.Data[certs.KeyPreviousCACert]; ok {
			return false, "the Secret still keeps the previous CA"
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(newCA)
		for _, p := range operatorPods(t, ctx) {
			conn, err := tls.Dial("tcp", p.Status.PodIP+":9443", &tls.Config{InsecureSkipVerify: true})
			if err != nil {
				return false, p.Name + ": " + err.Error()
			}
			leaf := conn.ConnectionState().PeerCertificates[0]
			conn.Close()
			if err := certs.VerifyLeaf(leaf, pool, ""); err != nil {
				return false, p.Name + ": " + err.Error()
			}
		}
		return true, ""
	})
	// And a little after: a hundred more answers.
	admissions.waitAnswers(t, ctx, 100, "once every replica serves the new CA")
	admissions.Stop()
	_, admitted, failures := admissions.counts()
	t.Logf("%d dry-run creates admitted during the CA change", admitted)
	if len(failures) > 0 || admitted == 0 {
		t.Errorf("%d requests failed during the CA change (%d admitted), e.g. %v", len(failures), admitted, failures[:min(len(failures), 3)])
	}
}
