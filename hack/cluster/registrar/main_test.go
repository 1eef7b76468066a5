package main

import (
	"context"
	"flag"
	"net"
	"path/filepath"
	"slices"
	"testing"

	csi "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

func TestKnownFlags(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.String("csi-address", "", "")
	fs.String("kubelet-registration-path", "", "")
	known, ignored := knownFlags(fs, []string{
		"--csi-address=/csi/csi.sock", "-kubelet-registration-path=/k/csi.sock", "--v=5", "--timeout=2s", "stray",
	})
	if want := []string{"--csi-address=/csi/csi.sock", "-kubelet-registration-path=/k/csi.sock"}; !slices.Equal(known, want) {
		t.Errorf("known = %v, want %v", known, want)
	}
	if want := []string{"--v=5", "--timeout=2s", "stray"}; !slices.Equal(ignored, want) {
		t.Errorf("ignored = %v, want %v", ignored, want)
	}
}

type identity struct {
	csi.UnimplementedIdentityServer
}

func (identity) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{Name: "listeners.stackable.tech", VendorVersion: "test"}, nil
}

func serve(t *testing.T, register func(*grpc.Server)) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "s.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	register(srv)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return sock
}

// The registrar learns the driver's name from the driver and tells kubelet
// that name and the socket as kubelet sees it.
func TestRegistration(t *testing.T) {
	ctx := t.Context()
	csiSock := serve(t, func(s *grpc.Server) { csi.RegisterIdentityServer(s, identity{}) })
	name, err := driverName(ctx, csiSock)
	if err != nil || name != "listeners.stackable.tech" {
		t.Fatalf("driverName = %q, %v", name, err)
	}

	r := &registrar{driver: name, endpoint: "/var/lib/kubelet/plugins/listeners.stackable.tech/csi.sock"}
	regSock := serve(t, func(s *grpc.Server) { registerapi.RegisterRegistrationServer(s, r) })
	conn, err := grpc.NewClient("unix://"+regSock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	kubelet := registerapi.NewRegistrationClient(conn)
	info, err := kubelet.GetInfo(ctx, &registerapi.InfoRequest{})
	if err != nil {
		t.Fatalf("GetInfo: %v", err)
	}
	if info.Type != registerapi.CSIPlugin || info.Name != name || info.Endpoint != r.endpoint || len(info.SupportedVersions) == 0 {
		t.Errorf("GetInfo = %+v", info)
	}
	if _, err := kubelet.NotifyRegistrationStatus(ctx, &registerapi.RegistrationStatus{PluginRegistered: true}); err != nil || !r.registered.Load() {
		t.Errorf("after a successful registration: registered=%v, err %v", r.registered.Load(), err)
	}
	if _, err := kubelet.NotifyRegistrationStatus(ctx, &registerapi.RegistrationStatus{PluginRegistered: false, Error: "boom"}); err != nil || r.registered.Load() {
		t.Errorf("after a refused registration: registered=%v, err %v", r.registered.Load(), err)
	}
}

// A driver that is not up yet is waited for until the context ends.
func TestDriverNameWaitsForTheDriver(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := driverName(ctx, filepath.Join(t.TempDir(), "absent.sock")); err == nil {
		t.Error("driverName of an absent driver with a cancelled context succeeded")
	}
}
