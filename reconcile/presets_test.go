package reconcile

import (
	"testing"

	"github.com/listener-operator/listener-operator/reconcile/internal/reconciletest"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

func TestPresetsCreatedOnceAndNeverOverwritten(t *testing.T) {
	e, ctx, _ := reconciletest.Setup(t)
	c := e.Client
	// The manager of this test package runs with the default preset.
	want := map[string]v1alpha1.ServiceType{
		"cluster-internal":  v1alpha1.ServiceTypeClusterIP,
		"external-unstable": v1alpha1.ServiceTypeNodePort,
		"external-stable":   v1alpha1.ServiceTypeLoadBalancer,
	}
	for name, typ := range want {
		class := &v1alpha1.ListenerClass{}
		testenv.Converges(t, "preset "+name, func() error { return c.Get(ctx, types.NamespacedName{Name: name}, class) })
		if class.Spec.ServiceType != typ {
			t.Errorf("preset %s has type %s, want %s", name, class.Spec.ServiceType, typ)
		}
	}

	// An administrator edits a preset; starting again (with another preset)
	// creates nothing and keeps the edit.
	stable := &v1alpha1.ListenerClass{}
	if err := c.Get(ctx, types.NamespacedName{Name: "external-stable"}, stable); err != nil {
		t.Fatal(err)
	}
	stable.Spec.LoadBalancerClass = ptr.To("example.test/mine")
	if err := c.Update(ctx, stable); err != nil {
		t.Fatal(err)
	}
	created, err := CreatePresets(ctx, c, PresetStableNodes)
	if err != nil || len(created) != 0 {
		t.Fatalf("CreatePresets over existing classes = %v, %v; want nothing created", created, err)
	}
	if err := c.Get(ctx, types.NamespacedName{Name: "external-stable"}, stable); err != nil {
		t.Fatal(err)
	}
	if stable.Spec.ServiceType != v1alpha1.ServiceTypeLoadBalancer || ptr.Deref(stable.Spec.LoadBalancerClass, "") != "example.test/mine" {
		t.Errorf("preset was overwritten: %+v", stable.Spec)
	}
}

func TestPresetClasses(t *testing.T) {
	tests := []struct {
		preset Preset
		want   map[string]string // name → type, pinned
	}{
		{PresetEphemeralNodes, map[string]string{"cluster-internal": "ClusterIP", "external-unstable": "NodePort", "external-stable": "LoadBalancer"}},
		{PresetStableNodes, map[string]string{"cluster-internal": "ClusterIP", "external-unstable": "NodePort", "external-stable": "NodePort pinned"}},
		{PresetNone, map[string]string{}},
	}
	for _, tt := range tests {
		got := map[string]string{}
		for _, c := range PresetClasses(tt.preset) {
			s := string(c.Spec.ServiceType)
			if c.Spec.IsPinned() {
				s += " pinned"
			}
			got[c.Name] = s
		}
		if len(got) != len(tt.want) {
			t.Errorf("%s: classes %v, want %v", tt.preset, got, tt.want)
		}
		for k, v := range tt.want {
			if got[k] != v {
				t.Errorf("%s: class %s = %q, want %q", tt.preset, k, got[k], v)
			}
		}
	}
}
