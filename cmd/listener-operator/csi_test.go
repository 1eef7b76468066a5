package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	csispec "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/listener-operator/listener-operator/internal/testenv"
)

func TestCSIFlags(t *testing.T) {
	tests := []struct {
		args []string
		env  string // KUBERNETES_NODE_NAME
		want string
	}{
		{args: []string{"csi"}, want: "--mode is required"},
		{args: []string{"csi", "--mode=both"}, want: `--mode="both": want controller or node`},
		{args: []string{"csi", "--mode=node"}, want: "--mode=node needs --node-name"},
		{args: []string{"csi", "--mode=node", "--csi-endpoint="}, env: "worker-1", want: "--csi-endpoint is required"},
		{args: []string{"csi", "--mode=node", "--max-listener-watches=0"}, env: "worker-1", want: "--max-listener-watches=0: want at least 1"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Setenv("KUBERNETES_NODE_NAME", tt.env)
			var stdout, stderr bytes.Buffer
			if code := run(t.Context(), tt.args, &stdout, &stderr); code != 1 {
				t.Errorf("exit code = %d, want 1 (stderr: %s)", code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("stderr = %q, want it to mention %q", stderr.String(), tt.want)
			}
		})
	}
}

// TestCSICommandServesNodeService runs `listener-operator csi --mode=node`
// against a real API server and talks CSI to it over its socket, as
// node-driver-registrar and kubelet do.
func TestCSICommandServesNodeService(t *testing.T) {
	e := testenv.Require(t, env)
	t.Setenv("KUBECONFIG", e.Kubeconfig)
	dir, err := os.MkdirTemp("", "csi")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	socket := filepath.Join(dir, "csi.sock")

	ctx, cancel := context.WithCancel(t.Context())
	var stdout, stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"csi", "--mode=node", "--node-name=worker-1", "--csi-endpoint=unix://" + socket, "--metrics-bind-address=127.0.0.1:0",
			// In-process: the test binary keeps its capabilities.
			"--drop-capabilities=false"}, &stdout, &stderr)
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("csi command exited with %d: %s", code, stderr.String())
		}
	})

	// The socket appears once the caches have synced.
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		_, err := os.Stat(socket)
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("no socket at %s: %v (stderr: %s)", socket, err, stderr.String())
	}
	if fi, _ := os.Stat(socket); fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v, want 0600", fi.Mode().Perm())
	}
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	info, err := csispec.NewIdentityClient(conn).GetPluginInfo(ctx, &csispec.GetPluginInfoRequest{})
	if err != nil || info.GetName() != "listeners.stackable.tech" {
		t.Errorf("GetPluginInfo = %v, %v", info, err)
	}
	ni, err := csispec.NewNodeClient(conn).NodeGetInfo(ctx, &csispec.NodeGetInfoRequest{})
	if err != nil || ni.GetNodeId() != "worker-1" {
		t.Errorf("NodeGetInfo = %v, %v", ni, err)
	}
	// The node plugin serves no controller service.
	_, err = csispec.NewControllerClient(conn).CreateVolume(ctx, &csispec.CreateVolumeRequest{Name: "x"})
	if status.Code(err) != codes.Unimplemented {
		t.Errorf("CreateVolume on the node plugin = %v, want Unimplemented", err)
	}
}
