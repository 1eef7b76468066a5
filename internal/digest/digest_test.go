package digest

import (
	"testing"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// TestJSONGolden pins digests as the operator computed them before they
// were computed here: a Service's hash annotation and a PodListeners'. A
// changed digest rewrites every Service and PodListeners on upgrade.
func TestJSONGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    any
		want string
	}{
		{"a Service's applied fields", map[string]any{"metadata": map[string]any{"name": "web", "labels": map[string]any{"b": "2", "a": "1"}}, "spec": map[string]any{"ports": []any{map[string]any{"port": int64(80)}}}}, "5604e8b58f561cda"},
		{"an empty PodListeners spec", v1alpha1.PodListenersSpec{}, "44136fa355b3678a"},
	} {
		got, err := JSON(tc.v)
		if err != nil || got != tc.want {
			t.Errorf("JSON(%s) = %q, %v; want %q (a changed digest rewrites every such object on upgrade)", tc.name, got, err, tc.want)
		}
	}
}

// TestJSONKeyOrder: maps with the same entries have the same digest,
// whatever order they were filled in.
func TestJSONKeyOrder(t *testing.T) {
	a, _ := JSON(map[string]string{"x": "1", "y": "2"})
	b, _ := JSON(map[string]string{"y": "2", "x": "1"})
	c, _ := JSON(map[string]string{"x": "1", "y": "3"})
	if a != b || a == c {
		t.Errorf("digests %s, %s (same entries) and %s (other entries): want the first two equal and the third different", a, b, c)
	}
}
