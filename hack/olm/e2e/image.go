package main

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path"
	"runtime"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// entry is one file of a layer: a copy of src, inline data, a symlink or
// (dir) a directory, owned by uid.
type entry struct {
	name, src, link string
	data            []byte
	mode            int64
	dir             bool
	uid             int
}

func bin(name, src string) entry { return entry{name: name, src: src, mode: 0o755} }

// Fixed times keep a layer's digest the same for the same content, so a
// second run pushes and pulls nothing new.
var epoch = time.Unix(0, 0)

// layer is a tar of entries, with their parent directories.
func layer(entries ...entry) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	for _, e := range entries {
		for d := path.Dir(e.name); d != "." && !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
			mode := int64(0o755)
			if d == "tmp" {
				mode = 0o1777
			}
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: mode, ModTime: epoch}); err != nil {
				return nil, err
			}
		}
		if e.dir {
			dirs[e.name] = true
		}
		if err := writeEntry(tw, e); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }, fastGzip)
}

func writeEntry(tw *tar.Writer, e entry) error {
	if e.link != "" {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: e.name, Linkname: e.link, Mode: 0o777, ModTime: epoch})
	}
	if e.dir {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: e.name + "/", Mode: 0o755, Uid: e.uid, Gid: e.uid, ModTime: epoch})
	}
	data := e.data
	if e.src != "" {
		var err error
		if data, err = os.ReadFile(e.src); err != nil {
			return err
		}
	}
	mode := e.mode
	if mode == 0 {
		mode = 0o644
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: e.name, Mode: mode, Uid: e.uid, Gid: e.uid, Size: int64(len(data)), ModTime: epoch}); err != nil {
		return err
	}
	_, err := tw.Write(data)
	return err
}

// imageConfig is what an image says about how it runs.
type imageConfig struct {
	entrypoint, cmd []string
	user            string
	labels          map[string]string
}

// image stacks layers (one per large binary, so images that share opm
// share its layer) and sets the platform: containerd skips images without
// one on import, and a pull by digest must find it to run.
func image(cfg imageConfig, layers ...v1.Layer) (v1.Image, error) {
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Created = v1.Time{Time: epoch}
	cf.Config.Entrypoint, cf.Config.Cmd = cfg.entrypoint, cfg.cmd
	cf.Config.Env = []string{"PATH=/bin"}
	cf.Config.User = cfg.user
	cf.Config.Labels = cfg.labels
	return mutate.ConfigFile(img, cf)
}

// busybox is a layer with /bin/busybox and the applets OLM's pods call
// (its unpack Job runs /bin/cp in OLM's image; OLM's own Dockerfile links
// cp to distroless' busybox the same way).
func busybox(src string, applets ...string) (v1.Layer, error) {
	es := []entry{bin("bin/busybox", src)}
	for _, a := range applets {
		es = append(es, entry{name: "bin/" + a, link: "busybox"})
	}
	return layer(es...)
}
