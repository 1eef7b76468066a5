package webhooks

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"

	"github.com/listener-operator/listener-operator/internal/testenv"
)

// TestBadInputCatalogue runs the catalogue (docs/webhooks.md, "Bad
// input"); the table there is rendered from it (-update rewrites it).
func TestBadInputCatalogue(t *testing.T) {
	e := testenv.Require(t, env)
	ns := namespace(t, nil)
	var (
		mu       sync.Mutex
		warnings []string
	)
	cfg := rest.CopyConfig(e.Config)
	cfg.WarningHandler = warningFunc(func(msg string) {
		mu.Lock()
		warnings = append(warnings, msg)
		mu.Unlock()
	})
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	httpClient := webhookClient(t)
	for _, row := range catalogue {
		t.Run(row.what, func(t *testing.T) {
			object := strings.ReplaceAll(row.object, "{ns}", ns)
			want := strings.ReplaceAll(row.want, "{ns}", ns)
			made := setUp(t, e, dyn, ns, row.setup)
			var got string
			if row.path != "" {
				got = postReview(t, httpClient, row.path, object)
			} else {
				mu.Lock()
				warnings = nil
				mu.Unlock()
				got = throughAPIServer(t, e, dyn, ns, strings.ReplaceAll(row.before, "{ns}", ns), object, made)
				mu.Lock()
				for _, w := range warnings {
					got += "\nwarning: " + w
				}
				mu.Unlock()
			}
			ok := false
			switch {
			case strings.HasPrefix(want, "admitted: "):
				ok = strings.HasPrefix(got, "admitted") && strings.Contains(got, strings.TrimPrefix(want, "admitted: "))
			case want == "admitted":
				ok = strings.HasPrefix(got, "admitted")
			case want == "admitted, no warning":
				ok = strings.HasPrefix(got, "admitted") && !strings.Contains(got, "\nwarning: ")
			case strings.HasPrefix(want, "warning: "):
				ok = strings.HasPrefix(got, "admitted") && strings.Contains(got, "\nwarning: ") && strings.Contains(got, strings.TrimPrefix(want, "warning: "))
			default:
				ok = strings.HasPrefix(got, "denied: ") && strings.Contains(got, strings.TrimPrefix(want, "denied: "))
			}
			if !ok {
				t.Errorf("got:\n%s\nwant: %s", got, want)
			}
		})
	}
	checkCatalogueDoc(t)
}

type warningFunc func(string)

func (f warningFunc) HandleWarningHeader(code int, _ string, msg string) {
	if code == 299 {
		f(msg)
	}
}

// throughAPIServer creates object with dry-run, or updates it when before
// or the row's setup made it (made: by kind and name), and renders the
// outcome.
func throughAPIServer(t *testing.T, e *testenv.Env, dyn dynamic.Interface, ns, before, object string, made map[string]*unstructured.Unstructured) string {
	var u unstructured.Unstructured
	if err := json.Unmarshal([]byte(object), &u.Object); err != nil {
		t.Fatal(err)
	}
	r := resourceOf(t, e, dyn, ns, &u)
	dry := []string{metav1.DryRunAll}
	var out *unstructured.Unstructured
	existing := made[u.GetKind()+"/"+u.GetName()]
	if before != "" {
		var b unstructured.Unstructured
		if err := json.Unmarshal([]byte(before), &b.Object); err != nil {
			t.Fatal(err)
		}
		created, err := r.Create(t.Context(), &b, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create the object to update: %v", err)
		}
		existing = created
	}
	if existing != nil {
		u.SetResourceVersion(existing.GetResourceVersion())
		var err error
		out, err = r.Update(t.Context(), &u, metav1.UpdateOptions{DryRun: dry})
		if err != nil {
			return "denied: " + err.Error()
		}
	} else {
		var err error
		out, err = r.Create(t.Context(), &u, metav1.CreateOptions{DryRun: dry})
		if err != nil {
			if apierrors.IsAlreadyExists(err) {
				t.Fatal(err)
			}
			return "denied: " + err.Error()
		}
	}
	b, _ := json.Marshal(out.Object)
	return "admitted " + string(b)
}

// resourceOf is the resource of u's kind (in namespace ns when u is
// namespaced).
func resourceOf(t *testing.T, e *testenv.Env, dyn dynamic.Interface, ns string, u *unstructured.Unstructured) dynamic.ResourceInterface {
	m, err := e.Client.RESTMapper().RESTMapping(u.GroupVersionKind().GroupKind(), u.GroupVersionKind().Version)
	if err != nil {
		t.Fatal(err)
	}
	if u.GetNamespace() != "" {
		return dyn.Resource(m.Resource).Namespace(ns)
	}
	return dyn.Resource(m.Resource)
}

// setUp creates a row's setup objects for real, in order, and waits until
// the webhooks' cache has each that they read from it (a class, a
// Listener, a listener claim); a class with spec.gateway installs the
// Gateway API first. "{uid:<name>}" in an object is the UID of the setup
// object named <name> made before it. They are deleted, last first, when
// the row ends (a class once the cache no longer counts the Listeners and
// claims that use it). made are the objects as created, by kind and name.
func setUp(t *testing.T, e *testenv.Env, dyn dynamic.Interface, ns string, objects []string) (made map[string]*unstructured.Unstructured) {
	made = map[string]*unstructured.Unstructured{}
	for _, o := range objects {
		o = strings.ReplaceAll(o, "{ns}", ns)
		for _, m := range made {
			o = strings.ReplaceAll(o, "{uid:"+m.GetName()+"}", string(m.GetUID()))
		}
		var u unstructured.Unstructured
		if err := json.Unmarshal([]byte(o), &u.Object); err != nil {
			t.Fatal(err)
		}
		if _, gw, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "gateway"); gw && u.GetKind() == "ListenerClass" {
			if err := testenv.InstallGatewayAPI(e.Config); err != nil {
				t.Fatal(err)
			}
		}
		r := resourceOf(t, e, dyn, ns, &u)
		created, err := r.Create(t.Context(), &u, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create %s %s of the row's setup: %v", u.GetKind(), u.GetName(), err)
		}
		made[u.GetKind()+"/"+u.GetName()] = created
		t.Cleanup(func() {
			eventually(t, "delete "+u.GetKind()+" "+u.GetName()+" of the row's setup", func() error {
				if err := r.Delete(context.Background(), u.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
					return err
				}
				return nil
			})
		})
		var cached client.Object
		switch u.GetKind() {
		case "ListenerClass":
			cached = &v1alpha1.ListenerClass{}
		case "Listener":
			cached = &v1alpha1.Listener{}
		case "PersistentVolumeClaim":
			cached = &corev1.PersistentVolumeClaim{}
		default:
			continue
		}
		eventually(t, "the webhooks' cache has "+u.GetKind()+" "+u.GetName(), func() error {
			return testLookup.cache.Get(t.Context(), client.ObjectKeyFromObject(&u), cached)
		})
	}
	return made
}

// webhookClient trusts the test webhook server's certificate.
func webhookClient(t *testing.T) *http.Client {
	wo := &env.Environment.WebhookInstallOptions
	pool := x509.NewCertPool()
	ca, err := os.ReadFile(filepath.Join(wo.LocalServingCertDir, "tls.crt"))
	if err == nil {
		pool.AppendCertsFromPEM(ca)
	}
	if len(wo.LocalServingCAData) > 0 {
		pool.AppendCertsFromPEM(wo.LocalServingCAData)
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: wo.LocalServingHost}}}
}

// postReview posts body to the webhook server's path and renders the answer.
func postReview(t *testing.T, c *http.Client, path, body string) string {
	wo := &env.Environment.WebhookInstallOptions
	url := "https://" + net.JoinHostPort(wo.LocalServingHost, strconv.Itoa(wo.LocalServingPort)) + path
	resp, err := c.Post(url, "application/json", bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out admissionv1.AdmissionReview
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.Response == nil {
		t.Fatalf("answer is not an AdmissionReview (HTTP %d): %v", resp.StatusCode, err)
	}
	if !out.Response.Allowed {
		msg := ""
		if out.Response.Result != nil {
			msg = fmt.Sprintf("%s (code %d)", out.Response.Result.Message, out.Response.Result.Code)
		}
		return "denied: " + msg
	}
	return "admitted " + string(out.Response.Patch)
}

// updates reports whether the row's object is an update: of before, or of
// a setup object of its kind and name.
func (r catalogueRow) updates() bool {
	key := func(o string) string {
		var m struct {
			Kind     string
			Metadata struct{ Name string }
		}
		_ = json.Unmarshal([]byte(o), &m)
		return m.Kind + "/" + m.Metadata.Name
	}
	for _, s := range r.setup {
		if key(s) == key(r.object) {
			return true
		}
	}
	return r.before != ""
}

// catalogueDoc renders the catalogue as the table in docs/webhooks.md.
func catalogueDoc() string {
	var b strings.Builder
	b.WriteString("| # | Request | Sent | Outcome |\n|---|---|---|---|\n")
	for i, r := range catalogue {
		sent := "API server, dry-run create"
		switch {
		case r.path != "":
			sent = "straight to `" + r.path + "`"
		case r.updates():
			sent = "API server, dry-run update"
		}
		out := strings.ReplaceAll(r.want, "|", `\|`)
		out = strings.ReplaceAll(out, "{ns}", "<ns>")
		fmt.Fprintf(&b, "| %d | %s | %s | %s |\n", i+1, r.what, sent, "`"+strings.ReplaceAll(out, "`", "'")+"`")
	}
	return b.String()
}

const (
	catalogueBegin = "<!-- catalogue: generated by go test ./webhooks -run TestBadInputCatalogue -update -->\n"
	catalogueEnd   = "<!-- end of catalogue -->"
)

// checkCatalogueDoc keeps the table in docs/webhooks.md equal to the
// catalogue.
func checkCatalogueDoc(t *testing.T) {
	path := filepath.Join(testenv.RepoRoot(), "docs", "webhooks.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(doc)
	i, j := strings.Index(s, catalogueBegin), strings.Index(s, catalogueEnd)
	if i < 0 || j < i {
		t.Fatalf("docs/webhooks.md has no catalogue section (%q … %q)", catalogueBegin, catalogueEnd)
	}
	want := s[:i] + catalogueBegin + catalogueDoc() + s[j:]
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if want != s {
		t.Errorf("the catalogue in docs/webhooks.md differs from the test's (run with -update)")
	}
}
