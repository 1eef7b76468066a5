package csi

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"strings"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/go-logr/logr"
	"google.golang.org/grpc"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// The reads the CSI controller makes; `make manifests` turns these into
// the listener-operator-csi ClusterRole. Only ListenerClasses are watched
// (few, cluster-wide policy); claims, shared Listeners and volumes are read
// one at a time when csi-provisioner asks (volumes listed a page at a time,
// by the listener-volume label, only to find one created by hand). The
// node plugin's role is generated from package noderbac.
//
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get
// +kubebuilder:rbac:groups="",resources=persistentvolumes,verbs=get;list
// +kubebuilder:rbac:groups=listeners.stackable.tech,resources=listeners,verbs=get
// +kubebuilder:rbac:groups=listeners.stackable.tech,resources=listenerclasses,verbs=get;list;watch

// Options configure a Server.
type Options struct {
	// Controller serves the CSI controller service (CreateVolume and friends).
	Controller bool
	// Node serves the CSI node service (NodePublishVolume and friends).
	Node bool
	// NodeName is the Kubernetes node this node plugin runs on; required
	// with Node.
	NodeName string
	// SealVolumes mounts every published volume as its own tmpfs, capped
	// at VolumeSizeLimit bytes and VolumeInodeLimit entries (noexec,
	// nosuid, nodev), so a pod cannot fill the node's disk through it. It
	// needs CAP_SYS_ADMIN and Bidirectional mount propagation of kubelet's
	// pods directory. Off, trees are plain directories on the node's disk.
	SealVolumes bool
	// DriverName defaults to v1alpha1.DriverName.
	DriverName string
	// Version is reported by GetPluginInfo.
	Version string
	// Reader reads Listeners, classes, Pods, Nodes and (controller)
	// PersistentVolumes: a cache from NewCache wrapped in a FallbackReader,
	// and for a node plugin in a ListenerScope (a VolumeBinder, which the
	// node service then tells which volume uses which Listener).
	Reader client.Reader
	// Live reads claims and volumes one at a time from the API server, on
	// paths too rare to justify watching every claim and volume.
	Live client.Reader
	// Log receives one line per call (method, volume id, duration, code).
	Log logr.Logger
	// Metrics, if set, records per-call latency and result codes.
	Metrics *Metrics
	// Tracing, if set, runs first on every call (cmd/ sets the
	// OpenTelemetry interceptor when tracing is configured).
	Tracing grpc.UnaryServerInterceptor
	// GracefulStopTimeout bounds how long Serve waits for calls in flight
	// once its context ends (default 10s).
	GracefulStopTimeout time.Duration
}

// Server is the driver's gRPC server.
type Server struct {
	opts Options
	grpc *grpc.Server
	// node is the node service, if served.
	node *nodeServer
}

// NewServer checks opts and registers the requested services.
func NewServer(opts Options) (*Server, error) {
	if !opts.Controller && !opts.Node {
		return nil, errors.New("serve the controller service, the node service, or both")
	}
	if opts.Reader == nil || opts.Live == nil {
		return nil, errors.New("a cached and a live Kubernetes reader are required")
	}
	if opts.Node && opts.NodeName == "" {
		return nil, errors.New("the node service needs the node name (--node-name or KUBERNETES_NODE_NAME)")
	}
	if opts.DriverName == "" {
		opts.DriverName = v1alpha1.DriverName
	}
	if opts.GracefulStopTimeout == 0 {
		opts.GracefulStopTimeout = 10 * time.Second
	}
	s := &Server{opts: opts}
	interceptors := []grpc.UnaryServerInterceptor{interceptor(opts.Log, opts.Metrics)}
	if opts.Tracing != nil {
		interceptors = append([]grpc.UnaryServerInterceptor{opts.Tracing}, interceptors...)
	}
	s.grpc = grpc.NewServer(grpc.ChainUnaryInterceptor(interceptors...))
	csi.RegisterIdentityServer(s.grpc, &identityServer{name: opts.DriverName, version: opts.Version, controller: opts.Controller})
	if opts.Controller {
		csi.RegisterControllerServer(s.grpc, &controllerServer{driver: opts.DriverName, reader: opts.Reader, live: opts.Live})
	}
	if opts.Node {
		s.node = &nodeServer{nodeName: opts.NodeName, reader: opts.Reader, live: opts.Live, seal: opts.SealVolumes}
		// The reader keeps Listeners for the volumes published here.
		s.node.binder, _ = opts.Reader.(VolumeBinder)
		csi.RegisterNodeServer(s.grpc, s.node)
	}
	return s, nil
}

// Serve answers calls on lis until ctx ends, then stops gracefully (calls
// in flight finish, up to GracefulStopTimeout).
func (s *Server) Serve(ctx context.Context, lis net.Listener) error {
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-done:
			return
		case <-ctx.Done():
		}
		stopped := make(chan struct{})
		go func() { s.grpc.GracefulStop(); close(stopped) }()
		select {
		case <-stopped:
		case <-time.After(s.opts.GracefulStopTimeout):
			s.grpc.Stop()
		}
	}()
	if err := s.grpc.Serve(lis); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return fmt.Errorf("serve CSI on %s: %w", lis.Addr(), err)
	}
	return nil
}

// Listen opens the Unix socket of endpoint ("unix:///path", "unix:/path"
// or a plain path) with mode 0600, replacing a stale socket left by a
// previous run. It refuses to replace anything that is not a socket. The
// socket is bound and restricted under a temporary name and renamed into
// place, so whoever sees it at path finds it listening and 0600: bound
// at path, it was there for a moment with the umask's mode, refusing
// connections (between bind and listen).
func Listen(endpoint string) (net.Listener, error) {
	path := strings.TrimPrefix(strings.TrimPrefix(endpoint, "unix://"), "unix:")
	if path == "" {
		return nil, fmt.Errorf("CSI endpoint %q has no socket path", endpoint)
	}
	if err := removeStaleSocket(path); err != nil {
		return nil, err
	}
	tmp := path + ".binding"
	if err := removeStaleSocket(tmp); err != nil {
		return nil, err
	}
	lis, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", tmp, err)
	}
	if err := os.Chmod(tmp, 0o600); err != nil {
		lis.Close()
		return nil, fmt.Errorf("restrict %s to its owner: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		lis.Close()
		return nil, fmt.Errorf("move the socket into place at %s: %w", path, err)
	}
	// The listener would unlink the temporary name on Close; socketListener
	// removes the socket at path instead, while it is still this one.
	lis.SetUnlinkOnClose(false)
	fi, err := os.Stat(path)
	if err != nil {
		lis.Close()
		return nil, fmt.Errorf("inspect %s: %w", path, err)
	}
	return &socketListener{lis: lis, path: path, file: fi}, nil
}

// removeStaleSocket removes a socket at path and refuses anything else.
func removeStaleSocket(path string) error {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("inspect CSI endpoint %s: %w", path, err)
	case fi.Mode()&fs.ModeSocket == 0:
		return fmt.Errorf("CSI endpoint %s exists and is not a socket: refusing to replace it", path)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("remove stale socket %s: %w", path, err)
	}
	return nil
}

// socketListener is the CSI socket's listener. Close removes the socket
// file only while it is still this listener's: a process that started
// since and bound its own there keeps it.
type socketListener struct {
	lis  *net.UnixListener
	path string
	file fs.FileInfo
}

func (l *socketListener) Accept() (net.Conn, error) { return l.lis.Accept() }

// Addr is the socket's final path (the listener was bound under another).
func (l *socketListener) Addr() net.Addr { return &net.UnixAddr{Name: l.path, Net: "unix"} }

func (l *socketListener) Close() error {
	err := l.lis.Close()
	if fi, statErr := os.Stat(l.path); statErr == nil && os.SameFile(fi, l.file) {
		if rmErr := os.Remove(l.path); rmErr != nil && err == nil {
			err = rmErr
		}
	}
	return err
}
