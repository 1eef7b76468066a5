package robustness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/addresses"
	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/csi/addresstree"
)

// Told is what one pod's listener volume tells it, as the in-process CSI
// node service published it (Kubelet.Observe): the tree the pod reads,
// and why the last publish was refused ("" when it was not).
type Told struct {
	Tree    Tree
	Refused string
}

// Tree is what a pod reads from its volume: the default address, and
// each address's ports (the tree has one directory per address; a second
// entry of the same address is not in it).
type Tree struct {
	Default string
	Ports   map[string]map[string]int32
}

func (t Tree) String() string {
	if t.Default == "" {
		return "no tree"
	}
	return fmt.Sprintf("default %s, ports %v", t.Default, t.Ports)
}

// treeOf is the tree addrs publish.
func treeOf(addrs []v1alpha1.ListenerIngress) Tree {
	if len(addrs) == 0 {
		return Tree{}
	}
	t := Tree{Default: addrs[0].Address, Ports: map[string]map[string]int32{}}
	for _, a := range addrs {
		if _, seen := t.Ports[a.Address]; !seen {
			t.Ports[a.Address] = map[string]int32{}
			for n, p := range a.Ports {
				t.Ports[a.Address][n] = p
			}
		}
	}
	return t
}

// readTold reads the tree at target as the pod does (an error wrapping
// os.ErrNotExist when nothing was ever published there).
func readTold(target string) (Tree, error) {
	def, err := os.ReadFile(filepath.Join(target, addresstree.DefaultAddress, addresstree.AddressFile))
	if err != nil {
		return Tree{}, err
	}
	t := Tree{Default: string(def), Ports: map[string]map[string]int32{}}
	dirs, err := os.ReadDir(filepath.Join(target, addresstree.AddressesDir))
	if err != nil {
		return Tree{}, err
	}
	for _, d := range dirs {
		dir := filepath.Join(target, addresstree.AddressesDir, d.Name())
		addr, err := os.ReadFile(filepath.Join(dir, addresstree.AddressFile))
		if err != nil {
			return Tree{}, err
		}
		ports := map[string]int32{}
		files, err := os.ReadDir(filepath.Join(dir, addresstree.PortsDir))
		if err != nil {
			return Tree{}, err
		}
		for _, f := range files {
			b, err := os.ReadFile(filepath.Join(dir, addresstree.PortsDir, f.Name()))
			if err != nil {
				return Tree{}, err
			}
			n, err := strconv.Atoi(string(b))
			if err != nil {
				return Tree{}, fmt.Errorf("port file %s holds %q", f.Name(), b)
			}
			ports[f.Name()] = int32(n)
		}
		t.Ports[string(addr)] = ports
	}
	return t, nil
}

// takeWorkloads reads the world's pods, claims, PodListeners,
// StatefulSets, listener volumes and nodes into s.
func (s *Snapshot) takeWorkloads(ctx context.Context, c client.Reader) error {
	for t, ns := range s.World.Tenants {
		var pods corev1.PodList
		var pvcs corev1.PersistentVolumeClaimList
		var pls v1alpha1.PodListenersList
		var sets appsv1.StatefulSetList
		for _, l := range []client.ObjectList{&pods, &pvcs, &pls, &sets} {
			if err := c.List(ctx, l, client.InNamespace(ns)); err != nil {
				return fmt.Errorf("list %T in %s: %w", l, ns, err)
			}
		}
		s.Pods[t], s.Claims[t], s.PodListeners[t], s.StatefulSets[t] = pods.Items, pvcs.Items, pls.Items, sets.Items
	}
	s.Volumes, s.Nodes = map[string]*corev1.PersistentVolume{}, map[string]*corev1.Node{}
	for t := range s.Claims {
		for _, claim := range s.Claims[t] {
			pv := &corev1.PersistentVolume{}
			if claim.Spec.VolumeName != "" && c.Get(ctx, client.ObjectKey{Name: claim.Spec.VolumeName}, pv) == nil {
				s.Volumes[pv.Name] = pv
			}
		}
	}
	for i := range nodeCount {
		node := &corev1.Node{}
		if err := c.Get(ctx, client.ObjectKey{Name: s.World.NodeName(i)}, node); err == nil {
			s.Nodes[node.Name] = node
		}
	}
	return nil
}

// claim is tenant t's claim name, or nil.
func (s *Snapshot) claim(t int, name string) *corev1.PersistentVolumeClaim {
	for i := range s.Claims[t] {
		if s.Claims[t][i].Name == name {
			return &s.Claims[t][i]
		}
	}
	return nil
}

// podListeners is the PodListeners of tenant t's pod uid, or nil.
func (s *Snapshot) podListeners(t int, uid types.UID) *v1alpha1.PodListeners {
	for i := range s.PodListeners[t] {
		if s.PodListeners[t][i].Name == names.PodListenersName(uid) {
			return &s.PodListeners[t][i]
		}
	}
	return nil
}

// PodsToldTheirAddresses: what each Running pod reads from each listener
// volume (the tree the CSI node service published) is what
// addresses.ForPod computes from the API server's state, and what the
// pod's PodListeners says. When ForPod says the pod must wait, the node
// service refuses too, says why, and the tree and PodListeners keep what
// they last held (the same); a refusal while the Listener is Ready (for
// its current spec) must be the node's (its address), not the Listener's.
func PodsToldTheirAddresses(st Step) []string {
	var out []string
	s := st.Cur
	for t := range s.Pods {
		for i := range s.Pods[t] {
			pod := &s.Pods[t][i]
			if pod.Status.Phase != corev1.PodRunning || pod.DeletionTimestamp != nil {
				continue
			}
			for _, vc := range names.PodVolumeClaims(pod) {
				out = append(out, s.volumeTold(t, pod, vc)...)
			}
		}
	}
	return out
}

// volumeTold checks one listener volume of a Running pod.
func (s *Snapshot) volumeTold(t int, pod *corev1.Pod, vc names.VolumeClaim) []string {
	claim := s.claim(t, vc.Claim)
	if claim == nil {
		return nil // deleted under the running pod: kubelet keeps the mount
	}
	use, ok := claims.OfClaim(claim)
	if !ok {
		return nil
	}
	pv := s.Volumes[claim.Spec.VolumeName]
	bound := claims.Bound(claim, use, pv)
	where := fmt.Sprintf("pod %s/%s on %s, volume %s (Listener %s)", pod.Namespace, pod.Name, pod.Spec.NodeName, vc.Volume, bound.Listener)
	told, ok := s.Told[toldKey(pod, vc.Volume)]
	if !ok {
		return []string{where + " is Running, but its volume is not published"}
	}
	l := s.listener(t, bound.Listener)
	var want v1alpha1.PodListener
	werr := fmt.Errorf("its Listener does not exist")
	if l != nil {
		vol := addresses.Volume{PerClaim: bound.Own, Claim: client.ObjectKeyFromObject(claim), ClaimUID: claim.UID}
		if pv != nil {
			vol.Name = pv.Name
		}
		want, werr = addresses.ForPod(addresses.PodVolume{Pod: pod, Volume: vol, Listener: l, Class: s.classOf(l), Node: s.Nodes[pod.Spec.NodeName]})
	}
	var entry *v1alpha1.PodListener
	if pls := s.podListeners(t, pod.UID); pls != nil {
		if e, ok := pls.Spec.Listeners[vc.Volume]; ok {
			entry = &e
		}
	}
	var out []string
	if werr == nil {
		if told.Refused != "" {
			out = append(out, fmt.Sprintf("%s: NodePublishVolume refused (%s), but addresses.ForPod tells it %v", where, told.Refused, want.IngressAddresses))
		} else if wantTree := treeOf(want.IngressAddresses); !reflect.DeepEqual(told.Tree, wantTree) {
			out = append(out, fmt.Sprintf("%s reads %v from its volume, addresses.ForPod says %v", where, told.Tree, wantTree))
		}
		if entry == nil || entry.Scope != want.Scope || !reflect.DeepEqual(entry.IngressAddresses, want.IngressAddresses) {
			out = append(out, fmt.Sprintf("%s: its PodListeners says %+v, addresses.ForPod %+v", where, entry, want))
		}
		return out
	}
	if told.Refused == "" {
		out = append(out, fmt.Sprintf("%s: NodePublishVolume published %v, but addresses.ForPod says it must wait: %v", where, told.Tree, werr))
	}
	if entry != nil && !reflect.DeepEqual(treeOf(entry.IngressAddresses), told.Tree) {
		out = append(out, fmt.Sprintf("%s waits (%v); its volume keeps %v, its PodListeners %v: they must keep the same", where, werr, told.Tree, treeOf(entry.IngressAddresses)))
	}
	if l != nil && told.Refused != "" && readyNow(l) && !strings.Contains(told.Refused, "node") {
		out = append(out, fmt.Sprintf("%s: NodePublishVolume refused (%s), though the Listener is Ready", where, told.Refused))
	}
	return out
}

// addPods counts the world's pods by phase, the StatefulSets, and what the
// Running pods' volumes told them (an address tree, or a refusal).
func (c *Coverage) addPods(st Step) {
	for t := range st.Cur.Pods {
		for _, p := range st.Cur.Pods[t] {
			c.States["pod "+string(p.Status.Phase)]++
		}
		for _, s := range st.Cur.StatefulSets[t] {
			c.States[fmt.Sprintf("StatefulSet of %d replicas", s.Status.Replicas)]++
		}
	}
	for _, told := range st.Cur.Told {
		if told.Refused != "" {
			c.States["volume refused"]++
			c.Messages["volume refused"] = told.Refused
		} else {
			c.States["volume published"]++
			c.Messages["volume published"] = told.Tree.String()
		}
	}
}

// readyNow says whether l is Ready for its current spec.
func readyNow(l *v1alpha1.Listener) bool {
	c := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionReady)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == l.Generation
}
