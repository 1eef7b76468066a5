package csi

import (
	"context"
	"path/filepath"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// TestListenerScopeBindsTheVolumesListener: a publish that reads a second
// Listener (through the same reader, in the same call) leaves its volume
// bound to the Listener the volume names: that one's watch is kept while
// the volume is published, and the other one's is not.
func TestListenerScopeBindsTheVolumesListener(t *testing.T) {
	f := newFixture(t)
	f.listener("used", f.clusterIP, hostStatus("used.example.com"))
	f.listener("other", f.clusterIP, hostStatus("other.example.com"))
	other := client.ObjectKey{Namespace: f.ns, Name: "other"}
	p := startScoped(t, f.node, ListenerScopeOptions{}, false, false, func(s *ListenerScope) client.Reader { return secondRead{s, other} })
	target := filepath.Join(t.TempDir(), "target")
	if err := p.publish(t, f, "used", target); err != nil {
		t.Fatalf("publish: %v", err)
	}
	if got := readFile(t, filepath.Join(target, "default-address/address")); got != "used.example.com" {
		t.Errorf("default-address/address = %q, want used.example.com", got)
	}
	p.scope.mu.Lock()
	bound, refs := p.scope.targets[target], map[string]int{}
	for key, w := range p.scope.watches {
		refs[key.Name] = w.refs
	}
	p.scope.mu.Unlock()
	if want := (client.ObjectKey{Namespace: f.ns, Name: "used"}); bound != want {
		t.Errorf("the volume of Listener used is bound to %v, want %v", bound, want)
	}
	if refs["used"] != 1 || refs["other"] != 0 {
		t.Errorf("volumes using each watched Listener = %v, want used: 1, other: 0", refs)
	}
	p.unpublish(t, "used", target)
	wantNoListenerUsers(t, p.scope)
}

// secondRead is a ListenerScope that, after each read of a Listener other
// than other, reads other too, with the same context.
type secondRead struct {
	*ListenerScope
	other client.ObjectKey
}

func (r secondRead) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := r.ListenerScope.Get(ctx, key, obj, opts...)
	if _, ok := obj.(*v1alpha1.Listener); ok && key != r.other {
		_ = r.ListenerScope.Get(ctx, r.other, &v1alpha1.Listener{})
	}
	return err
}
