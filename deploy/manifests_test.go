package deploy

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/listener-operator/listener-operator/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env, testenv.Options{}) }

// rendering is one way to install the operator.
type rendering struct {
	name     string
	certMode string // cert-manager or self-signed
	render   func(t *testing.T) []byte
}

func renderings() []rendering {
	return []rendering{
		{"kustomize config/default", "cert-manager", func(t *testing.T) []byte { return kustomize(t, "config/default") }},
		{"kustomize config/selfsigned", "self-signed", func(t *testing.T) []byte { return kustomize(t, "config/selfsigned") }},
		{"helm template (defaults)", "self-signed", func(t *testing.T) []byte { return helm(t) }},
		{"helm template certMode=cert-manager", "cert-manager", func(t *testing.T) []byte { return helm(t, "certMode=cert-manager") }},
		{"helm template certMode=cert-manager with an issuerRef", "cert-manager", func(t *testing.T) []byte {
			return helm(t, "certMode=cert-manager", "certManager.issuerRef.kind=ClusterIssuer", "certManager.issuerRef.name=corporate-ca")
		}},
	}
}

func TestRenderedManifestsHaveAWorkingInstall(t *testing.T) {
	for _, r := range renderings() {
		t.Run(r.name, func(t *testing.T) {
			o := parse(t, r.render(t))
			for _, crd := range []string{"listenerclasses", "listeners", "podlisteners"} {
				o.get(t, "CustomResourceDefinition", "", crd+".listeners.stackable.tech")
			}
			for _, k := range []struct{ kind, ns, name string }{
				{"ServiceAccount", namespace, "listener-operator"},
				{"ClusterRole", "listener-operator", ""},
				{"PodDisruptionBudget", namespace, "listener-operator"},
				{"CSIDriver", "", "listeners.stackable.tech"},
				{"StorageClass", "", "listeners.stackable.tech"},
				{"ClusterRoleBinding", "", "listener-operator"},
				{"Role", namespace, "listener-operator-leader-election"},
			} {
				if k.kind == "ClusterRole" {
					o.get(t, k.kind, "", k.ns)
					continue
				}
				o.get(t, k.kind, k.ns, k.name)
			}

			// The operator: two replicas spread over nodes, leader election,
			// readiness on /readyz.
			dep := o.get(t, "Deployment", namespace, "listener-operator")
			if n, _, _ := unstructured.NestedInt64(dep.Object, "spec", "replicas"); n != 2 {
				t.Errorf("operator replicas = %d, want 2", n)
			}
			if _, found, _ := unstructured.NestedFieldNoCopy(dep.Object, "spec", "template", "spec", "affinity", "podAntiAffinity"); !found {
				t.Error("operator has no pod anti-affinity")
			}
			mgr := container(t, dep, "manager")
			a := args(t, mgr)
			if a[0] != "controller" || !slices.Contains(a, "--leader-elect=true") {
				t.Errorf("operator args %v: want the controller command with leader election", a)
			}
			if mode, _ := flagValue(a, "--cert-mode"); mode != r.certMode {
				t.Errorf("--cert-mode=%s, want %s", mode, r.certMode)
			}
			if p, _, _ := unstructured.NestedString(mgr, "readinessProbe", "httpGet", "path"); p != "/readyz" {
				t.Errorf("readiness probe path %q", p)
			}
			certDir, _ := flagValue(a, "--webhook-cert-dir")
			mountedAt := ""
			for _, m := range slice(t, mgr, "volumeMounts") {
				m := m.(map[string]any)
				if m["name"] == "webhook-certs" {
					mountedAt = m["mountPath"].(string)
				}
			}
			if certDir == "" || mountedAt != certDir {
				t.Errorf("--webhook-cert-dir=%q but the certificate volume is mounted at %q", certDir, mountedAt)
			}

			// The webhook Service reaches the operator's pods on the webhook port.
			svc := o.get(t, "Service", namespace, "listener-operator-webhook")
			sel, _, _ := unstructured.NestedStringMap(svc.Object, "spec", "selector")
			podLabels, _, _ := unstructured.NestedStringMap(dep.Object, "spec", "template", "metadata", "labels")
			for k, v := range sel {
				if podLabels[k] != v {
					t.Errorf("webhook Service selects %s=%s, operator pods have %v", k, v, podLabels)
				}
			}
			port := slice(t, svc.Object, "spec", "ports")[0].(map[string]any)
			if port["port"] != int64(443) || port["targetPort"] != int64(9443) {
				t.Errorf("webhook Service port %v → %v, want 443 → 9443", port["port"], port["targetPort"])
			}

			// Both webhook configurations call that Service; with
			// cert-manager, cainjector fills their caBundle from the CA.
			for _, kind := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
				name := map[string]string{"MutatingWebhookConfiguration": "listener-operator-mutating", "ValidatingWebhookConfiguration": "listener-operator-validating"}[kind]
				wc := o.get(t, kind, "", name)
				for _, w := range slice(t, wc.Object, "webhooks") {
					ref, _, _ := unstructured.NestedStringMap(w.(map[string]any), "clientConfig", "service")
					if ref["name"] != "listener-operator-webhook" || ref["namespace"] != namespace {
						t.Errorf("%s webhook %v calls service %v", kind, w.(map[string]any)["name"], ref)
					}
				}
				inject := wc.GetAnnotations()["cert-manager.io/inject-ca-from"]
				// cainjector injects the ca.crt of that Certificate's
				// Secret: the chart's own CA, or with an issuerRef the
				// serving Certificate's (whose ca.crt is that issuer's CA).
				wantInject := namespace + "/listener-operator-ca"
				if strings.Contains(r.name, "issuerRef") {
					wantInject = namespace + "/listener-operator-serving-cert"
				}
				if r.certMode == "cert-manager" && inject != wantInject {
					t.Errorf("%s inject-ca-from = %q, want %q", kind, inject, wantInject)
				}
				if r.certMode == "self-signed" && inject != "" {
					t.Errorf("%s has inject-ca-from %q without cert-manager", kind, inject)
				}
			}

			// The CSI driver: controller with csi-provisioner, node plugin
			// with node-driver-registrar.
			container(t, o.get(t, "Deployment", namespace, "listener-operator-csi-controller"), "csi-provisioner")
			container(t, o.get(t, "DaemonSet", namespace, "listener-operator-csi-node"), "node-driver-registrar")

			o.get(t, "Role", namespace, "listener-operator")
			switch r.certMode {
			case "cert-manager":
				serving := o.get(t, "Certificate", namespace, "listener-operator-serving-cert")
				if strings.Contains(r.name, "issuerRef") {
					ref, _, _ := unstructured.NestedStringMap(serving.Object, "spec", "issuerRef")
					if !reflect.DeepEqual(ref, map[string]string{"kind": "ClusterIssuer", "name": "corporate-ca"}) {
						t.Errorf("serving Certificate issuerRef %v, want the ClusterIssuer the values name", ref)
					}
					for k := range o {
						if strings.HasPrefix(k, "Issuer/") || k == key("Certificate", namespace, "listener-operator-ca") {
							t.Errorf("with an issuerRef the chart still renders its own CA: %s", k)
						}
					}
				} else {
					ca := o.get(t, "Certificate", namespace, "listener-operator-ca")
					// A re-issued CA must keep its key: the serving
					// certificate signed before verifies against the new
					// caBundle (cert-manager >= 1.18 defaults to Always).
					if got, _, _ := unstructured.NestedString(ca.Object, "spec", "privateKey", "rotationPolicy"); got != "Never" {
						t.Errorf("CA Certificate privateKey.rotationPolicy = %q, want Never (a re-issued CA would refuse admissions)", got)
					}
					o.get(t, "Issuer", namespace, "listener-operator-ca")
					o.get(t, "Issuer", namespace, "listener-operator-selfsigned")
					if got := str(t, serving, "spec", "issuerRef", "name"); got != "listener-operator-ca" {
						t.Errorf("serving Certificate issued by %q, want the CA Issuer (so renewals keep the caBundle)", got)
					}
				}
				dns, _, _ := unstructured.NestedStringSlice(serving.Object, "spec", "dnsNames")
				if !slices.Contains(dns, "listener-operator-webhook."+namespace+".svc") {
					t.Errorf("serving Certificate DNS names %v lack the name the API server checks", dns)
				}
				vol := ""
				for _, v := range slice(t, dep.Object, "spec", "template", "spec", "volumes") {
					v := v.(map[string]any)
					if v["name"] == "webhook-certs" {
						vol, _, _ = unstructured.NestedString(v, "secret", "secretName")
					}
				}
				if vol != str(t, serving, "spec", "secretName") {
					t.Errorf("operator mounts Secret %q, cert-manager writes %q", vol, str(t, serving, "spec", "secretName"))
				}
				if !grants(o.get(t, "Role", namespace, "listener-operator-cert-manager"), "cert-manager.io", "certificates", "listener-operator-serving-cert", "get") {
					t.Error("operator's Role cannot get the serving Certificate the start-up check reads")
				}
				// cainjector writes the caBundle: the operator may not.
				for k, u := range o {
					if (u.GetKind() == "ClusterRole" || u.GetKind() == "Role") && (grants(u, "admissionregistration.k8s.io", "mutatingwebhookconfigurations", "listener-operator-mutating", "patch") ||
						grants(u, "admissionregistration.k8s.io", "validatingwebhookconfigurations", "listener-operator-validating", "patch")) {
						t.Errorf("%s lets the operator patch its webhook configurations with cert-manager", k)
					}
				}
			case "self-signed":
				name, _ := flagValue(a, "--cert-secret-name")
				o.get(t, "Secret", namespace, name)
				for k := range o {
					if strings.HasPrefix(k, "Certificate/") || strings.HasPrefix(k, "Issuer/") {
						t.Errorf("self-signed install renders cert-manager object %s", k)
					}
				}
				for _, verb := range []string{"get", "update"} {
					if !grants(o.get(t, "Role", namespace, "listener-operator-self-signed"), "", "secrets", name, verb) {
						t.Errorf("operator's Role cannot %s Secret %s", verb, name)
					}
				}
				injector := o.get(t, "ClusterRole", "", "listener-operator-self-signed")
				for _, c := range []struct{ resource, name string }{{"mutatingwebhookconfigurations", "listener-operator-mutating"}, {"validatingwebhookconfigurations", "listener-operator-validating"}} {
					if !grants(injector, "admissionregistration.k8s.io", c.resource, c.name, "patch") || grants(injector, "admissionregistration.k8s.io", c.resource, "another", "patch") {
						t.Errorf("self-signed ClusterRole does not grant patch on exactly %s %s", c.resource, c.name)
					}
				}
				for _, b := range []string{"RoleBinding/" + namespace, "ClusterRoleBinding/"} {
					if _, ok := o[b+"/listener-operator-self-signed"]; !ok {
						t.Errorf("%s/listener-operator-self-signed is not rendered", b)
					}
				}
			}
			// Least privilege: Secrets only by name, nowhere cluster-wide.
			for k, u := range o {
				if u.GetKind() != "ClusterRole" && u.GetKind() != "Role" {
					continue
				}
				for _, rule := range slice(t, u.Object, "rules") {
					rule := rule.(map[string]any)
					res, _, _ := unstructured.NestedStringSlice(rule, "resources")
					names, _, _ := unstructured.NestedStringSlice(rule, "resourceNames")
					if slices.Contains(res, "secrets") && len(names) == 0 {
						t.Errorf("%s grants access to every Secret: %v", k, rule)
					}
				}
			}
		})
	}
}

// grants reports whether a Role's rules allow verb on one named object.
func grants(role *unstructured.Unstructured, group, resource, name, verb string) bool {
	rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
	for _, r := range rules {
		r := r.(map[string]any)
		groups, _, _ := unstructured.NestedStringSlice(r, "apiGroups")
		res, _, _ := unstructured.NestedStringSlice(r, "resources")
		verbs, _, _ := unstructured.NestedStringSlice(r, "verbs")
		names, _, _ := unstructured.NestedStringSlice(r, "resourceNames")
		if slices.Contains(groups, group) && slices.Contains(res, resource) && slices.Contains(verbs, verb) &&
			(len(names) == 0 || slices.Contains(names, name)) {
			return true
		}
	}
	return false
}

// normalized drops what legitimately differs between kustomize and Helm:
// the labels Helm adds to top-level objects and the Namespace object,
// which Helm leaves to `--create-namespace`.
func normalized(o objects) map[string]any {
	out := map[string]any{}
	for k, u := range o {
		if u.GetKind() == "Namespace" {
			continue
		}
		c := u.DeepCopy()
		labels := c.GetLabels()
		for _, l := range []string{"helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/instance"} {
			delete(labels, l)
		}
		if len(labels) == 0 {
			labels = nil
		}
		c.SetLabels(labels)
		// kustomize's built-in schema predates these cluster-scoped kinds,
		// so its namespace transformer gives them a namespace, which the
		// API server drops.
		if clusterScopedUnknownToKustomize[c.GetKind()] {
			c.SetNamespace("")
			k = key(c.GetKind(), "", c.GetName())
		}
		out[k] = c.Object
	}
	return out
}

var clusterScopedUnknownToKustomize = map[string]bool{"ValidatingAdmissionPolicy": true, "ValidatingAdmissionPolicyBinding": true, "FlowSchema": true}

func TestKustomizeAndHelmRenderTheSameObjects(t *testing.T) {
	pairs := []struct {
		name      string
		kustomize string
		values    []string
	}{
		{"cert-manager", "config/default", []string{"certMode=cert-manager"}},
		{"self-signed", "config/selfsigned", nil},
	}
	for _, p := range pairs {
		t.Run(p.name, func(t *testing.T) {
			k := normalized(parse(t, kustomize(t, p.kustomize)))
			h := normalized(parse(t, helm(t, p.values...)))
			for name := range k {
				if _, ok := h[name]; !ok {
					t.Errorf("%s renders %s, the Helm chart does not", p.kustomize, name)
				}
			}
			for name := range h {
				if _, ok := k[name]; !ok {
					t.Errorf("the Helm chart renders %s, %s does not", name, p.kustomize)
				}
			}
			for name, ko := range k {
				ho, ok := h[name]
				if ok && !reflect.DeepEqual(ko, ho) {
					t.Errorf("%s differs:\nkustomize: %v\nhelm:      %v", name, ko, ho)
				}
			}
		})
	}
}

func TestHelmChartCopiesMatchConfig(t *testing.T) {
	root := testenv.RepoRoot()
	chart := filepath.Join(root, "deploy", "helm", "listener-operator")
	read := func(p string) []byte {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	want := map[string][]byte{
		"files/webhooks.yaml":             kustomize(t, "config/webhook"),
		"files/role.yaml":                 read("config/rbac/role.yaml"),
		"files/csi-role.yaml":             read("config/csi/rbac/role.yaml"),
		"files/csi-node-role.yaml":        read("config/csi/rbac/node_role.yaml"),
		"files/csi-provisioner-role.yaml": read("config/csi/rbac/provisioner_role.yaml"),
		"files/csi-driver.yaml":           append(append(read("config/csi/csidriver.yaml"), "---\n"...), read("config/csi/storageclass.yaml")...),
	}
	crds, _ := filepath.Glob(filepath.Join(root, "config", "crd", "bases", "*.yaml"))
	for _, c := range crds {
		want["crds/"+filepath.Base(c)] = read(filepath.Join("config", "crd", "bases", filepath.Base(c)))
	}
	for name, w := range want {
		got, err := os.ReadFile(filepath.Join(chart, name))
		if err != nil || !bytes.Equal(got, w) {
			t.Errorf("%s is out of date with config/: run `make helm-sync` (or `make manifests`)", name)
		}
	}
}

// certManagerCRDs are cert-manager's own CRDs for the objects the manifests
// create, from the module the operator's cert-manager types come from.
func certManagerCRDs(t *testing.T) []string {
	t.Helper()
	out, err := execGo("list", "-m", "-f", "{{.Dir}}", "github.com/cert-manager/cert-manager")
	if err != nil {
		t.Fatalf("locate the cert-manager module: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(out), "deploy", "crds")
	return []string{filepath.Join(dir, "cert-manager.io_certificates.yaml"), filepath.Join(dir, "cert-manager.io_issuers.yaml")}
}

// TestServerAcceptsManifests applies every rendering to a real API server
// as a server-side dry run. cert-manager itself cannot run here (its
// controller cannot be built from the module proxy), but its CRDs are
// installed so that the Issuers and Certificates are validated against
// cert-manager's real schemas rather than skipped.
func TestServerAcceptsManifests(t *testing.T) {
	e := testenv.Require(t, env)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := envtest.InstallCRDs(e.Config, envtest.CRDInstallOptions{Paths: certManagerCRDs(t), ErrorIfPathMissing: true}); err != nil {
		t.Fatalf("install cert-manager CRDs: %v", err)
	}
	// A dry run creates nothing, so the namespaced objects need their
	// namespace to exist for real.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if err := e.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	for _, r := range renderings() {
		t.Run(r.name, func(t *testing.T) {
			manifests := r.render(t)
			out, err := e.Kubectl(ctx, manifests, "apply", "--server-side", "--force-conflicts", "--field-manager=listener-operator-install", "--dry-run=server", "-f", "-")
			if err != nil {
				t.Fatalf("the API server rejects the manifests: %v\n%s", err, out)
			}
			applied := strings.Count(out, "(server dry run)")
			if want := len(parse(t, manifests)); applied != want {
				t.Errorf("dry run applied %d objects, rendered %d:\n%s", applied, want, out)
			}
		})
	}
	t.Run("a broken manifest is refused", func(t *testing.T) {
		bad := bytes.Replace(helm(t), []byte("maxUnavailable: 1"), []byte("maxUnavailable: one"), 1)
		if out, err := e.Kubectl(ctx, bad, "apply", "--server-side", "--dry-run=server", "-f", "-"); err == nil {
			t.Fatalf("the API server accepted a PodDisruptionBudget with maxUnavailable: one:\n%s", out)
		}
	})
}
