// Command registrar registers a CSI node plugin with kubelet, doing the part of
// node-driver-registrar the local cluster needs: it asks the driver for its
// name over --csi-address, serves kubelet's plugin registration API on
// <plugin-registration-path>/<driver>-reg.sock, and reports health on
// --http-endpoint. It accepts node-driver-registrar's flags so the project's
// manifests run unchanged; flags it has no use for are logged and ignored.
// (node-driver-registrar's module versions are refused by the module proxy.)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	csi "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

type registrar struct {
	registerapi.UnimplementedRegistrationServer
	driver, endpoint string
	registered       atomic.Bool
}

func (r *registrar) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return &registerapi.PluginInfo{
		Type:              registerapi.CSIPlugin,
		Name:              r.driver,
		Endpoint:          r.endpoint,
		SupportedVersions: []string{"1.0.0"},
	}, nil
}

func (r *registrar) NotifyRegistrationStatus(_ context.Context, s *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	if !s.PluginRegistered {
		r.registered.Store(false)
		log.Printf("kubelet refused the registration of %s: %s", r.driver, s.Error)
		return &registerapi.RegistrationStatusResponse{}, nil
	}
	r.registered.Store(true)
	log.Printf("kubelet registered %s at %s", r.driver, r.endpoint)
	return &registerapi.RegistrationStatusResponse{}, nil
}

// knownFlags splits args into those this command defines and the rest of
// node-driver-registrar's flags, which it ignores.
func knownFlags(fs *flag.FlagSet, args []string) (known, ignored []string) {
	for _, a := range args {
		name := strings.TrimLeft(a, "-")
		name, _, _ = strings.Cut(name, "=")
		if strings.HasPrefix(a, "-") && fs.Lookup(name) != nil {
			known = append(known, a)
		} else {
			ignored = append(ignored, a)
		}
	}
	return known, ignored
}

func driverName(ctx context.Context, csiAddress string) (string, error) {
	target := "unix://" + strings.TrimPrefix(csiAddress, "unix://")
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return "", fmt.Errorf("connect to %s: %w", csiAddress, err)
	}
	defer conn.Close()
	for {
		callCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		info, err := csi.NewIdentityClient(conn).GetPluginInfo(callCtx, &csi.GetPluginInfoRequest{})
		cancel()
		if err == nil {
			return info.GetName(), nil
		}
		log.Printf("waiting for the driver at %s: %v", csiAddress, err)
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}

func main() {
	fs := flag.NewFlagSet("registrar", flag.ExitOnError)
	csiAddress := fs.String("csi-address", "/csi/csi.sock", "the driver's socket inside this container")
	kubeletPath := fs.String("kubelet-registration-path", "", "the driver's socket as kubelet sees it on the host")
	regDir := fs.String("plugin-registration-path", "/registration", "kubelet's plugins_registry directory inside this container")
	httpEndpoint := fs.String("http-endpoint", "", "address for /healthz (e.g. :9809); empty disables it")
	known, ignored := knownFlags(fs, os.Args[1:])
	_ = fs.Parse(known)
	if len(ignored) > 0 {
		log.Printf("ignoring node-driver-registrar flags this registrar does not need: %v", ignored)
	}
	if *kubeletPath == "" {
		log.Fatal("--kubelet-registration-path is required")
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	name, err := driverName(ctx, *csiAddress)
	if err != nil {
		log.Fatalf("get the driver name: %v", err)
	}
	r := &registrar{driver: name, endpoint: *kubeletPath}

	sock := filepath.Join(*regDir, name+"-reg.sock")
	if err := os.Remove(sock); err != nil && !errors.Is(err, os.ErrNotExist) {
		log.Fatalf("remove stale socket %s: %v", sock, err)
	}
	lis, err := net.Listen("unix", sock)
	if err != nil {
		log.Fatalf("listen on %s: %v", sock, err)
	}
	srv := grpc.NewServer()
	registerapi.RegisterRegistrationServer(srv, r)

	if *httpEndpoint != "" {
		mux := http.NewServeMux()
		mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
			if _, err := os.Stat(sock); err != nil {
				http.Error(w, "registration socket missing: "+err.Error(), http.StatusInternalServerError)
				return
			}
			fmt.Fprintln(w, "ok")
		})
		hs := &http.Server{Addr: *httpEndpoint, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go func() { log.Printf("health server: %v", hs.ListenAndServe()) }()
	}

	go func() {
		<-ctx.Done()
		srv.GracefulStop()
	}()
	log.Printf("serving the registration of %s on %s", name, sock)
	if err := srv.Serve(lis); err != nil {
		log.Fatalf("serve: %v", err)
	}
	_ = os.Remove(sock)
}
