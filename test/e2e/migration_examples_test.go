//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// TestStackableExamplesApply applies the Stackable listener-operator's own
// examples (test/e2e/testdata/stackable, copied unchanged from their
// repository) on ours, in the order they are written, with only what this
// cluster cannot run replaced: the image (no registry here) and volumes of
// their other operators (secret-operator). Their three StatefulSets must
// run with a tree in every listener volume; the ListenerClasses and the pod
// of their documentation, whose class names clash with this cluster's
// presets, must be admitted (server-side dry run).
func TestStackableExamplesApply(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	ns := namespace(t, ctx, "stackable-examples")

	for _, f := range []string{"docs-listenerclass-internal-gke.yaml", "docs-listenerclass-public-gke.yaml", "docs-listenerclass-public-onprem.yaml", "docs-usage-pod.yaml"} {
		docs := stackableDocs(t, f)
		out, errOut, err := k8s.run(ctx, toJSONList(t, docs), "apply", "--dry-run=server", "-n", ns, "-f", "-")
		if err != nil {
			t.Errorf("their %s is refused: %v\n%s%s", f, err, out, errOut)
		}
	}

	type mounted struct{ pod, container, path string }
	var want []mounted
	for _, f := range []string{"example-nginx-lb.yaml", "example-nginx-nodeport.yaml", "example-nginx-preprovisioned-lb.yaml"} {
		docs := stackableDocs(t, f)
		for _, d := range docs {
			if d.GetKind() != "StatefulSet" {
				continue
			}
			for _, m := range localize(t, d) {
				want = append(want, mounted{d.GetName() + "-0", m[0], m[1]})
			}
		}
		out, errOut, err := k8s.run(ctx, toJSONList(t, docs), "apply", "-n", ns, "-f", "-")
		if err != nil {
			t.Fatalf("apply their %s: %v\n%s%s", f, err, out, errOut)
		}
		if strings.Contains(errOut, "Warning") {
			t.Logf("%s: %s", f, strings.TrimSpace(errOut))
		}
	}
	for _, sts := range []string{"exposed-nginx-lb", "exposed-nginx-nodeport", "exposed-nginx-preprovisioned-lb"} {
		podsReady(t, ctx, ns, sts, 1, 3*time.Minute)
	}
	for _, m := range want {
		eventually(t, ctx, time.Minute, "a listener tree in "+m.pod+" at "+m.path, func(ctx context.Context) (bool, string) {
			out, errOut, err := k8s.run(ctx, "", "exec", "-n", ns, m.pod, "-c", m.container, "--", "cat", m.path+"/default-address/address")
			if err != nil {
				return false, errOut
			}
			return strings.TrimSpace(out) != "", out
		})
	}
}

// stackableDocs reads one of their vendored YAML files.
func stackableDocs(t *testing.T, name string) []*unstructured.Unstructured {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "stackable", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	var docs []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return docs
		} else if err != nil {
			t.Fatalf("read %s: %v", name, err)
		}
		if len(m) > 0 {
			docs = append(docs, &unstructured.Unstructured{Object: m})
		}
	}
}

// localize makes a StatefulSet of theirs runnable here: the demo image
// instead of nginx, and only listener volumes (their examples also mount
// secret-operator volumes). It returns the listener volumes' container and
// mount path.
func localize(t *testing.T, sts *unstructured.Unstructured) [][2]string {
	t.Helper()
	spec := sts.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	listenerVolumes := map[string]bool{}
	for _, vct := range asSlice(sts.Object["spec"].(map[string]any)["volumeClaimTemplates"]) {
		name, _, _ := unstructured.NestedString(vct.(map[string]any), "metadata", "name")
		listenerVolumes[name] = true
	}
	var kept []any
	for _, v := range asSlice(spec["volumes"]) {
		vm := v.(map[string]any)
		sc, _, _ := unstructured.NestedString(vm, "ephemeral", "volumeClaimTemplate", "spec", "storageClassName")
		switch {
		case sc == v1alpha1.StorageClassName:
			listenerVolumes[vm["name"].(string)] = true
			kept = append(kept, v)
		case sc == "":
			kept = append(kept, v) // a ConfigMap and the like
		}
	}
	if kept == nil {
		delete(spec, "volumes")
	} else {
		spec["volumes"] = kept
	}
	var out [][2]string
	for _, c := range asSlice(spec["containers"]) {
		cm := c.(map[string]any)
		cm["image"] = demoImage
		cm["imagePullPolicy"] = "IfNotPresent"
		var mounts []any
		for _, m := range asSlice(cm["volumeMounts"]) {
			mm := m.(map[string]any)
			name := mm["name"].(string)
			if listenerVolumes[name] {
				out = append(out, [2]string{cm["name"].(string), mm["mountPath"].(string)})
			}
			if listenerVolumes[name] || volumeKept(kept, name) {
				mounts = append(mounts, m)
			}
		}
		cm["volumeMounts"] = mounts
	}
	if len(out) == 0 {
		t.Fatalf("StatefulSet %s mounts no listener volume", sts.GetName())
	}
	return out
}

func volumeKept(kept []any, name string) bool {
	for _, v := range kept {
		if v.(map[string]any)["name"] == name {
			return true
		}
	}
	return false
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

// toJSONList renders objects as a v1 List for kubectl.
func toJSONList(t *testing.T, docs []*unstructured.Unstructured) string {
	t.Helper()
	items := make([]any, 0, len(docs))
	for _, d := range docs {
		items = append(items, d.Object)
	}
	b, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	if err != nil {
		t.Fatal(fmt.Errorf("render list: %w", err))
	}
	return string(b)
}
