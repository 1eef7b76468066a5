package csi

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/api/volumes"
)

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the pod cannot read %s: %v", path, err)
	}
	return string(b)
}

func publish(d *driver, volumeID, target string, vctx map[string]string) error {
	_, err := d.node.NodePublishVolume(context.Background(), &csi.NodePublishVolumeRequest{
		VolumeId: volumeID, TargetPath: target, VolumeCapability: mountCap(), VolumeContext: vctx, Readonly: true,
	})
	return err
}

func TestNodePublishWritesWhatThePodAdvertises(t *testing.T) {
	f := newFixture(t)
	d := f.startDriver(Options{NodeName: f.node})
	tests := []struct {
		name   string
		class  string
		status v1alpha1.ListenerStatus
		want   map[string]string // file under the target → content
		absent []string          // paths that must not exist
	}{
		{
			name:  "ClusterIP publishes the listener's addresses",
			class: f.clusterIP,
			status: v1alpha1.ListenerStatus{IngressAddresses: []v1alpha1.ListenerIngress{
				{Address: "web.ns.svc.cluster.local", AddressType: v1alpha1.AddressTypeHostname, Ports: map[string]int32{"http": 8080}},
				{Address: "10.96.0.10", AddressType: v1alpha1.AddressTypeIP, Ports: map[string]int32{"http": 8080}},
			}},
			want: map[string]string{
				"default-address/address":                       "web.ns.svc.cluster.local",
				"default-address/ports/http":                    "8080",
				"addresses/10.96.0.10/address":                  "10.96.0.10",
				"addresses/10.96.0.10/ports/http":               "8080",
				"addresses/web.ns.svc.cluster.local/ports/http": "8080",
				"addresses/web.ns.svc.cluster.local/address":    "web.ns.svc.cluster.local",
			},
		},
		{
			name:  "NodePort publishes only the pod's own node with the node ports",
			class: f.nodePort,
			status: v1alpha1.ListenerStatus{
				NodePorts: map[string]int32{"http": 31080},
				IngressAddresses: []v1alpha1.ListenerIngress{
					{Address: "10.9.9.9", AddressType: v1alpha1.AddressTypeIP, Ports: map[string]int32{"http": 31080}},
				},
			},
			want: map[string]string{
				"default-address/address":       "10.1.2.3",
				"default-address/ports/http":    "31080",
				"addresses/10.1.2.3/ports/http": "31080",
			},
			absent: []string{"addresses/10.9.9.9"},
		},
		{
			name:  "LoadBalancer publishes the load balancer",
			class: f.lb,
			status: v1alpha1.ListenerStatus{IngressAddresses: []v1alpha1.ListenerIngress{
				{Address: "lb.example.com", AddressType: v1alpha1.AddressTypeHostname, Ports: map[string]int32{"http": 80}},
			}},
			want: map[string]string{"default-address/address": "lb.example.com", "default-address/ports/http": "80"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := uniq("l")
			f.listener(name, tt.class, tt.status)
			target := filepath.Join(t.TempDir(), "mount")
			if err := publish(d, "vol-"+name, target, f.volumeContext(name, name)); err != nil {
				t.Fatalf("NodePublishVolume: %v", err)
			}
			for path, content := range tt.want {
				if got := readFile(t, filepath.Join(target, path)); got != content {
					t.Errorf("%s = %q, want %q", path, got, content)
				}
			}
			for _, path := range tt.absent {
				if _, err := os.Stat(filepath.Join(target, path)); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("%s should not exist: %v", path, err)
				}
			}
		})
	}
}

func TestNodePublishIsIdempotentAndFollowsTheListener(t *testing.T) {
	f := newFixture(t)
	d := f.startDriver(Options{NodeName: f.node})
	l := f.listener("web", f.clusterIP, v1alpha1.ListenerStatus{IngressAddresses: []v1alpha1.ListenerIngress{
		{Address: "old.example.com", AddressType: v1alpha1.AddressTypeHostname, Ports: map[string]int32{"http": 8080}},
	}})
	target := filepath.Join(t.TempDir(), "mount")
	vctx := f.volumeContext("web", "web")
	for i := range 10 {
		if err := publish(d, "vol-web", target, vctx); err != nil {
			t.Fatalf("publish #%d: %v", i+1, err)
		}
		if got := readFile(t, filepath.Join(target, "default-address/address")); got != "old.example.com" {
			t.Fatalf("after publish #%d default-address/address = %q", i+1, got)
		}
	}
	entries, _ := os.ReadDir(filepath.Join(target, "addresses"))
	if len(entries) != 1 {
		t.Errorf("after 10 publishes addresses/ has %d entries, want 1", len(entries))
	}

	// The reconciler moves the Listener; kubelet republishes (e.g. after a
	// node restart) and the pod sees the new address, and only that.
	f.setStatus(l, v1alpha1.ListenerStatus{IngressAddresses: []v1alpha1.ListenerIngress{
		{Address: "new.example.com", AddressType: v1alpha1.AddressTypeHostname, Ports: map[string]int32{"http": 9090}},
	}})
	if err := publish(d, "vol-web", target, vctx); err != nil {
		t.Fatalf("republish: %v", err)
	}
	if got := readFile(t, filepath.Join(target, "default-address/address")); got != "new.example.com" {
		t.Errorf("after the address changed default-address/address = %q", got)
	}
	if got := readFile(t, filepath.Join(target, "default-address/ports/http")); got != "9090" {
		t.Errorf("after the port changed default-address/ports/http = %q", got)
	}
	if _, err := os.Stat(filepath.Join(target, "addresses/old.example.com")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the old address is still there: %v", err)
	}
}

func TestNodePublishErrors(t *testing.T) {
	f := newFixture(t)
	d := f.startDriver(Options{NodeName: f.node})
	f.listener("pending", f.clusterIP, v1alpha1.ListenerStatus{})
	f.listener("pending-lb", f.lb, v1alpha1.ListenerStatus{})
	f.listener("pending-np", f.nodePort, v1alpha1.ListenerStatus{})
	f.listener("no-class", "does-not-exist", v1alpha1.ListenerStatus{IngressAddresses: []v1alpha1.ListenerIngress{{Address: "a.example", AddressType: v1alpha1.AddressTypeHostname}}})
	f.listener("evil", f.clusterIP, v1alpha1.ListenerStatus{IngressAddresses: []v1alpha1.ListenerIngress{
		{Address: "../../../../etc", AddressType: v1alpha1.AddressTypeHostname, Ports: map[string]int32{"http": 80}},
	}})
	f.listener("evil-port", f.clusterIP, v1alpha1.ListenerStatus{IngressAddresses: []v1alpha1.ListenerIngress{
		{Address: "ok.example", AddressType: v1alpha1.AddressTypeHostname, Ports: map[string]int32{"http": 80, "../../passwd": 80}},
	}})
	ok := f.volumeContext("pending", "pending")
	with := func(k, v string) map[string]string {
		m := f.volumeContext("pending", "pending")
		if k == volumes.ContextListenerName {
			m = f.volumeContext(v, v)
		}
		m[k] = v
		return m
	}
	tests := []struct {
		name string
		req  *csi.NodePublishVolumeRequest
		code codes.Code
		msgs []string
	}{
		{"no volume id", &csi.NodePublishVolumeRequest{TargetPath: "t", VolumeCapability: mountCap(), VolumeContext: ok}, codes.InvalidArgument, []string{"volume id"}},
		{"no target", &csi.NodePublishVolumeRequest{VolumeId: "v", VolumeCapability: mountCap(), VolumeContext: ok}, codes.InvalidArgument, []string{"target path"}},
		{"no capability", &csi.NodePublishVolumeRequest{VolumeId: "v", TargetPath: "t", VolumeContext: ok}, codes.InvalidArgument, []string{"capability"}},
		{"block", &csi.NodePublishVolumeRequest{VolumeId: "v", TargetPath: "t", VolumeCapability: blockCap(), VolumeContext: ok}, codes.InvalidArgument, []string{"block"}},
		{"no pod info", &csi.NodePublishVolumeRequest{VolumeId: "v", TargetPath: "t", VolumeCapability: mountCap(), VolumeContext: map[string]string{volumes.ContextListenerName: "pending", volumes.ContextClaimNamespace: f.ns}}, codes.InvalidArgument, []string{"podInfoOnMount"}},
		{"pod gone", &csi.NodePublishVolumeRequest{VolumeId: "v", TargetPath: "t", VolumeCapability: mountCap(), VolumeContext: with(v1alpha1.ContextPodName, "ghost")}, codes.NotFound, []string{"pod " + f.ns + "/ghost"}},
		{"listener not created yet", &csi.NodePublishVolumeRequest{VolumeId: "v", TargetPath: "t", VolumeCapability: mountCap(), VolumeContext: with(volumes.ContextListenerName, "later")}, codes.Unavailable, []string{"listener " + f.ns + "/later"}},
		{"no addresses yet", &csi.NodePublishVolumeRequest{VolumeId: "v", TargetPath: "t", VolumeCapability: mountCap(), VolumeContext: ok}, codes.Unavailable, []string{"listener " + f.ns + "/pending has no addresses yet: waiting for"}},
		{"load balancer pending", &csi.NodePublishVolumeRequest{VolumeId: "v", TargetPath: "t", VolumeCapability: mountCap(), VolumeContext: with(volumes.ContextListenerName, "pending-lb")}, codes.Unavailable, []string{"pending-lb has no addresses yet", "load balancer"}},
		{"node ports pending", &csi.NodePublishVolumeRequest{VolumeId: "v", TargetPath: "t", VolumeCapability: mountCap(), VolumeContext: with(volumes.ContextListenerName, "pending-np")}, codes.Unavailable, []string{"pending-np has no addresses yet", "node ports"}},
		{"class missing", &csi.NodePublishVolumeRequest{VolumeId: "v", TargetPath: "t", VolumeCapability: mountCap(), VolumeContext: with(volumes.ContextListenerName, "no-class")}, codes.FailedPrecondition, []string{`ListenerClass "does-not-exist"`}},
		{"traversal in address", &csi.NodePublishVolumeRequest{VolumeId: "v", TargetPath: "t", VolumeCapability: mountCap(), VolumeContext: with(volumes.ContextListenerName, "evil")}, codes.InvalidArgument, []string{`invalid address "../../../../etc"`}},
		{"traversal in port name", &csi.NodePublishVolumeRequest{VolumeId: "v", TargetPath: "t", VolumeCapability: mountCap(), VolumeContext: with(volumes.ContextListenerName, "evil-port")}, codes.InvalidArgument, []string{`invalid port name "../../passwd"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parent := t.TempDir()
			if tt.req.TargetPath != "" {
				tt.req.TargetPath = filepath.Join(parent, "mount")
			}
			_, err := d.node.NodePublishVolume(context.Background(), tt.req)
			wantCode(t, err, tt.code, tt.msgs...)
			// A refused publish leaves nothing behind, in or next to the target.
			if entries, _ := os.ReadDir(parent); len(entries) != 0 {
				t.Errorf("a failed publish left %v behind", entries)
			}
		})
	}
}

func TestNodePublishFindsTheListenerThroughTheVolume(t *testing.T) {
	// A volume whose context lacks the listener (provisioned by hand, or by
	// an older driver) is traced through its PersistentVolume and claim.
	f := newFixture(t)
	d := f.startDriver(Options{NodeName: f.node})
	f.listener("shared", f.clusterIP, v1alpha1.ListenerStatus{IngressAddresses: []v1alpha1.ListenerIngress{
		{Address: "shared.example.com", AddressType: v1alpha1.AddressTypeHostname, Ports: map[string]int32{"http": 80}},
	}})
	f.claim("data", map[string]string{v1alpha1.AnnotationListenerName: "shared"})
	pvName := uniq("pv")
	f.create(context.Background(), &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvName},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1")},
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			ClaimRef:    &corev1.ObjectReference{Namespace: f.ns, Name: "data"},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: v1alpha1.DriverName, VolumeHandle: pvName,
			}},
		},
	})
	target := filepath.Join(t.TempDir(), "mount")
	err := publish(d, pvName, target, map[string]string{v1alpha1.ContextPodName: f.pod, v1alpha1.ContextPodNamespace: f.ns})
	if err != nil {
		t.Fatalf("NodePublishVolume: %v", err)
	}
	if got := readFile(t, filepath.Join(target, "default-address/address")); got != "shared.example.com" {
		t.Errorf("default-address/address = %q", got)
	}
	err = publish(d, uniq("pv-missing"), filepath.Join(t.TempDir(), "m"), map[string]string{v1alpha1.ContextPodName: f.pod, v1alpha1.ContextPodNamespace: f.ns})
	wantCode(t, err, codes.NotFound, "PersistentVolume pv-missing")
}

func TestNodeUnpublish(t *testing.T) {
	f := newFixture(t)
	d := f.startDriver(Options{NodeName: f.node})
	f.listener("web", f.clusterIP, v1alpha1.ListenerStatus{IngressAddresses: []v1alpha1.ListenerIngress{{Address: "web.example", AddressType: v1alpha1.AddressTypeHostname, Ports: map[string]int32{"http": 80}}}})
	target := filepath.Join(t.TempDir(), "mount")
	if err := publish(d, "vol", target, f.volumeContext("web", "web")); err != nil {
		t.Fatal(err)
	}
	for i := range 2 { // the second time the target is already gone
		if _, err := d.node.NodeUnpublishVolume(context.Background(), &csi.NodeUnpublishVolumeRequest{VolumeId: "vol", TargetPath: target}); err != nil {
			t.Fatalf("unpublish #%d: %v", i+1, err)
		}
		if _, err := os.Lstat(target); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("after unpublish #%d the target still exists: %v", i+1, err)
		}
	}
	_, err := d.node.NodeUnpublishVolume(context.Background(), &csi.NodeUnpublishVolumeRequest{TargetPath: target})
	wantCode(t, err, codes.InvalidArgument, "volume id")
	_, err = d.node.NodeUnpublishVolume(context.Background(), &csi.NodeUnpublishVolumeRequest{VolumeId: "vol"})
	wantCode(t, err, codes.InvalidArgument, "target path")
}

func TestNodeGetInfo(t *testing.T) {
	d := startDriver(t, Options{NodeName: "worker-7"})
	info, err := d.node.NodeGetInfo(context.Background(), &csi.NodeGetInfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if info.GetNodeId() != "worker-7" || info.GetAccessibleTopology().GetSegments()[v1alpha1.TopologyKeyHostname] != "worker-7" {
		t.Errorf("NodeGetInfo = %v, want node id and %s topology worker-7", info, v1alpha1.TopologyKeyHostname)
	}
}

func TestNodePublishConcurrentCallsOnOneTarget(t *testing.T) {
	f := newFixture(t)
	d := f.startDriver(Options{NodeName: f.node})
	f.listener("web", f.clusterIP, v1alpha1.ListenerStatus{IngressAddresses: []v1alpha1.ListenerIngress{
		{Address: "web.example", AddressType: v1alpha1.AddressTypeHostname, Ports: map[string]int32{"http": 80}},
	}})
	target := filepath.Join(t.TempDir(), "mount")
	errs := make(chan error, 8)
	for range 8 {
		go func() { errs <- publish(d, "vol", target, f.volumeContext("web", "web")) }()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Errorf("concurrent publish: %v", err)
		}
	}
	if got := readFile(t, filepath.Join(target, "default-address/ports/http")); got != "80" {
		t.Errorf("default-address/ports/http = %q", got)
	}
}

// TestNodePublishReadsOnlyTheCache: a node plugin wired as the binary
// wires it (its node's pods, the ListenerClasses, a watch per Listener it
// publishes) publishes again and again without reading the API server; a
// pod its cache has not seen is read live rather than reported gone.
func TestNodePublishReadsOnlyTheCache(t *testing.T) {
	f := newFixture(t)
	p := startNodePlugin(t, f.node, ListenerScopeOptions{})
	f.listener("np", f.nodePort, v1alpha1.ListenerStatus{NodePorts: map[string]int32{"http": 30080}})
	// The first publish of a Listener starts its watch.
	if err := p.publish(t, f, "np", filepath.Join(t.TempDir(), "m")); err != nil {
		t.Fatalf("first publish: %v", err)
	}
	p.calls.reads()
	for i := range 5 {
		if err := p.publish(t, f, "np", filepath.Join(t.TempDir(), "m")); err != nil {
			t.Fatalf("publish #%d: %v", i+1, err)
		}
	}
	if got := p.calls.reads(); len(got) != 0 {
		t.Errorf("5 publishes with warm caches read the API server: %v, want nothing", got)
	}
	// A pod the cache has not seen (here: scheduled to another node, so
	// outside the node-scoped watch) is read live rather than reported gone.
	f.create(context.Background(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "elsewhere"},
		Spec:       corev1.PodSpec{NodeName: f.node + "-other", Containers: []corev1.Container{{Name: "app", Image: "app"}}},
	})
	vctx := f.volumeContext("np", "np")
	vctx[v1alpha1.ContextPodName] = "elsewhere"
	_, err := p.node.NodePublishVolume(t.Context(), &csi.NodePublishVolumeRequest{
		VolumeId: "pvc-np", TargetPath: filepath.Join(t.TempDir(), "m"), VolumeCapability: mountCap(), VolumeContext: vctx,
	})
	wantCode(t, err, codes.FailedPrecondition, "node "+f.node+"-other")
	if got := p.calls.reads(); got["get pods"] == 0 {
		t.Errorf("a pod missing from the cache was not read live: %v", got)
	}
}
