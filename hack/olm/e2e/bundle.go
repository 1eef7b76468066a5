package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// writeBundle runs the project's bundle generator (hack/bundle, what `make
// bundle` runs) on the local cluster's rendered install with every image
// by digest: the same CSV, ConfigMap and CRDs as bundle/, except for the
// images and the kubelet directory of this cluster (hack/cluster's
// overlay). The CSV's relatedImages then name digests too.
func writeBundle(root, rendered, dir, version string) error {
	cmd := exec.Command("go", "run", ".", "-out", dir, "-version", version)
	cmd.Dir = filepath.Join(root, "hack", "bundle")
	cmd.Stdin = strings.NewReader(rendered)
	return run(cmd)
}

// writeCatalog renders the bundle image into a file-based catalog (package
// listener-operator, channel alpha with that one bundle), as `make
// olm-catalog` does for bundle/, and checks it with opm validate. opm
// pulls the image from the registry, so a bundle image opm cannot read
// fails here and not in a cluster Job.
func writeCatalog(opm, bundleRef, version, dir string) error {
	pkg := filepath.Join(dir, "listener-operator")
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		return err
	}
	// opm pulls with containers/image, which refuses to pull without a
	// signature policy; the host has none (/etc/containers). One that
	// accepts anything, in a HOME of its own, leaves the host as it is.
	home := filepath.Join(dir, "..", "opm-home")
	policy := filepath.Join(home, ".config", "containers", "policy.json")
	if err := os.MkdirAll(filepath.Dir(policy), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(policy, []byte(`{"default":[{"type":"insecureAcceptAnything"}]}`), 0o644); err != nil {
		return err
	}
	var bundle bytes.Buffer
	cmd := exec.Command(opm, "render", bundleRef, "--use-http", "--output", "yaml")
	cmd.Env = append(os.Environ(), "HOME="+home)
	cmd.Stdout = &bundle
	if err := run(cmd); err != nil {
		return err
	}
	head := fmt.Sprintf(`---
schema: olm.package
name: listener-operator
defaultChannel: alpha
---
schema: olm.channel
package: listener-operator
name: alpha
entries:
- name: listener-operator.v%s
`, version)
	if err := os.WriteFile(filepath.Join(pkg, "catalog.yaml"), append([]byte(head), bundle.Bytes()...), 0o644); err != nil {
		return err
	}
	return run(exec.Command(opm, "validate", dir))
}

// run runs cmd and puts its standard error into the error.
func run(cmd *exec.Cmd) error {
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w\n%s", strings.Join(cmd.Args, " "), err, stderr.String())
	}
	return nil
}
