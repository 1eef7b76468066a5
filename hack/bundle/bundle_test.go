package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/operator-framework/api/pkg/validation"
	"github.com/operator-framework/api/pkg/validation/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const root = "../.."

// TestBundleValidates runs operator-framework's own validators (those
// operator-sdk's `bundle validate` runs, plus the object and good-practice
// checks) on the committed bundle/.
func TestBundleValidates(t *testing.T) {
	b, err := manifests.GetBundleFromDir(filepath.Join(root, "bundle"))
	if err != nil {
		t.Fatalf("load bundle/: %v", err)
	}
	objs := []any{b}
	if b.CSV != nil {
		objs = append(objs, b.CSV)
	}
	for _, crd := range b.V1CRDs {
		objs = append(objs, crd)
	}
	for _, u := range b.Objects {
		objs = append(objs, u)
	}
	validators := validation.DefaultBundleValidators.WithValidators(validation.ObjectValidator, validation.GoodPracticesValidator)
	for _, res := range validators.Validate(objs...) {
		for _, e := range res.Errors {
			if e.Level == errors.LevelError {
				t.Errorf("%s: %v", res.Name, e)
			} else {
				t.Logf("warning %s: %v", res.Name, e)
			}
		}
	}
	if b.CSV == nil {
		t.Fatal("no CSV in bundle/")
	}
	checkCSV(t, b.CSV)
}

// checkCSV: what docs/install.md ("OLM") promises of the CSV.
func checkCSV(t *testing.T, csv *v1alpha1.ClusterServiceVersion) {
	t.Helper()
	for _, m := range csv.Spec.InstallModes {
		if m.Supported != (m.Type == v1alpha1.InstallModeTypeAllNamespaces) {
			t.Errorf("install mode %s supported=%v; only AllNamespaces is", m.Type, m.Supported)
		}
	}
	var deployments []string
	for _, d := range csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
		deployments = append(deployments, d.Name)
	}
	slices.Sort(deployments)
	if want := []string{"listener-operator", "listener-operator-csi-controller", "listener-operator-olm-deployer"}; !slices.Equal(deployments, want) {
		t.Errorf("deployments %v, want %v", deployments, want)
	}
	var related []string
	for _, r := range csv.Spec.RelatedImages {
		related = append(related, r.Name)
	}
	if want := []string{"csi-provisioner", "listener-operator", "node-driver-registrar"}; !slices.Equal(related, want) {
		t.Errorf("related images %v, want %v", related, want)
	}
	owned := map[string]int{}
	for _, d := range csv.Spec.CustomResourceDefinitions.Owned {
		owned[d.Kind] = len(d.SpecDescriptors)
	}
	for _, kind := range []string{"ListenerClass", "Listener", "PodListeners"} {
		if _, ok := owned[kind]; !ok {
			t.Errorf("CRD of %s not owned", kind)
		}
	}
	for _, path := range []string{"serviceType", "ports[0].port", "className"} {
		if !hasDescriptor(csv, path) {
			t.Errorf("no spec descriptor for %s", path)
		}
	}
}

func hasDescriptor(csv *v1alpha1.ClusterServiceVersion, path string) bool {
	for _, d := range csv.Spec.CustomResourceDefinitions.Owned {
		for _, s := range d.SpecDescriptors {
			if s.Path == path {
				return true
			}
		}
	}
	return false
}

// TestBundleUpToDate: bundle/ is what `make bundle` writes from config/
// today, so a change to config/ cannot leave the bundle behind.
func TestBundleUpToDate(t *testing.T) {
	kustomize := filepath.Join(root, "bin", "tools", "kustomize")
	if _, err := os.Stat(kustomize); err != nil {
		t.Skipf("kustomize is not built (make deploy-tools): %v", err)
	}
	out, err := exec.Command(kustomize, "build", filepath.Join(root, "config", "selfsigned")).Output()
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decode(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	files, err := generate(objs, options{version: "0.1.0", channel: "alpha"})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(root, "bundle", name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("bundle/%s is out of date (err %v): run `make bundle` and commit", name, err)
		}
	}
	// The deployer carries what a CSV cannot.
	var cm unstructured.Unstructured
	for name, data := range files {
		if strings.HasSuffix(name, "_configmap.yaml") {
			if err := decodeInto(data, &cm); err != nil {
				t.Fatal(err)
			}
		}
	}
	keys := cm.GetAnnotations()["listeners.stackable.tech/objects"]
	for _, want := range []string{"daemonset_listener-operator-csi-node.yaml", "csidriver_listeners.stackable.tech.yaml", "storageclass_listeners.stackable.tech.yaml", "mutatingwebhookconfiguration_listener-operator-mutating.yaml", "validatingwebhookconfiguration_listener-operator-validating.yaml"} {
		if !strings.Contains(keys, want) {
			t.Errorf("the olm-deployer's ConfigMap lacks %s (has %s)", want, keys)
		}
	}
}

func decodeInto(data []byte, u *unstructured.Unstructured) error {
	objs, err := decode(bytes.NewReader(data))
	if err == nil && len(objs) == 1 {
		*u = *objs[0]
	}
	return err
}
