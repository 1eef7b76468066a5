package csi

import (
	"context"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// identityServer tells the sidecars and kubelet who the driver is.
type identityServer struct {
	csi.UnimplementedIdentityServer
	name       string
	version    string
	controller bool
}

var _ csi.IdentityServer = (*identityServer)(nil)

// GetPluginInfo reports the driver name and version.
func (s *identityServer) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{Name: s.name, VendorVersion: s.version}, nil
}

// GetPluginCapabilities offers topology, and the controller service where
// this process serves it.
func (s *identityServer) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	caps := []*csi.PluginCapability{service(csi.PluginCapability_Service_VOLUME_ACCESSIBILITY_CONSTRAINTS)}
	if s.controller {
		caps = append(caps, service(csi.PluginCapability_Service_CONTROLLER_SERVICE))
	}
	return &csi.GetPluginCapabilitiesResponse{Capabilities: caps}, nil
}

func service(t csi.PluginCapability_Service_Type) *csi.PluginCapability {
	return &csi.PluginCapability{Type: &csi.PluginCapability_Service_{Service: &csi.PluginCapability_Service{Type: t}}}
}

// Probe reports ready: the driver has no backend that could be down (reads
// that fail report Unavailable on the call that makes them).
func (s *identityServer) Probe(context.Context, *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	return &csi.ProbeResponse{Ready: wrapperspb.Bool(true)}, nil
}
