package v1alpha1_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// TestObjectsStoredByStackable25_7 stores objects under the CRD schema of
// the Stackable listener-operator 25.7 (before 25.11 every ListenerClass got
// serviceExternalTrafficPolicy: Local, ClusterIP ones too; port names and
// protocols were free strings), then replaces the CRDs with ours, as the
// migration runbook does (docs/migration.md), and checks that the objects
// stay readable and updatable, status included, and that our status fields
// are kept.
func TestObjectsStoredByStackable25_7(t *testing.T) {
	e := testenv.Require(t, env)
	c := e.Client
	ctx := t.Context()

	theirs := readCRDs(t, filepath.Join(testenv.RepoRoot(), "test", "e2e", "testdata", "stackable", "crds-25.7.0.yaml"))
	ours := map[string]*unstructured.Unstructured{}
	for name := range theirs {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("apiextensions.k8s.io/v1")
		u.SetKind("CustomResourceDefinition")
		if err := c.Get(ctx, client.ObjectKey{Name: name}, u); err != nil {
			t.Fatal(err)
		}
		ours[name] = u
	}
	setVersions := func(from map[string]*unstructured.Unstructured) {
		t.Helper()
		for name, src := range from {
			u := &unstructured.Unstructured{}
			u.SetAPIVersion("apiextensions.k8s.io/v1")
			u.SetKind("CustomResourceDefinition")
			if err := c.Get(context.WithoutCancel(ctx), client.ObjectKey{Name: name}, u); err != nil {
				t.Fatal(err)
			}
			versions, _, _ := unstructured.NestedSlice(src.Object, "spec", "versions")
			if err := unstructured.SetNestedSlice(u.Object, versions, "spec", "versions"); err != nil {
				t.Fatal(err)
			}
			if err := c.Update(context.WithoutCancel(ctx), u); err != nil {
				t.Fatalf("replace CRD %s: %v", name, err)
			}
		}
	}
	setVersions(theirs)
	t.Cleanup(func() { setVersions(ours) })

	badPort := func(name string) *v1alpha1.Listener {
		return &v1alpha1.Listener{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: v1alpha1.ListenerSpec{ClassName: ptr.To("old-internal"),
				Ports: []v1alpha1.ListenerPort{{Name: "HTTP_Port", Port: 80, Protocol: "tcp"}}},
		}
	}
	// Their schema is in force once a Listener ours refuses is accepted.
	old := badPort("stored-by-stackable")
	waitFor(t, "the 25.7 schema", func() error { return c.Create(ctx, old.DeepCopy()) })
	t.Cleanup(func() { _ = c.Delete(context.WithoutCancel(ctx), old) })
	class := &v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{Name: "old-internal"}, Spec: v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP}}
	if err := c.Create(ctx, class); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.WithoutCancel(ctx), class) })
	if class.Spec.ServiceExternalTrafficPolicy == nil || *class.Spec.ServiceExternalTrafficPolicy != v1alpha1.TrafficPolicyLocal {
		t.Fatalf("25.7 stored serviceExternalTrafficPolicy %v on a ClusterIP class, want its default Local", class.Spec.ServiceExternalTrafficPolicy)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(old), old); err != nil {
		t.Fatal(err)
	}
	old.Status = v1alpha1.ListenerStatus{ServiceName: old.Name, IngressAddresses: []v1alpha1.ListenerIngress{{
		Address: "old.default.svc.cluster.local", AddressType: v1alpha1.AddressTypeHostname, Ports: map[string]int32{"HTTP_Port": 80}}}}
	if err := c.Status().Update(ctx, old); err != nil {
		t.Fatalf("their status: %v", err)
	}

	// Ours replace theirs.
	setVersions(ours)
	waitFor(t, "our schema", func() error {
		err := c.Create(ctx, badPort("refused-by-ours"))
		if err == nil {
			_ = c.Delete(ctx, badPort("refused-by-ours"))
			return errors.New("a port name that is not a DNS label was accepted")
		}
		return nil
	})

	// Readable, with what was stored.
	got := &v1alpha1.Listener{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(old), got); err != nil {
		t.Fatalf("read a Listener stored by 25.7: %v", err)
	}
	if got.Spec.Ports[0].Name != "HTTP_Port" || len(got.Status.IngressAddresses) != 1 {
		t.Fatalf("stored Listener reads back as %+v / %+v", got.Spec, got.Status)
	}
	gotClass := &v1alpha1.ListenerClass{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(class), gotClass); err != nil {
		t.Fatalf("read a ListenerClass stored by 25.7: %v", err)
	}
	// Updatable while the stored fields stay (validation ratcheting), the
	// class with its ClusterIP traffic policy included (no CEL rule refuses
	// it any more).
	gotClass.Labels = map[string]string{"migrated": "true"}
	if err := c.Update(ctx, gotClass); err != nil {
		t.Errorf("update a ListenerClass stored by 25.7: %v", err)
	}
	got.Labels = map[string]string{"migrated": "true"}
	if err := c.Update(ctx, got); err != nil {
		t.Errorf("update a Listener stored by 25.7: %v", err)
	}
	// Our status fields are stored, not pruned.
	got.Status.ServiceType = v1alpha1.ServiceTypeClusterIP
	meta.SetStatusCondition(&got.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: "Invalid", Message: "x", ObservedGeneration: got.Generation})
	if err := c.Status().Update(ctx, got); err != nil {
		t.Fatalf("status update of a Listener stored by 25.7: %v", err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(old), got); err != nil {
		t.Fatal(err)
	}
	if got.Status.ServiceType != v1alpha1.ServiceTypeClusterIP || meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady) == nil {
		t.Errorf("status after our update: %+v", got.Status)
	}
	// A new invalid value is still refused: ratcheting keeps only what was stored.
	got.Spec.Ports = append(got.Spec.Ports, v1alpha1.ListenerPort{Name: "Other_Port", Port: 81})
	if err := c.Update(ctx, got); err == nil || !strings.Contains(err.Error(), "Other_Port") {
		t.Errorf("adding an invalid port name: %v, want a refusal naming it", err)
	}
}

func waitFor(t *testing.T, what string, try func() error) {
	t.Helper()
	var err error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if err = try(); err == nil {
			return
		}
	}
	t.Fatalf("%s not in force after 30 s: %v", what, err)
}

// readCRDs reads a file of CustomResourceDefinitions by name.
func readCRDs(t *testing.T, path string) map[string]*unstructured.Unstructured {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]*unstructured.Unstructured{}
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	for {
		var m map[string]any
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("read %s: %v", path, err)
		}
		if len(m) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		out[u.GetName()] = u
	}
	if len(out) != 3 {
		t.Fatalf("%s has %d CRDs, want 3", path, len(out))
	}
	return out
}
