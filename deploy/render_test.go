package deploy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/listener-operator/listener-operator/internal/testenv"
)

const namespace = "listener-operator"

// tool returns the path of a tool built by `make deploy-tools`.
func tool(t *testing.T, name string) string {
	t.Helper()
	path := filepath.Join(testenv.RepoRoot(), "bin", "tools", name)
	if _, err := os.Stat(path); err != nil {
		if testing.Short() {
			t.Skipf("%s is not built (make deploy-tools)", name)
		}
		t.Fatalf("%s is missing: run `make deploy-tools`: %v", name, err)
	}
	return path
}

func run(t *testing.T, name string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(tool(t, name), args...)
	cmd.Dir = testenv.RepoRoot()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return out
}

func kustomize(t *testing.T, dir string) []byte {
	t.Helper()
	return run(t, "kustomize", "build", dir)
}

func helm(t *testing.T, values ...string) []byte {
	t.Helper()
	return helmIn(t, namespace, values...)
}

// helmIn renders the chart into namespace ns with --set values.
func helmIn(t *testing.T, ns string, values ...string) []byte {
	t.Helper()
	tool(t, "helm")
	out, err := helmTemplate(ns, values...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// helmTemplate renders the chart (without its `helm test` objects) and
// returns helm's error message when it refuses the values.
func helmTemplate(ns string, values ...string) ([]byte, error) {
	args := []string{"--skip-tests"}
	for _, v := range values {
		args = append(args, "--set", v)
	}
	return helmRender(ns, args...)
}

// helmRender runs `helm template` with more arguments (-f, --set, …); the
// `helm test` objects are rendered unless they include --skip-tests.
func helmRender(ns string, more ...string) ([]byte, error) {
	args := append([]string{"template", "listener-operator", "deploy/helm/listener-operator", "--namespace", ns, "--include-crds"}, more...)
	cmd := exec.Command(filepath.Join(testenv.RepoRoot(), "bin", "tools", "helm"), args...)
	cmd.Dir = testenv.RepoRoot()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("helm %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out, nil
}

// objects is a rendering, indexed by kind/namespace/name.
type objects map[string]*unstructured.Unstructured

func key(kind, ns, name string) string { return kind + "/" + ns + "/" + name }

func parse(t *testing.T, data []byte) objects {
	t.Helper()
	out := objects{}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatalf("rendered YAML does not parse: %v", err)
		}
		if len(bytes.TrimSpace(raw)) == 0 || string(raw) == "null" {
			continue
		}
		// Unstructured's decoder keeps integers as int64, as the API
		// machinery (and every comparison below) expects.
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(raw); err != nil {
			t.Fatalf("rendered object does not decode: %v\n%s", err, raw)
		}
		if u.GetKind() == "" || u.GetName() == "" || u.GetAPIVersion() == "" {
			t.Fatalf("rendered object without apiVersion, kind or name: %s", raw)
		}
		k := key(u.GetKind(), u.GetNamespace(), u.GetName())
		if _, dup := out[k]; dup {
			t.Fatalf("rendered twice: %s", k)
		}
		out[k] = u
	}
	return out
}

func (o objects) get(t *testing.T, kind, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u, ok := o[key(kind, ns, name)]
	if !ok {
		t.Fatalf("missing %s %s/%s", kind, ns, name)
	}
	return u
}

func str(t *testing.T, u *unstructured.Unstructured, path ...string) string {
	t.Helper()
	v, _, err := unstructured.NestedString(u.Object, path...)
	if err != nil {
		t.Fatalf("%s %s: %s: %v", u.GetKind(), u.GetName(), strings.Join(path, "."), err)
	}
	return v
}

func slice(t *testing.T, u map[string]any, path ...string) []any {
	t.Helper()
	v, _, err := unstructured.NestedSlice(u, path...)
	if err != nil {
		t.Fatalf("%s: %v", strings.Join(path, "."), err)
	}
	return v
}

// container returns a container of a workload's pod template by name.
func container(t *testing.T, u *unstructured.Unstructured, name string) map[string]any {
	t.Helper()
	for _, c := range slice(t, u.Object, "spec", "template", "spec", "containers") {
		c := c.(map[string]any)
		if c["name"] == name {
			return c
		}
	}
	t.Fatalf("%s %s has no container %s", u.GetKind(), u.GetName(), name)
	return nil
}

func args(t *testing.T, c map[string]any) []string {
	t.Helper()
	var out []string
	for _, a := range slice(t, c, "args") {
		out = append(out, fmt.Sprint(a))
	}
	return out
}

func flagValue(args []string, name string) (string, bool) {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// execGo runs the go command (the tests run under it, so it is there).
func execGo(args ...string) (string, error) {
	out, err := exec.Command("go", args...).Output()
	return string(out), err
}
