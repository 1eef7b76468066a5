package deploy

import (
	"maps"
	"reflect"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestStackablePlacementPlacesEveryWorkload: a values file of the existing
// chart's 25.7 shape places its pods with the top-level nodeSelector,
// tolerations and affinity. Here every workload of the chart follows them
// (the operator's own Deployment, which runs the reconcilers and webhooks,
// both CSI workloads and the `helm test` pod, which needs the node plugin
// where it lands), as "run the operator on infra nodes" means to a user of
// those values (issue 48, shape 8). Each workload is found in the render,
// so that one added later is checked too.
func TestStackablePlacementPlacesEveryWorkload(t *testing.T) {
	infra := []any{map[string]any{"key": "infra", "operator": "Exists", "effect": "NoSchedule"}}
	for _, tc := range []struct {
		name string
		set  []string
		want func(t *testing.T, kind string, spec map[string]any)
	}{
		{"nodeSelector", []string{"nodeSelector.pool=infra"}, func(t *testing.T, kind string, spec map[string]any) {
			if sel, _ := spec["nodeSelector"].(map[string]any); sel["pool"] != "infra" {
				t.Errorf("%s: nodeSelector %v lacks pool: infra", kind, sel)
			}
		}},
		{"tolerations", []string{"tolerations[0].key=infra", "tolerations[0].operator=Exists", "tolerations[0].effect=NoSchedule"}, func(t *testing.T, kind string, spec map[string]any) {
			if !reflect.DeepEqual(spec["tolerations"], infra) {
				t.Errorf("%s: tolerations %v, want %v", kind, spec["tolerations"], infra)
			}
		}},
		{"affinity", []string{"affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key=infra",
			"affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator=Exists"}, func(t *testing.T, kind string, spec map[string]any) {
			if _, found, _ := unstructured.NestedSlice(spec, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms"); !found {
				t.Errorf("%s: affinity %v has not the values' node affinity", kind, spec["affinity"])
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tool(t, "helm")
			var args []string // the `helm test` pod too: no --skip-tests
			for _, v := range tc.set {
				args = append(args, "--set", v)
			}
			out, err := helmRender(namespace, args...)
			if err != nil {
				t.Fatal(err)
			}
			specs := workloads(t, parse(t, out))
			for _, want := range []string{"Deployment/listener-operator", "Deployment/listener-operator-csi-controller", "DaemonSet/listener-operator-csi-node", "Pod/listener-check"} {
				if _, ok := specs[want]; !ok {
					t.Errorf("no %s in the render", want)
				}
			}
			for _, kind := range slices.Sorted(maps.Keys(specs)) {
				tc.want(t, kind, specs[kind])
			}
		})
	}
}

// workloads are the pod specs of every object of the render that runs
// pods, by kind/name.
func workloads(t *testing.T, o objects) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, u := range o {
		var path []string
		switch u.GetKind() {
		case "Pod":
			path = []string{"spec"}
		case "Deployment", "DaemonSet", "StatefulSet", "ReplicaSet", "Job":
			path = []string{"spec", "template", "spec"}
		case "CronJob":
			path = []string{"spec", "jobTemplate", "spec", "template", "spec"}
		default:
			continue
		}
		spec, found, err := unstructured.NestedMap(u.Object, path...)
		if err != nil || !found {
			t.Fatalf("%s %s: no pod spec: %v", u.GetKind(), u.GetName(), err)
		}
		out[u.GetKind()+"/"+u.GetName()] = spec
	}
	return out
}
