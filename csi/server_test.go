package csi

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
)

func TestListen(t *testing.T) {
	dir, err := os.MkdirTemp("", "csi")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "csi.sock")
	// A socket left behind by a crashed run.
	stale, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	stale.(*net.UnixListener).SetUnlinkOnClose(false)
	stale.Close()

	lis, err := Listen("unix://" + sock)
	if err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}
	fi, err := os.Stat(sock)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v, want 0600", fi.Mode().Perm())
	}
	if got := lis.Addr().String(); got != sock {
		t.Errorf("Addr() = %s, want %s", got, sock)
	}
	if _, err := os.Lstat(sock + ".binding"); !os.IsNotExist(err) {
		t.Errorf("the temporary socket name is left: %v", err)
	}
	// A client that finds the socket is served (it was listening before
	// it appeared at its path).
	conn, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatalf("dial the socket: %v", err)
	}
	conn.Close()

	// Close removes its own socket, and not one a later run bound there.
	if err := lis.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(sock); !os.IsNotExist(err) {
		t.Errorf("Close left the socket: %v", err)
	}
	first, err := Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	second, err := Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if conn, err := net.Dial("unix", sock); err != nil {
		t.Errorf("the earlier run's Close removed the later run's socket: %v", err)
	} else {
		conn.Close()
	}

	file := filepath.Join(dir, "not-a-socket")
	if err := os.WriteFile(file, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(file); err == nil || !strings.Contains(err.Error(), "is not a socket") {
		t.Errorf("Listen over a regular file = %v, want a refusal", err)
	}
	if b, _ := os.ReadFile(file); string(b) != "keep me" {
		t.Errorf("Listen clobbered a regular file")
	}
}

func TestNewServerNeedsWhatItServes(t *testing.T) {
	for _, tt := range []struct {
		opts Options
		want string
	}{
		{Options{}, "controller service, the node service, or both"},
		{Options{Controller: true}, "live Kubernetes reader are required"},
		{Options{Node: true, Reader: FallbackReader{}, Live: FallbackReader{}}, "node name"},
	} {
		if _, err := NewServer(tt.opts); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("NewServer(%+v) = %v, want an error about %q", tt.opts, err, tt.want)
		}
	}
}

func TestMetricsCountCallsByCode(t *testing.T) {
	d := startDriver(t, Options{})
	ctx := context.Background()
	_, _ = d.controller.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: "a"})
	_, _ = d.controller.DeleteVolume(ctx, &csi.DeleteVolumeRequest{})
	_, _ = d.controller.DeleteVolume(ctx, &csi.DeleteVolumeRequest{})
	want := `
# HELP listener_operator_csi_requests_total CSI calls by method and gRPC result code (OK, or the error's code).
# TYPE listener_operator_csi_requests_total counter
listener_operator_csi_requests_total{code="InvalidArgument",method="DeleteVolume"} 2
listener_operator_csi_requests_total{code="OK",method="DeleteVolume"} 1
`
	if err := testutil.GatherAndCompare(d.metrics, strings.NewReader(want), "listener_operator_csi_requests_total"); err != nil {
		t.Error(err)
	}
	if n, err := testutil.GatherAndCount(d.metrics, "listener_operator_csi_request_duration_seconds"); err != nil || n != 1 {
		t.Errorf("duration histogram has %d series (%v), want 1 (DeleteVolume)", n, err)
	}
}

func TestPanicBecomesInternal(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	call := interceptor(logr.Discard(), m)
	info := &grpc.UnaryServerInfo{FullMethod: "/csi.v1.Node/NodePublishVolume"}
	_, err = call(context.Background(), &csi.NodePublishVolumeRequest{VolumeId: "v"}, info, func(context.Context, any) (any, error) {
		var m map[string]int
		m["boom"] = 1 // a nil map write: a real runtime panic
		return nil, nil
	})
	wantCode(t, err, codes.Internal, "internal error in the listener CSI driver", "assignment to entry in nil map")
	// The server goes on answering.
	if _, err := call(context.Background(), &csi.NodePublishVolumeRequest{VolumeId: "v"}, info, func(context.Context, any) (any, error) {
		return &csi.NodePublishVolumeResponse{}, nil
	}); err != nil {
		t.Errorf("the call after a panic: %v", err)
	}
	want := `
# HELP listener_operator_csi_panics_total CSI calls that panicked (answered with Internal; the driver keeps serving).
# TYPE listener_operator_csi_panics_total counter
listener_operator_csi_panics_total{method="NodePublishVolume"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "listener_operator_csi_panics_total"); err != nil {
		t.Error(err)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP listener_operator_csi_requests_total CSI calls by method and gRPC result code (OK, or the error's code).
# TYPE listener_operator_csi_requests_total counter
listener_operator_csi_requests_total{code="Internal",method="NodePublishVolume"} 1
listener_operator_csi_requests_total{code="OK",method="NodePublishVolume"} 1
`), "listener_operator_csi_requests_total"); err != nil {
		t.Error(err)
	}
}
