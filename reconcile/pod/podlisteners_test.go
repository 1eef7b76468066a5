package pod

import (
	"testing"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// TestPodListenersHash: the hash the cache compares stands for the
// addresses written (the same addresses, in any map order, give the same
// hash; other addresses another), and the annotations say when a volume's
// addresses differ from those the pod started with.
func TestPodListenersHash(t *testing.T) {
	entry := func(addr string, port int32) v1alpha1.PodListener {
		return v1alpha1.PodListener{Scope: v1alpha1.PodListenerScopeNode, IngressAddresses: []v1alpha1.ListenerIngress{
			{Address: addr, AddressType: v1alpha1.AddressTypeIP, Ports: map[string]int32{"http": port, "https": port + 1}}}}
	}
	a := v1alpha1.PodListenersSpec{Listeners: map[string]v1alpha1.PodListener{"listener": entry("10.0.0.1", 30000), "other": entry("10.0.0.2", 30010)}}
	b := v1alpha1.PodListenersSpec{Listeners: map[string]v1alpha1.PodListener{"other": entry("10.0.0.2", 30010), "listener": entry("10.0.0.1", 30000)}}
	moved := v1alpha1.PodListenersSpec{Listeners: map[string]v1alpha1.PodListener{"listener": entry("10.0.0.3", 30000), "other": entry("10.0.0.2", 30010)}}
	ha, _ := podListenersHash(a)
	hb, _ := podListenersHash(b)
	hm, _ := podListenersHash(moved)
	if ha != hb || ha == hm || len(ha) != 16 {
		t.Errorf("hashes: same addresses %q and %q, moved %q", ha, hb, hm)
	}
	ann := podListenersAnnotations(map[string]string{"keep": "x", v1alpha1.AnnotationAddressesChanged: "true"}, ha, a)
	if ann["keep"] != "x" || ann[v1alpha1.AnnotationPodListenersHash] != ha || ann[v1alpha1.AnnotationAddressesChanged] != "" {
		t.Errorf("annotations without a change from start: %v", ann)
	}
	withStart, changed := recordAddressChanges(a, moved)
	if len(changed) != 1 {
		t.Fatalf("changed %v, want the moved volume", changed)
	}
	if ann := podListenersAnnotations(nil, hm, withStart); ann[v1alpha1.AnnotationAddressesChanged] != "true" {
		t.Errorf("annotations after an address change: %v", ann)
	}
}
