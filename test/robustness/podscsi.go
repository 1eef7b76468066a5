package robustness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	csispec "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/go-logr/logr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/csi"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// csiNodeUser is the CSI node plugin's identity: bound to the node role
// config/csi/rbac ships, nothing more.
const csiNodeUser = "listener-operator-csi-node"

// startKubelet installs the listener storage class and CSIDriver, serves
// the CSI driver's node service in this process on a Unix socket, as its
// own identity, reading the API server live (no cache: a publish after
// the operator settled reads what the invariants read), and returns the
// Kubelet that calls it, and a stop that waits for the server to end.
func startKubelet(ctx context.Context, e *testenv.Env) (*Kubelet, func(), error) {
	for _, f := range []string{"storageclass.yaml", "csidriver.yaml"} {
		if out, err := e.Kubectl(ctx, nil, "apply", "-f", filepath.Join(testenv.RepoRoot(), "config", "csi", f)); err != nil {
			return nil, nil, fmt.Errorf("apply config/csi/%s: %v: %s", f, err, out)
		}
	}
	cfg, err := e.UserWithClusterRole(ctx, csiNodeUser, filepath.Join(testenv.RepoRoot(), "config", "csi", "rbac", "node_role.yaml"))
	if err != nil {
		return nil, nil, fmt.Errorf("CSI node identity: %w", err)
	}
	live, err := client.New(cfg, client.Options{Scheme: e.Scheme})
	if err != nil {
		return nil, nil, err
	}
	srv, err := csi.NewServer(csi.Options{Node: true, NodeName: "robustness", Reader: live, Live: live, Log: logr.Discard()})
	if err != nil {
		return nil, nil, err
	}
	// Socket paths are limited to about 100 bytes: a short temp dir.
	dir, err := os.MkdirTemp("", "rbcsi")
	if err != nil {
		return nil, nil, err
	}
	socket := filepath.Join(dir, "csi.sock")
	lis, err := csi.Listen("unix://" + socket)
	if err != nil {
		return nil, nil, err
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(sctx, lis) }()
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		cancel()
		return nil, nil, err
	}
	stop := func() {
		_ = conn.Close()
		cancel()
		if err := <-done; err != nil {
			fmt.Fprintf(os.Stderr, "CSI node service: %v\n", err)
		}
		_ = os.RemoveAll(dir)
	}
	k := &Kubelet{Admin: e.Client, Node: csispec.NewNodeClient(conn), Dir: filepath.Join(dir, "kubelet"), Bound: 3 * time.Second}
	return k, stop, nil
}
