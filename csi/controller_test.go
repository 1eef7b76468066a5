package csi

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listener-operator/listener-operator/api/addresses"
	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/api/volumes"
)

func createReq(name string, f *fixture, claim string, topo *csi.TopologyRequirement) *csi.CreateVolumeRequest {
	return &csi.CreateVolumeRequest{
		Name:                      name,
		VolumeCapabilities:        []*csi.VolumeCapability{mountCap()},
		Parameters:                map[string]string{v1alpha1.ParamPVCName: claim, v1alpha1.ParamPVCNamespace: f.ns, v1alpha1.ParamPVName: name},
		AccessibilityRequirements: topo,
	}
}

// scheduled is what csi-provisioner sends with delayed binding once the
// scheduler picked node: that node first among the preferred topologies.
func scheduled(node string, others ...string) *csi.TopologyRequirement {
	req := &csi.TopologyRequirement{}
	for _, n := range append([]string{node}, others...) {
		t := &csi.Topology{Segments: map[string]string{v1alpha1.TopologyKeyHostname: n}}
		req.Preferred = append(req.Preferred, t)
		req.Requisite = append(req.Requisite, t)
	}
	// Requisite order is not the scheduler's choice.
	for i, j := 0, len(req.Requisite)-1; i < j; i, j = i+1, j-1 {
		req.Requisite[i], req.Requisite[j] = req.Requisite[j], req.Requisite[i]
	}
	return req
}

func TestCreateVolumeTopology(t *testing.T) {
	f := newFixture(t)
	d := f.startDriver(Options{})
	made := map[string]*corev1.PersistentVolumeClaim{
		"pinned":   f.claim("pinned", map[string]string{v1alpha1.AnnotationListenerClass: f.pinned}),
		"unpinned": f.claim("unpinned", map[string]string{v1alpha1.AnnotationListenerClass: f.nodePort}),
		"internal": f.claim("internal", map[string]string{v1alpha1.AnnotationListenerClass: f.clusterIP}),
	}
	f.listener("shared-pinned", f.pinned, v1alpha1.ListenerStatus{})
	made["by-name"] = f.claim("by-name", map[string]string{v1alpha1.AnnotationListenerName: "shared-pinned"})

	tests := []struct {
		claim        string
		wantNode     string // empty: no topology
		wantListener string
	}{
		{claim: "pinned", wantNode: "node-b", wantListener: "pinned"},
		{claim: "unpinned", wantListener: "unpinned"},
		{claim: "internal", wantListener: "internal"},
		{claim: "by-name", wantNode: "node-b", wantListener: "shared-pinned"},
	}
	for _, tt := range tests {
		t.Run(tt.claim, func(t *testing.T) {
			req := createReq("pvc-"+tt.claim, f, tt.claim, scheduled("node-b", "node-a", "node-c"))
			resp, err := d.controller.CreateVolume(context.Background(), req)
			if err != nil {
				t.Fatalf("CreateVolume: %v", err)
			}
			vol := resp.GetVolume()
			if vol.GetVolumeId() != req.Name || vol.GetCapacityBytes() != 0 {
				t.Errorf("volume id %q capacity %d, want %q and 0", vol.GetVolumeId(), vol.GetCapacityBytes(), req.Name)
			}
			switch topo := vol.GetAccessibleTopology(); {
			case tt.wantNode == "" && len(topo) != 0:
				t.Errorf("unpinned volume got topology %v", topo)
			case tt.wantNode != "" && (len(topo) != 1 || len(topo[0].GetSegments()) != 1 || topo[0].GetSegments()[v1alpha1.TopologyKeyHostname] != tt.wantNode):
				t.Errorf("pinned volume got topology %v, want only %s=%s", topo, v1alpha1.TopologyKeyHostname, tt.wantNode)
			}
			// The claim's UID (a claim made again under the same name is
			// another claim) and whether the Listener is the claim's own.
			want := map[string]string{volumes.ContextClaimNamespace: f.ns, volumes.ContextClaimName: tt.claim, volumes.ContextListenerName: tt.wantListener,
				volumes.ContextClaimUID: string(f.claimUIDs[tt.claim]), volumes.ContextPerClaim: strconv.FormatBool(tt.claim == tt.wantListener)}
			for k, v := range want {
				if vol.GetVolumeContext()[k] != v {
					t.Errorf("volume context %s = %q, want %q", k, vol.GetVolumeContext()[k], v)
				}
			}
			// The operator's provisioner (reconcile/provision) makes the
			// volume csi-provisioner makes from this answer: same context,
			// same node.
			use, _ := claims.OfClaim(made[tt.claim])
			sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.StorageClassName}, Provisioner: v1alpha1.DriverName}
			pv, err := volumes.PersistentVolume(volumes.Request{Claim: made[tt.claim], Use: use, StorageClass: sc, Node: tt.wantNode})
			if err != nil {
				t.Fatalf("the provisioner's volume: %v", err)
			}
			if got := pv.Spec.CSI.VolumeAttributes; !maps.Equal(got, vol.GetVolumeContext()) {
				t.Errorf("the provisioner's volume context %v, CreateVolume's %v", got, vol.GetVolumeContext())
			}
			if got := addresses.PinnedNodes(pv); !slices.Equal(got, slices.DeleteFunc([]string{tt.wantNode}, func(s string) bool { return s == "" })) {
				t.Errorf("the provisioner's volume is pinned to %v, CreateVolume's to %q", got, tt.wantNode)
			}
			// The same request again (csi-provisioner retries) gets the same volume.
			again, err := d.controller.CreateVolume(context.Background(), req)
			if err != nil {
				t.Fatalf("repeated CreateVolume: %v", err)
			}
			if !proto.Equal(again, resp) {
				t.Errorf("repeated CreateVolume = %v, first = %v", again, resp)
			}
		})
	}
}

func TestCreateVolumeErrors(t *testing.T) {
	f := newFixture(t)
	d := f.startDriver(Options{})
	f.claim("pinned", map[string]string{v1alpha1.AnnotationListenerClass: f.pinned})
	f.claim("bare", nil)
	f.claim("unknown-class", map[string]string{v1alpha1.AnnotationListenerClass: "nope"})
	f.claim("unknown-listener", map[string]string{v1alpha1.AnnotationListenerName: "nobody"})
	noParams := createReq("v", f, "pinned", nil)
	noParams.Parameters = nil
	noCaps := createReq("v", f, "pinned", nil)
	noCaps.VolumeCapabilities = nil
	block := createReq("v", f, "pinned", nil)
	block.VolumeCapabilities = []*csi.VolumeCapability{blockCap()}
	tests := []struct {
		name string
		req  *csi.CreateVolumeRequest
		code codes.Code
		msgs []string
	}{
		{"no name", createReq("", f, "pinned", nil), codes.InvalidArgument, []string{"name"}},
		{"no capabilities", noCaps, codes.InvalidArgument, []string{"capabilities"}},
		{"block", block, codes.InvalidArgument, []string{"block"}},
		{"no claim parameters", noParams, codes.InvalidArgument, []string{"--extra-create-metadata"}},
		{"claim missing", createReq("v", f, "ghost", nil), codes.NotFound, []string{"PersistentVolumeClaim " + f.ns + "/ghost not found"}},
		{"claim without annotations", createReq("v", f, "bare", nil), codes.FailedPrecondition, []string{f.ns + "/bare", v1alpha1.AnnotationListenerClass, v1alpha1.AnnotationListenerName}},
		{"class missing", createReq("v", f, "unknown-class", nil), codes.NotFound, []string{`ListenerClass "nope"`}},
		{"listener missing", createReq("v", f, "unknown-listener", nil), codes.NotFound, []string{"listener " + f.ns + "/nobody"}},
		{"pinned without a node", createReq("v", f, "pinned", nil), codes.InvalidArgument, []string{"WaitForFirstConsumer"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := d.controller.CreateVolume(context.Background(), tt.req)
			wantCode(t, err, tt.code, tt.msgs...)
		})
	}
}

func TestDeleteVolume(t *testing.T) {
	d := startDriver(t, Options{})
	if _, err := d.controller.DeleteVolume(context.Background(), &csi.DeleteVolumeRequest{VolumeId: "never-existed"}); err != nil {
		t.Errorf("DeleteVolume of an unknown id: %v", err)
	}
	_, err := d.controller.DeleteVolume(context.Background(), &csi.DeleteVolumeRequest{})
	wantCode(t, err, codes.InvalidArgument, "volume id")
}

func TestValidateVolumeCapabilities(t *testing.T) {
	f := newFixture(t)
	d := f.startDriver(Options{})
	ours, foreign := uniq("pvc"), uniq("pvc")
	for name, driver := range map[string]string{ours: v1alpha1.DriverName, foreign: "other.csi.example"} {
		f.create(context.Background(), &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1")},
				AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
				PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: name}},
			},
		})
	}
	ctx := context.Background()
	resp, err := d.controller.ValidateVolumeCapabilities(ctx, &csi.ValidateVolumeCapabilitiesRequest{VolumeId: ours, VolumeCapabilities: []*csi.VolumeCapability{mountCap()}})
	if err != nil {
		t.Fatalf("ValidateVolumeCapabilities: %v", err)
	}
	if resp.GetConfirmed() == nil || len(resp.GetConfirmed().GetVolumeCapabilities()) != 1 {
		t.Errorf("mount capability not confirmed: %v", resp)
	}
	resp, err = d.controller.ValidateVolumeCapabilities(ctx, &csi.ValidateVolumeCapabilitiesRequest{VolumeId: ours, VolumeCapabilities: []*csi.VolumeCapability{mountCap(), blockCap()}})
	if err != nil {
		t.Fatalf("ValidateVolumeCapabilities: %v", err)
	}
	if resp.GetConfirmed() != nil || resp.GetMessage() == "" {
		t.Errorf("block capability confirmed or unexplained: %v", resp)
	}
	_, err = d.controller.ValidateVolumeCapabilities(ctx, &csi.ValidateVolumeCapabilitiesRequest{VolumeId: "pvc-unknown", VolumeCapabilities: []*csi.VolumeCapability{mountCap()}})
	wantCode(t, err, codes.NotFound, "volume pvc-unknown not found")
	_, err = d.controller.ValidateVolumeCapabilities(ctx, &csi.ValidateVolumeCapabilitiesRequest{VolumeId: foreign, VolumeCapabilities: []*csi.VolumeCapability{mountCap()}})
	wantCode(t, err, codes.NotFound, "no PersistentVolume of driver "+v1alpha1.DriverName+" has that volume handle")
	_, err = d.controller.ValidateVolumeCapabilities(ctx, &csi.ValidateVolumeCapabilitiesRequest{VolumeId: ours})
	wantCode(t, err, codes.InvalidArgument, "capabilities")
	_, err = d.controller.ValidateVolumeCapabilities(ctx, &csi.ValidateVolumeCapabilitiesRequest{VolumeCapabilities: []*csi.VolumeCapability{mountCap()}})
	wantCode(t, err, codes.InvalidArgument, "volume id")
}

func TestIdentity(t *testing.T) {
	d := startDriver(t, Options{Version: "v1.2.3"})
	ctx := context.Background()
	info, err := d.identity.GetPluginInfo(ctx, &csi.GetPluginInfoRequest{})
	if err != nil || info.GetName() != v1alpha1.DriverName || info.GetVendorVersion() != "v1.2.3" {
		t.Errorf("GetPluginInfo = %v, %v", info, err)
	}
	caps, err := d.identity.GetPluginCapabilities(ctx, &csi.GetPluginCapabilitiesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[csi.PluginCapability_Service_Type]bool{}
	for _, c := range caps.GetCapabilities() {
		got[c.GetService().GetType()] = true
	}
	if !got[csi.PluginCapability_Service_CONTROLLER_SERVICE] || !got[csi.PluginCapability_Service_VOLUME_ACCESSIBILITY_CONSTRAINTS] {
		t.Errorf("capabilities %v lack CONTROLLER_SERVICE or VOLUME_ACCESSIBILITY_CONSTRAINTS", caps)
	}
	probe, err := d.identity.Probe(ctx, &csi.ProbeRequest{})
	if err != nil || !probe.GetReady().GetValue() {
		t.Errorf("Probe = %v, %v", probe, err)
	}
	ccaps, err := d.controller.ControllerGetCapabilities(ctx, &csi.ControllerGetCapabilitiesRequest{})
	if err != nil || len(ccaps.GetCapabilities()) != 1 || ccaps.GetCapabilities()[0].GetRpc().GetType() != csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME {
		t.Errorf("ControllerGetCapabilities = %v, %v; want only CREATE_DELETE_VOLUME", ccaps, err)
	}
}
