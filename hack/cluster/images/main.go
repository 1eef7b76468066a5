// Command images writes OCI image tarballs for `ctr images import` from static
// binaries, with no registry and no Docker engine:
//
//	images -out DIR -busybox /usr/bin/busybox SPEC...
//
// SPEC is REF=BINARY[,busybox][,user=UID[:GID]]: an image REF whose entrypoint
// is BINARY copied to /<name of BINARY>; with busybox, /bin/busybox and a link
// per applet are added so `kubectl exec … cat` works. os/architecture and the
// entrypoint are set explicitly: `ctr images import` skips images without a
// platform. An image is rewritten only when the content of its inputs
// changed.
package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

type spec struct {
	ref     string
	binary  string
	busybox bool
	user    string
}

func parseSpec(s string) (spec, error) {
	ref, rest, ok := strings.Cut(s, "=")
	if !ok || ref == "" || rest == "" {
		return spec{}, fmt.Errorf("image spec %q: want REF=BINARY[,busybox][,user=UID]", s)
	}
	parts := strings.Split(rest, ",")
	sp := spec{ref: ref, binary: parts[0]}
	for _, p := range parts[1:] {
		switch {
		case p == "busybox":
			sp.busybox = true
		case strings.HasPrefix(p, "user="):
			sp.user = strings.TrimPrefix(p, "user=")
		default:
			return spec{}, fmt.Errorf("image spec %q: unknown option %q", s, p)
		}
	}
	return sp, nil
}

// tarName is the file an image is written to: the reference without registry
// punctuation, so it is a plain file name.
func tarName(ref string) string {
	r := strings.NewReplacer("/", "_", ":", "_", "@", "_")
	return r.Replace(ref) + ".tar"
}

type layer struct {
	buf bytes.Buffer
	tw  *tar.Writer
}

func newLayer() *layer {
	l := &layer{}
	l.tw = tar.NewWriter(&l.buf)
	return l
}

// Fixed times keep the layer digest stable between builds of the same binary.
var epoch = time.Unix(0, 0)

func (l *layer) dir(path string, mode int64) error {
	return l.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: path + "/", Mode: mode, ModTime: epoch})
}

func (l *layer) file(path, src string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := l.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: path, Mode: 0o755, Size: int64(len(data)), ModTime: epoch}); err != nil {
		return err
	}
	_, err = l.tw.Write(data)
	return err
}

func (l *layer) link(path, target string) error {
	return l.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: path, Linkname: target, Mode: 0o777, ModTime: epoch})
}

func busyboxApplets(busybox string) ([]string, error) {
	out, err := exec.Command(busybox, "--list").Output()
	if err != nil {
		return nil, fmt.Errorf("list applets of %s: %w", busybox, err)
	}
	return strings.Fields(string(out)), nil
}

func build(sp spec, busybox, outDir string) (string, bool, error) {
	out := filepath.Join(outDir, tarName(sp.ref))
	inputs := []string{sp.binary}
	if sp.busybox {
		inputs = append(inputs, busybox)
	}
	sum, err := inputsDigest(sp, inputs)
	if err != nil {
		return "", false, fmt.Errorf("image %s: %w", sp.ref, err)
	}
	stamp := out + ".inputs"
	if old, err := os.ReadFile(stamp); err == nil && string(old) == sum {
		if _, err := os.Stat(out); err == nil {
			return out, false, nil
		}
	}
	ref, err := name.NewTag(sp.ref)
	if err != nil {
		return "", false, fmt.Errorf("image reference %q: %w", sp.ref, err)
	}
	entry := "/" + filepath.Base(sp.binary)
	l := newLayer()
	steps := []func() error{
		func() error { return l.dir("tmp", 0o1777) },
		func() error { return l.file(entry[1:], sp.binary) },
	}
	if sp.busybox {
		applets, err := busyboxApplets(busybox)
		if err != nil {
			return "", false, err
		}
		steps = append(steps,
			func() error { return l.dir("bin", 0o755) },
			func() error { return l.file("bin/busybox", busybox) })
		for _, a := range applets {
			if a == "busybox" {
				continue
			}
			steps = append(steps, func() error { return l.link("bin/"+a, "busybox") })
		}
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return "", false, fmt.Errorf("image %s: %w", sp.ref, err)
		}
	}
	if err := l.tw.Close(); err != nil {
		return "", false, err
	}
	data := l.buf.Bytes()
	lay, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
	if err != nil {
		return "", false, fmt.Errorf("image %s: layer: %w", sp.ref, err)
	}
	img, err := mutate.AppendLayers(empty.Image, lay)
	if err != nil {
		return "", false, fmt.Errorf("image %s: %w", sp.ref, err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return "", false, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS = "linux"
	cfg.Architecture = runtime.GOARCH
	cfg.Config.Entrypoint = []string{entry}
	cfg.Config.Env = []string{"PATH=/bin"}
	cfg.Config.User = sp.user
	cfg.Created = v1.Time{Time: epoch}
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return "", false, fmt.Errorf("image %s: config: %w", sp.ref, err)
	}
	tmp := out + ".tmp"
	if err := tarball.WriteToFile(tmp, ref, img); err != nil {
		return "", false, fmt.Errorf("write %s: %w", out, err)
	}
	if err := os.Rename(tmp, out); err != nil {
		return "", false, err
	}
	return out, true, os.WriteFile(stamp, []byte(sum), 0o644)
}

// inputsDigest identifies what an image is built from: the spec and the
// content of its files (go build rewrites binaries without changing them, so
// modification times would rebuild, re-import and restart for nothing).
func inputsDigest(sp spec, files []string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%t\x00%s\x00", sp.ref, sp.binary, sp.busybox, sp.user)
	for _, f := range files {
		in, err := os.Open(f)
		if err != nil {
			return "", err
		}
		_, err = io.Copy(h, in)
		in.Close()
		if err != nil {
			return "", fmt.Errorf("read %s: %w", f, err)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func main() {
	outDir := flag.String("out", ".work/images", "directory for the image tarballs")
	busybox := flag.String("busybox", "/usr/bin/busybox", "static busybox binary (Debian busybox-static)")
	flag.Parse()
	if err := os.MkdirAll(*outDir, 0o755); err != nil {
		log.Fatal(err)
	}
	for _, a := range flag.Args() {
		sp, err := parseSpec(a)
		if err != nil {
			log.Fatal(err)
		}
		out, built, err := build(sp, *busybox, *outDir)
		if err != nil {
			log.Fatal(err)
		}
		if built {
			fmt.Printf("%s\t%s\tbuilt\n", sp.ref, out)
		} else {
			fmt.Printf("%s\t%s\tup to date\n", sp.ref, out)
		}
	}
}
