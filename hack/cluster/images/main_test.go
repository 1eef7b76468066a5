package main

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func TestParseSpec(t *testing.T) {
	cases := []struct {
		in      string
		want    spec
		wantErr bool
	}{
		{in: "localhost/a:dev=bin/a", want: spec{ref: "localhost/a:dev", binary: "bin/a"}},
		{in: "a:dev=bin/a,busybox,user=65532:65532", want: spec{ref: "a:dev", binary: "bin/a", busybox: true, user: "65532:65532"}},
		{in: "a:dev", wantErr: true},
		{in: "=bin/a", wantErr: true},
		{in: "a:dev=", wantErr: true},
		{in: "a:dev=bin/a,shell", wantErr: true},
	}
	for _, tc := range cases {
		got, err := parseSpec(tc.in)
		if (err != nil) != tc.wantErr {
			t.Errorf("parseSpec(%q) error = %v, want error %v", tc.in, err, tc.wantErr)
			continue
		}
		if got != tc.want {
			t.Errorf("parseSpec(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

type entry struct {
	typ      byte
	mode     int64
	content  string
	linkname string
}

func layerFiles(t *testing.T, path, ref string) (map[string]entry, []string, string, string) {
	t.Helper()
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(path, &tag)
	if err != nil {
		t.Fatalf("read back %s: %v", path, err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.OS != "linux" || cfg.Architecture != runtime.GOARCH {
		t.Errorf("platform %s/%s, want linux/%s: ctr images import skips images without one", cfg.OS, cfg.Architecture, runtime.GOARCH)
	}
	rc := mutate.Extract(img)
	defer rc.Close()
	files := map[string]entry{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		files[strings.TrimSuffix(h.Name, "/")] = entry{typ: h.Typeflag, mode: h.Mode, content: string(data), linkname: h.Linkname}
	}
	return files, cfg.Config.Entrypoint, cfg.Config.User, cfg.OS
}

func TestBuildWritesAnImportableImage(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "server")
	if err := os.WriteFile(bin, []byte("binary v1"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A stand-in busybox that lists two applets.
	busybox := filepath.Join(dir, "busybox")
	if err := os.WriteFile(busybox, []byte("#!/bin/sh\nprintf 'busybox\\ncat\\nsh\\n'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	sp := spec{ref: "localhost/server:dev", binary: bin, busybox: true, user: "65532:65532"}
	out, built, err := build(sp, busybox, dir)
	if err != nil || !built {
		t.Fatalf("build = %v, %v; want a new image", built, err)
	}
	if filepath.Base(out) != "localhost_server_dev.tar" {
		t.Errorf("tarball %s, want localhost_server_dev.tar", out)
	}

	files, entrypoint, user, _ := layerFiles(t, out, sp.ref)
	if !slices.Equal(entrypoint, []string{"/server"}) || user != "65532:65532" {
		t.Errorf("entrypoint %v user %q, want [/server] 65532:65532", entrypoint, user)
	}
	if f := files["server"]; f.content != "binary v1" || f.mode != 0o755 {
		t.Errorf("/server = %+v, want the binary, mode 0755", f)
	}
	if f := files["tmp"]; f.typ != tar.TypeDir || f.mode != 0o1777 {
		t.Errorf("/tmp = %+v, want a sticky world-writable directory", f)
	}
	for _, applet := range []string{"cat", "sh"} {
		if f := files["bin/"+applet]; f.typ != tar.TypeSymlink || f.linkname != "busybox" {
			t.Errorf("/bin/%s = %+v, want a link to busybox", applet, f)
		}
	}
	if _, ok := files["bin/busybox"]; !ok {
		t.Errorf("no /bin/busybox in %v", files)
	}

	// Same inputs: nothing to do, even if the binary was rewritten.
	if err := os.WriteFile(bin, []byte("binary v1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, built, err := build(sp, busybox, dir); err != nil || built {
		t.Errorf("rebuild with the same content = %v, %v; want up to date", built, err)
	}
	// New content: a new image.
	if err := os.WriteFile(bin, []byte("binary v2"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, built, err := build(sp, busybox, dir); err != nil || !built {
		t.Fatalf("rebuild with new content = %v, %v; want a new image", built, err)
	}
	if files, _, _, _ := layerFiles(t, out, sp.ref); files["server"].content != "binary v2" {
		t.Errorf("/server after the rebuild = %q, want the new binary", files["server"].content)
	}
}

func TestBuildMissingBinary(t *testing.T) {
	dir := t.TempDir()
	_, _, err := build(spec{ref: "localhost/x:dev", binary: filepath.Join(dir, "missing")}, "", dir)
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("build of a missing binary: %v, want a not-exist error", err)
	}
}
