package csi

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/api/volumes"
	"github.com/listener-operator/listener-operator/csi/addresstree"
	"github.com/listener-operator/listener-operator/internal/agreement"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// TestPodAddressAgreement: the tree the node plugin writes for each shape
// of internal/agreement's pod-address table is what the table says, which
// is what the pod reconciler puts in PodListeners too
// (reconcile.TestPodAddressAgreement); a shape that waits gets no tree, and
// kubelet retries. The addresses are those NodePublishVolume computes: the
// volume context CreateVolume wrote, the pod, Listener, class and node
// read through a fake client.
func TestPodAddressAgreement(t *testing.T) {
	for _, s := range agreement.PodAddressShapes() {
		t.Run(s.Name, func(t *testing.T) {
			objs := []client.Object{s.Listener, s.Pod}
			if s.Class != nil {
				objs = append(objs, s.Class)
			}
			if s.Node != nil {
				objs = append(objs, s.Node)
			}
			c := fake.NewClientBuilder().WithScheme(testenv.Scheme()).WithObjects(objs...).Build()
			srv := &nodeServer{nodeName: agreement.PodNode, reader: c, live: c}
			claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: agreement.Namespace, Name: agreement.PodListener, UID: s.ClaimUID}}
			vctx := volumes.Context(claim, claims.Use{Listener: s.Listener.Name, Own: s.PerClaim})
			vctx[v1alpha1.ContextPodName], vctx[v1alpha1.ContextPodNamespace] = s.Pod.Name, s.Pod.Namespace
			addrs, _, err := srv.addressesFor(t.Context(), agreement.PodVolume, vctx)
			if s.Want == nil {
				if c := status.Code(err); c != codes.Unavailable && c != codes.FailedPrecondition {
					t.Fatalf("NodePublishVolume would publish %v, %v; want a wait (Unavailable or FailedPrecondition)", addrs, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			target := t.TempDir()
			if _, err := addresstree.Write(target, addrs); err != nil {
				t.Fatal(err)
			}
			if got := readTree(t, target, s.Want); !reflect.DeepEqual(got, s.Want) {
				t.Errorf("the volume tree holds %+v\nwant %+v", got, s.Want)
			}
		})
	}
}

// readTree reads back, in the order of want, the addresses a pod reads
// from its volume: addresses/<a>/address and addresses/<a>/ports/<p>; the
// default address is the first.
func readTree(t *testing.T, target string, want []v1alpha1.ListenerIngress) []v1alpha1.ListenerIngress {
	t.Helper()
	var got []v1alpha1.ListenerIngress
	for _, w := range want {
		dir := filepath.Join(target, "addresses", w.Address)
		addr, err := os.ReadFile(filepath.Join(dir, "address"))
		if err != nil {
			t.Fatalf("the tree lacks %s: %v", w.Address, err)
		}
		ing := v1alpha1.ListenerIngress{Address: string(addr), AddressType: w.AddressType, Ports: map[string]int32{}}
		entries, err := os.ReadDir(filepath.Join(dir, "ports"))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			b, err := os.ReadFile(filepath.Join(dir, "ports", e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			n, err := strconv.Atoi(string(b))
			if err != nil {
				t.Fatalf("port file %s: %q", e.Name(), b)
			}
			ing.Ports[e.Name()] = int32(n)
		}
		got = append(got, ing)
	}
	def, err := os.ReadFile(filepath.Join(target, "default-address", "address"))
	if err != nil || len(want) > 0 && string(def) != want[0].Address {
		t.Errorf("default-address/address = %q (%v), want %s", def, err, want[0].Address)
	}
	return got
}
