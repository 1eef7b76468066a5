package main

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// reg is go-containerregistry's in-memory registry, served over plain HTTP
// on loopback: node 1's containerd runs in the host's network namespace,
// and containerd's CRI plugin pulls from a 127.0.0.1 registry over HTTP
// without any configuration (it uses HTTPS for every other host), so the
// cluster's containerd configuration stays as hack/cluster writes it.
type reg struct {
	host string
	srv  *http.Server
}

func startRegistry() (*reg, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	// The registry logs every request; only failures matter here.
	quiet := log.New(io.Discard, "", 0)
	r := &reg{host: ln.Addr().String(), srv: &http.Server{Handler: registry.New(registry.Logger(quiet))}}
	go func() {
		if err := r.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Printf("registry: %v", err)
		}
	}()
	return r, nil
}

func (r *reg) stop() { _ = r.srv.Shutdown(context.Background()) }

// push writes img as <registry>/<repo>:<tag> and returns the reference by
// digest, the only form the installed manifests use.
func (r *reg) push(repo, tag string, img v1.Image) (string, error) {
	ref, err := name.NewTag(fmt.Sprintf("%s/%s:%s", r.host, repo, tag), name.Insecure)
	if err != nil {
		return "", err
	}
	if err := remote.Write(ref, img); err != nil {
		return "", fmt.Errorf("push %s: %w", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s/%s@%s", r.host, repo, d), nil
}

// pushTarball pushes an image tarball that hack/cluster/images wrote.
func (r *reg) pushTarball(path, repo, tag string) (string, error) {
	img, err := tarball.ImageFromPath(path, nil)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return r.push(repo, tag, img)
}

// fastGzip: the layers hold 100 MB binaries; compressing them harder
// saves nothing that matters on loopback.
var fastGzip = tarball.WithCompressionLevel(gzip.BestSpeed)
