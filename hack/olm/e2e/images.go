package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// refs are the digest references of every image the install runs.
type refs struct {
	olm, opm, catalog, bundle string
	// operator maps an image as the rendered manifests name it (normalized:
	// index.docker.io/library/listener-operator:dev) to its reference by
	// digest in the registry.
	operator map[string]string
}

// nonRoot is the user of OLM's images (OLM's Dockerfile's USER); the
// catalog operator also runs catalog pods and unpack Jobs as 1001.
const nonRoot = "1001"

// pushOperatorImages pushes the tarballs that `cluster.sh images` wrote
// (operator, csi-provisioner, node-driver-registrar, ...), each under the
// name it was tagged with.
func pushOperatorImages(r *reg, dir string) (map[string]string, error) {
	tars, err := filepath.Glob(filepath.Join(dir, "*.tar"))
	if err != nil || len(tars) == 0 {
		return nil, fmt.Errorf("no image tarballs in %s (run hack/cluster/cluster.sh images): %v", dir, err)
	}
	out := map[string]string{}
	for _, t := range tars {
		m, err := tarball.LoadManifest(func() (f io.ReadCloser, err error) { return os.Open(t) })
		if err != nil || len(m) != 1 || len(m[0].RepoTags) != 1 {
			return nil, fmt.Errorf("%s: want one image with one tag: %v", t, err)
		}
		tag, err := name.NewTag(m[0].RepoTags[0])
		if err != nil {
			return nil, err
		}
		ref, err := r.pushTarball(t, tag.RepositoryStr(), tag.TagStr())
		if err != nil {
			return nil, err
		}
		out[tag.Name()] = ref
	}
	return out, nil
}

// tools are the binaries `make olm-tools` built, by name.
func tool(dir, name string) string { return filepath.Join(dir, name) }

// pushOLMImages builds and pushes OLM's image (what OLM's Dockerfile puts in
// it), the opm image (the catalog operator's --opmImage, which extracts
// bundles) and the catalog image (opm serving the file-based catalog in
// catalogDir, with grpc_health_probe for the catalog pod's probes).
func pushOLMImages(r *reg, tools, busyboxBin, catalogDir string, out *refs) error {
	var layers []v1.Layer
	bb, err := busybox(busyboxBin, "cp")
	if err != nil {
		return err
	}
	layers = append(layers, bb)
	for _, b := range []string{"olm", "catalog", "package-server", "copy-content", "cpb"} {
		l, err := layer(bin("bin/"+b, tool(tools, b)))
		if err != nil {
			return err
		}
		layers = append(layers, l)
	}
	olm, err := image(imageConfig{entrypoint: []string{"/bin/olm"}, user: nonRoot}, layers...)
	if err != nil {
		return err
	}
	if out.olm, err = r.push("operator-framework/olm", "v0.38.0", olm); err != nil {
		return err
	}
	opmLayer, err := layer(bin("bin/opm", tool(tools, "opm")))
	if err != nil {
		return err
	}
	opm, err := image(imageConfig{entrypoint: []string{"/bin/opm"}, user: nonRoot}, opmLayer)
	if err != nil {
		return err
	}
	if out.opm, err = r.push("operator-framework/opm", "v1.61.0", opm); err != nil {
		return err
	}
	return pushCatalogImage(r, tools, catalogDir, opmLayer, out)
}

// pushCatalogImage is a catalog image as `opm generate dockerfile` makes
// one: opm serving /configs, with the label that says where they are.
func pushCatalogImage(r *reg, tools, catalogDir string, opmLayer v1.Layer, out *refs) error {
	probe, err := layer(bin("bin/grpc_health_probe", tool(tools, "grpc-health-probe")))
	if err != nil {
		return err
	}
	// opm serve refuses to start without a cache that matches /configs
	// (its integrity check); catalog images are built with one, made by
	// `opm serve --cache-only`, owned by the user the pod runs as.
	cache := catalogDir + "-cache"
	if err := os.RemoveAll(cache); err != nil {
		return err
	}
	if err := run(exec.Command(tool(tools, "opm"), "serve", catalogDir, "--cache-dir", cache, "--cache-only")); err != nil {
		return err
	}
	uid, _ := strconv.Atoi(nonRoot)
	configs, err := dirEntries(catalogDir, "configs", 0)
	if err != nil {
		return err
	}
	cached, err := dirEntries(cache, "tmp/cache", uid)
	if err != nil {
		return err
	}
	content, err := layer(append(configs, cached...)...)
	if err != nil {
		return err
	}
	img, err := image(imageConfig{
		entrypoint: []string{"/bin/opm"},
		cmd:        []string{"serve", "/configs", "--cache-dir=/tmp/cache"},
		user:       nonRoot,
		labels:     map[string]string{"operators.operatorframework.io.index.configs.v1": "/configs"},
	}, opmLayer, probe, content)
	if err != nil {
		return err
	}
	out.catalog, err = r.push("listener-operator-catalog", "latest", img)
	return err
}

// pushBundleImage is bundle.Dockerfile without Docker: bundle/manifests and
// bundle/metadata at the image's root, and the Dockerfile's labels (which
// opm and OLM read to find them).
func pushBundleImage(r *reg, dir, version string, out *refs) error {
	df, err := os.ReadFile(filepath.Join(dir, "bundle.Dockerfile"))
	if err != nil {
		return err
	}
	labels := map[string]string{}
	for _, m := range labelLine.FindAllStringSubmatch(string(df), -1) {
		labels[m[1]] = m[2]
	}
	if labels["operators.operatorframework.io.bundle.mediatype.v1"] == "" {
		return fmt.Errorf("%s/bundle.Dockerfile has no bundle labels", dir)
	}
	var es []entry
	for _, sub := range []string{"manifests", "metadata"} {
		sub, err := dirEntries(filepath.Join(dir, sub), sub, 0)
		if err != nil {
			return err
		}
		es = append(es, sub...)
	}
	l, err := layer(es...)
	if err != nil {
		return err
	}
	img, err := image(imageConfig{labels: labels}, l)
	if err != nil {
		return err
	}
	out.bundle, err = r.push("listener-operator-bundle", "v"+version, img)
	return err
}

var labelLine = regexp.MustCompile(`(?m)^LABEL\s+(\S+?)=(\S+)\s*$`)

// dirEntries are the directories and files under dir, at prefix, owned
// by uid.
func dirEntries(dir, prefix string, uid int) ([]entry, error) {
	var es []entry
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		name := path.Join(prefix, filepath.ToSlash(rel))
		es = append(es, entry{name: name, src: p, dir: d.IsDir(), uid: uid})
		return err
	})
	return es, err
}

// imageLine is an `image:` field of a manifest.
var imageLine = regexp.MustCompile(`(?m)^(\s*(?:- )?image: )"?([^"\s]+)"?\s*$`)

// byDigest points every image of the rendered manifests at its pushed
// digest, and fails on an image the registry does not have: the node has
// no other registry to pull it from.
func byDigest(manifests string, pushed map[string]string) (string, error) {
	var missing []string
	outText := imageLine.ReplaceAllStringFunc(manifests, func(line string) string {
		m := imageLine.FindStringSubmatch(line)
		ref, err := name.ParseReference(m[2])
		if err == nil {
			if d, ok := pushed[ref.Name()]; ok {
				return m[1] + d
			}
		}
		missing = append(missing, m[2])
		return line
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("images not pushed to the registry: %s", strings.Join(missing, ", "))
	}
	return outText, nil
}
