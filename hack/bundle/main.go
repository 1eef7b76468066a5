// Command bundle writes the OLM bundle (bundle/, docs/install.md "OLM")
// from the rendered config/selfsigned install, read from standard input:
//
//	bin/tools/kustomize build config/selfsigned | (cd hack/bundle && go run . -out ../../bundle)
//
// It lives in its own module so that github.com/operator-framework/api
// (and the Kubernetes versions it requires) never enter the operator's
// go.mod. What OLM can install from a bundle (CRDs, the Deployments in the
// CSV, RBAC as permissions, Services, a PodDisruptionBudget, ClusterRoles)
// goes there; the rest (webhook configurations, admission policies, the
// FlowSchema, the CSI DaemonSet, CSIDriver and StorageClass, the webhook
// Secret) goes into a ConfigMap that the olm-deployer Deployment applies
// (`listener-operator olm-deploy`).
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// options of one generation.
type options struct {
	out, version, channel string
	// replaces is the previous bundle's CSV name, if any.
	replaces string
}

func main() {
	var o options
	flag.StringVar(&o.out, "out", "bundle", "Directory to write the bundle into (replaced).")
	flag.StringVar(&o.version, "version", "0.1.0", "Version of the bundle (semver).")
	flag.StringVar(&o.channel, "channel", "alpha", "OLM channel of the bundle.")
	flag.StringVar(&o.replaces, "replaces", "", "CSV name this bundle replaces.")
	flag.Parse()
	objs, err := decode(os.Stdin)
	if err == nil {
		var files map[string][]byte
		if files, err = generate(objs, o); err == nil {
			err = write(o.out, files)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bundle:", err)
		os.Exit(1)
	}
}

// decode reads a YAML stream of objects.
func decode(r io.Reader) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(r, 4096)
	var out []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
}

// write replaces dir with files (paths relative to dir).
func write(dir string, files map[string][]byte) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	for name, data := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// deployerKinds are what OLM cannot install from a bundle: the olm-deployer
// applies them (docs/install.md, "OLM").
var deployerKinds = map[string]bool{
	"MutatingWebhookConfiguration": true, "ValidatingWebhookConfiguration": true,
	"ValidatingAdmissionPolicy": true, "ValidatingAdmissionPolicyBinding": true,
	"FlowSchema": true, "CSIDriver": true, "StorageClass": true, "DaemonSet": true,
	// An empty Secret the operator fills: applied server-side without data,
	// it keeps what the operator wrote, which OLM's update would not.
	"Secret": true,
}

// generate returns every file of the bundle by its path.
func generate(objs []*unstructured.Unstructured, o options) (map[string][]byte, error) {
	files := map[string][]byte{}
	var deployer, rest []*unstructured.Unstructured
	for _, u := range objs {
		switch {
		case u.GetKind() == "Namespace":
			// OLM installs into the OperatorGroup's namespace.
		case deployerKinds[u.GetKind()]:
			deployer = append(deployer, u)
		default:
			rest = append(rest, u)
		}
	}
	csv, plain, err := buildCSV(rest, deployer, o)
	if err != nil {
		return nil, err
	}
	cm, err := deployerConfigMap(deployer)
	if err != nil {
		return nil, err
	}
	plain = append(plain, cm)
	if files["manifests/listener-operator.clusterserviceversion.yaml"], err = yaml.Marshal(csv); err != nil {
		return nil, err
	}
	for _, u := range plain {
		u.SetNamespace("")
		data, err := yaml.Marshal(u.Object)
		if err != nil {
			return nil, err
		}
		files[fmt.Sprintf("manifests/%s_%s.yaml", u.GetName(), strings.ToLower(u.GetKind()))] = data
	}
	files["metadata/annotations.yaml"] = []byte(annotations(o))
	files["bundle.Dockerfile"] = []byte(dockerfile(o))
	return files, nil
}

// deployerConfigMap holds the objects the olm-deployer applies, one key
// each, in a stable order.
func deployerConfigMap(objs []*unstructured.Unstructured) (*unstructured.Unstructured, error) {
	data := map[string]any{}
	keys := make([]string, 0, len(objs))
	for _, u := range objs {
		var buf bytes.Buffer
		b, err := yaml.Marshal(u.Object)
		if err != nil {
			return nil, err
		}
		buf.Write(b)
		key := fmt.Sprintf("%s_%s.yaml", strings.ToLower(u.GetKind()), u.GetName())
		data[key] = buf.String()
		keys = append(keys, key)
	}
	sort.Strings(keys)
	cm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{
			"name":   deployerManifests,
			"labels": map[string]any{"app.kubernetes.io/name": "listener-operator", "app.kubernetes.io/component": "olm-deployer"},
			"annotations": map[string]any{
				"listeners.stackable.tech/objects": strings.Join(keys, ","),
			},
		},
		"data": data,
	}}
	return cm, nil
}

// deployerManifests is the ConfigMap the olm-deployer reads.
const deployerManifests = "listener-operator-olm-manifests"

func annotations(o options) string {
	return fmt.Sprintf(`annotations:
  operators.operatorframework.io.bundle.mediatype.v1: registry+v1
  operators.operatorframework.io.bundle.manifests.v1: manifests/
  operators.operatorframework.io.bundle.metadata.v1: metadata/
  operators.operatorframework.io.bundle.package.v1: listener-operator
  operators.operatorframework.io.bundle.channels.v1: %s
  operators.operatorframework.io.bundle.channel.default.v1: %s
`, o.channel, o.channel)
}

func dockerfile(o options) string {
	return fmt.Sprintf(`# The bundle image: docker build -f bundle.Dockerfile -t <registry>/listener-operator-bundle:v%s bundle/
FROM scratch
LABEL operators.operatorframework.io.bundle.mediatype.v1=registry+v1
LABEL operators.operatorframework.io.bundle.manifests.v1=manifests/
LABEL operators.operatorframework.io.bundle.metadata.v1=metadata/
LABEL operators.operatorframework.io.bundle.package.v1=listener-operator
LABEL operators.operatorframework.io.bundle.channels.v1=%s
LABEL operators.operatorframework.io.bundle.channel.default.v1=%s
COPY manifests /manifests/
COPY metadata /metadata/
`, o.version, o.channel, o.channel)
}
