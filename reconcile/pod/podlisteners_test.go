package pod

import (
	"reflect"
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

// TestPodListenersWaiting: a volume whose pod waits (its Listener may not
// be published, or has no addresses yet) keeps the entry last written,
// addresses at start included, as the node plugin keeps the pod's tree;
// a volume that never had one gets none; the hash written stands for the
// waiting volumes too, so a pod that keeps waiting writes nothing, and
// equals the plain hash when none waits.
func TestPodListenersWaiting(t *testing.T) {
	entry := func(addr string) v1alpha1.PodListener {
		return v1alpha1.PodListener{Scope: v1alpha1.PodListenerScopeCluster, IngressAddresses: []v1alpha1.ListenerIngress{
			{Address: addr, AddressType: v1alpha1.AddressTypeHostname, Ports: map[string]int32{"http": 80}}}}
	}
	held := entry("new.example.com")
	held.AddressesAtStart = entry("old.example.com").IngressAddresses
	old := v1alpha1.PodListenersSpec{Listeners: map[string]v1alpha1.PodListener{"a": entry("a.example.com"), "b": held}}
	cur := v1alpha1.PodListenersSpec{Listeners: map[string]v1alpha1.PodListener{"a": entry("a2.example.com")}}
	got, changed := recordAddressChanges(old, keepWaiting(old, cur, []string{"b", "c"}))
	if !reflect.DeepEqual(got.Listeners["b"], held) {
		t.Errorf("waiting volume b: %+v, want its entry as written %+v", got.Listeners["b"], held)
	}
	if e, ok := got.Listeners["c"]; ok {
		t.Errorf("waiting volume c, which never had an entry, has %+v", e)
	}
	if len(changed) != 1 || changed[0] != "a" {
		t.Errorf("changed %v, want [a] (b waits: it did not change)", changed)
	}
	plain, _ := podListenersHash(cur)
	none, _ := writtenHash(cur, nil)
	waiting, _ := writtenHash(cur, []string{"b"})
	if none != plain || waiting == plain {
		t.Errorf("written hashes: none waiting %q (plain %q), b waiting %q", none, plain, waiting)
	}
}
