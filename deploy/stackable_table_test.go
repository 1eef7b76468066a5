package deploy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/listener-operator/listener-operator/internal/testenv"
)

// stackableFiles are the existing (stackabletech) chart's values.yaml at
// each release and at main, byte for byte (testdata/README.md), by sha256.
var stackableFiles = map[string]string{
	"stackable-25.3.0-values.yaml":  "f3847326697101e37d37ad1eed48a1f6f22e7814747fe07b71e80d3ab9dbf040",
	"stackable-25.7.0-values.yaml":  "94e554eee1ed0c80ecdf00ddcd0ce0f70600fb5a0fa9112dd797a68ffd758fa4",
	"stackable-25.11.0-values.yaml": "cdc39b3839a6b4e1b3fa6d7217d467b9490b51a86f7e0b432aedc3cdb911b34b",
	"stackable-26.3.0-values.yaml":  "79c59fbe2196948912c0795155bdfc990342a119c4e89021330a2d274fdd4cc6",
	"stackable-26.7.0-values.yaml":  "124b5a395f4471fbc796ba7206098dd561d90b3391fecf36891c70d73446e641",
	"stackable-d8f9cf3-values.yaml": "124b5a395f4471fbc796ba7206098dd561d90b3391fecf36891c70d73446e641",
}

// stackableFile returns the path of one of their files, after checking that
// it is still theirs.
func stackableFile(t *testing.T, name string) string {
	t.Helper()
	path := filepath.Join(testenv.RepoRoot(), "deploy", "testdata", name)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(raw); hex.EncodeToString(sum[:]) != stackableFiles[name] {
		t.Fatalf("%s is not their file any more (sha256 %x): take it again from their repository (testdata/README.md)", name, sum)
	}
	return path
}

// helmNotes renders the chart's NOTES.txt for the arguments (-f, --set), as
// `helm install` prints them, without a cluster: helm template never prints
// NOTES and `helm install --dry-run=client` (3.22) still dials the cluster,
// so a copy of the chart renders NOTES.txt into a ConfigMap.
func helmNotes(t *testing.T, more ...string) string {
	t.Helper()
	chart := filepath.Join(t.TempDir(), "listener-operator")
	if err := os.CopyFS(chart, os.DirFS(filepath.Join(testenv.RepoRoot(), "deploy", "helm", "listener-operator"))); err != nil {
		t.Fatal(err)
	}
	notes, err := os.ReadFile(filepath.Join(chart, "templates", "NOTES.txt"))
	if err != nil {
		t.Fatal(err)
	}
	wrapped := "{{- define \"test.notes\" -}}\n" + string(notes) + "\n{{- end }}\n" +
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: notes}\ndata:\n  notes: {{ include \"test.notes\" . | quote }}\n"
	if err := os.WriteFile(filepath.Join(chart, "templates", "zz-notes.yaml"), []byte(wrapped), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"template", "listener-operator", chart, "--namespace", namespace, "--show-only", "templates/zz-notes.yaml"}, more...)
	cmd := exec.Command(tool(t, "helm"), args...)
	cmd.Dir = testenv.RepoRoot()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return str(t, parse(t, out).get(t, "ConfigMap", "", "notes"), "data", "notes")
}

// Images and notes the table below expects.
const (
	ourImage       = "listener-operator:dev"
	k8sProvisioner = "registry.k8s.io/sig-storage/csi-provisioner:v5.3.0"
	k8sRegistrar   = "registry.k8s.io/sig-storage/csi-node-driver-registrar:v2.15.0"
	stackableSig   = "oci.stackable.tech/sdp/sig-storage/"
	noteTheirImage = "is Stackable's registry, which holds their own"
	notePrefix     = "is a registry prefix"
	noteMaintain   = "maintenance.customResourceDefinitions.maintain=true is ignored"
	noteEOS        = "maintenance.endOfSupportCheck is ignored"
	noteTargets    = "the directives for other targets are ignored"
	noteRoot       = "runAsUser: 0 for the CSI controller service"
)

// stackableCase is one row: a values file of theirs, plus --set values a
// user of their chart would pass, and what our chart must make of them.
type stackableCase struct {
	name, file string
	set        []string
	// operator, provisioner and registrar images.
	images [3]string
	// service accounts of the operator, CSI controller and CSI node.
	accounts [3]string
	notes    []string
	// notes that must not appear.
	notNotes []string
	logLevel string
}

var ourAccounts = [3]string{"listener-operator", "listener-operator-csi-controller", "listener-operator-csi-node"}

func stackableCases() []stackableCase {
	const their2511 = "stackable-25.11.0-values.yaml"
	const their267 = "stackable-26.7.0-values.yaml"
	mirror := "harbor.corp.example/sdp"
	return []stackableCase{
		{name: "25.3.0", file: "stackable-25.3.0-values.yaml",
			images:   [3]string{ourImage, stackableSig + "csi-provisioner:v5.1.0", stackableSig + "csi-node-driver-registrar:v2.13.0"},
			accounts: ourAccounts, notes: []string{noteTheirImage, noteRoot}, notNotes: []string{notePrefix, noteMaintain}},
		{name: "25.7.0", file: "stackable-25.7.0-values.yaml",
			images:   [3]string{ourImage, stackableSig + "csi-provisioner:v5.2.0", stackableSig + "csi-node-driver-registrar:v2.13.0"},
			accounts: ourAccounts, notes: []string{noteTheirImage, noteRoot}, notNotes: []string{notePrefix, noteMaintain}},
		{name: "25.11.0", file: their2511,
			images:   [3]string{ourImage, stackableSig + "csi-provisioner:v5.3.0", stackableSig + "csi-node-driver-registrar:v2.15.0"},
			accounts: ourAccounts, notes: []string{noteTheirImage, noteRoot}, notNotes: []string{notePrefix, noteMaintain}},
		{name: "26.3.0", file: "stackable-26.3.0-values.yaml",
			images:   [3]string{ourImage, stackableSig + "csi-provisioner:v5.3.0", stackableSig + "csi-node-driver-registrar:v2.15.0"},
			accounts: ourAccounts, notes: []string{noteTheirImage, noteMaintain, noteEOS, noteRoot}, notNotes: []string{notePrefix}},
		{name: "26.7.0", file: their267,
			images:   [3]string{ourImage, k8sProvisioner, k8sRegistrar},
			accounts: ourAccounts, notes: []string{noteMaintain, noteEOS, noteRoot}, notNotes: []string{noteTheirImage, notePrefix}},
		{name: "main (d8f9cf3)", file: "stackable-d8f9cf3-values.yaml",
			images:   [3]string{ourImage, k8sProvisioner, k8sRegistrar},
			accounts: ourAccounts, notes: []string{noteMaintain, noteEOS}, notNotes: []string{noteTheirImage, notePrefix}},
		// Their chart as published on oci.stackable.tech (values/oci.stackable.tech.yaml).
		{name: "26.7.0 with their registry prefix", file: their267, set: []string{"image.repository=oci.stackable.tech/sdp"},
			images:   [3]string{ourImage, k8sProvisioner, k8sRegistrar},
			accounts: ourAccounts, notes: []string{noteTheirImage}, notNotes: []string{notePrefix}},
		{name: "26.7.0 with a mirror prefix, sidecars under it", file: their267, set: []string{"image.repository=" + mirror,
			"csiProvisioner.externalProvisioner.image.repository=" + mirror + "/sig-storage",
			"csiNodeDriver.nodeDriverRegistrar.image.repository=" + mirror + "/sig-storage"},
			images:   [3]string{mirror + "/listener-operator-go:dev", mirror + "/sig-storage/csi-provisioner:v5.3.0", mirror + "/sig-storage/csi-node-driver-registrar:v2.15.0"},
			accounts: ourAccounts, notes: []string{notePrefix, mirror + "/listener-operator-go:dev"}, notNotes: []string{noteTheirImage}},
		{name: "26.7.0 with a mirror prefix, sidecars left to it", file: their267, set: []string{"image.repository=" + mirror + "/",
			"csiProvisioner.externalProvisioner.image.repository=", "csiNodeDriver.nodeDriverRegistrar.image.repository="},
			images:   [3]string{mirror + "/listener-operator-go:dev", mirror + "/sig-storage/csi-provisioner:v5.3.0", mirror + "/sig-storage/csi-node-driver-registrar:v2.15.0"},
			accounts: ourAccounts, notes: []string{notePrefix}},
		{name: "26.7.0 with our whole image path", file: their267, set: []string{"image.repository=registry.example/team/listener-operator", "image.tag=1.0.0"},
			images:   [3]string{"registry.example/team/listener-operator:1.0.0", k8sProvisioner, k8sRegistrar},
			accounts: ourAccounts, notNotes: []string{noteTheirImage, notePrefix}},
		{name: "26.7.0 with one account they bring (#418)", file: their267, set: []string{"serviceAccount.create=false", "serviceAccount.name=sdp-operators"},
			images:   [3]string{ourImage, k8sProvisioner, k8sRegistrar},
			accounts: [3]string{"sdp-operators", "sdp-operators", "sdp-operators"}},
		{name: "25.11.0, one account they bring, CSI node's own", file: their2511, set: []string{"serviceAccount.create=false", "serviceAccount.name=sdp-operators", "csiNodeDriver.serviceAccountName=csi-node"},
			images:   [3]string{ourImage, stackableSig + "csi-provisioner:v5.3.0", stackableSig + "csi-node-driver-registrar:v2.15.0"},
			accounts: [3]string{"sdp-operators", "sdp-operators", "csi-node"}},
		{name: "26.7.0 log filter for this operator", file: their267, set: []string{"telemetry.consoleLog.level=info\\,listener_operator=debug"},
			images: [3]string{ourImage, k8sProvisioner, k8sRegistrar}, accounts: ourAccounts, logLevel: "debug", notNotes: []string{noteTargets}},
		{name: "26.7.0 log filter for other targets", file: their267, set: []string{"telemetry.consoleLog.level=warn\\,kube=trace\\,stackable_listener_operator=TRACE"},
			images: [3]string{ourImage, k8sProvisioner, k8sRegistrar}, accounts: ourAccounts, logLevel: "2", notes: []string{noteTargets}},
		{name: "26.7.0 logs off", file: their267, set: []string{"telemetry.consoleLog.level=off"},
			images: [3]string{ourImage, k8sProvisioner, k8sRegistrar}, accounts: ourAccounts, logLevel: "panic"},
		{name: "26.7.0 exporter levels", file: their267, set: []string{"telemetry.otelTraceExporter.enabled=true", "telemetry.otelTraceExporter.level=debug"},
			images: [3]string{ourImage, k8sProvisioner, k8sRegistrar}, accounts: ourAccounts, notes: []string{"telemetry.otelTraceExporter.level=debug is ignored"}},
	}
}

// TestStackableValuesTable renders every released values file of the
// existing chart (and main), alone and with what their users pass, and
// checks the images (never Stackable's own operator), the service account
// of each workload and the NOTES warnings.
func TestStackableValuesTable(t *testing.T) {
	tool(t, "helm")
	for _, c := range stackableCases() {
		t.Run(c.name, func(t *testing.T) {
			hargs := []string{"-f", stackableFile(t, c.file)}
			for _, s := range c.set {
				hargs = append(hargs, "--set", s)
			}
			out, err := helmRender(namespace, append([]string{"--skip-tests"}, hargs...)...)
			if err != nil {
				t.Fatal(err)
			}
			o := parse(t, out)
			dep := o.get(t, "Deployment", namespace, "listener-operator")
			ctl := o.get(t, "Deployment", namespace, "listener-operator-csi-controller")
			node := o.get(t, "DaemonSet", namespace, "listener-operator-csi-node")
			got := [3]string{container(t, dep, "manager")["image"].(string), container(t, ctl, "csi-provisioner")["image"].(string), container(t, node, "node-driver-registrar")["image"].(string)}
			if got != c.images {
				t.Errorf("images (operator, provisioner, registrar) = %q, want %q", got, c.images)
			}
			for _, img := range []any{container(t, ctl, "csi")["image"], container(t, node, "csi")["image"]} {
				if img != c.images[0] {
					t.Errorf("a CSI container runs %v, not the operator's image %s", img, c.images[0])
				}
			}
			for _, u := range o {
				for _, ctr := range slice(t, u.Object, "spec", "template", "spec", "containers") {
					if img, _ := ctr.(map[string]any)["image"].(string); strings.Contains(img, "stackable.tech/") && strings.Contains(img, "/listener-operator") {
						t.Errorf("%s %s runs Stackable's own operator %s", u.GetKind(), u.GetName(), img)
					}
				}
			}
			accounts := [3]string{str(t, dep, "spec", "template", "spec", "serviceAccountName"), str(t, ctl, "spec", "template", "spec", "serviceAccountName"), str(t, node, "spec", "template", "spec", "serviceAccountName")}
			if accounts != c.accounts {
				t.Errorf("service accounts (operator, CSI controller, CSI node) = %q, want %q", accounts, c.accounts)
			}
			checkBindings(t, o, c)
			if c.logLevel != "" {
				if v, _ := flagValue(args(t, container(t, node, "csi")), "--zap-log-level"); v != c.logLevel {
					t.Errorf("--zap-log-level = %q, want %q", v, c.logLevel)
				}
			}
			notes := helmNotes(t, hargs...)
			for _, n := range c.notes {
				if !strings.Contains(notes, n) {
					t.Errorf("NOTES do not say %q:\n%s", n, notes)
				}
			}
			for _, n := range c.notNotes {
				if strings.Contains(notes, n) {
					t.Errorf("NOTES say %q:\n%s", n, notes)
				}
			}
		})
	}
}

// checkBindings: the accounts the workloads run as are the ones bound to
// their ClusterRoles, and the chart creates them only when asked to.
func checkBindings(t *testing.T, o objects, c stackableCase) {
	t.Helper()
	for i, crb := range []string{"listener-operator", "listener-operator-csi", "listener-operator-csi-node"} {
		var bound []string
		for _, s := range slice(t, o.get(t, "ClusterRoleBinding", "", crb).Object, "subjects") {
			bound = append(bound, s.(map[string]any)["name"].(string))
		}
		if !slices.Contains(bound, c.accounts[i]) {
			t.Errorf("ClusterRoleBinding %s binds %v, not %s", crb, bound, c.accounts[i])
		}
	}
	var created []string
	for _, u := range o {
		if u.GetKind() == "ServiceAccount" {
			created = append(created, u.GetName())
		}
	}
	slices.Sort(created)
	want := []string{}
	if c.accounts == ourAccounts {
		want = ourAccounts[:]
	}
	if !reflect.DeepEqual(append([]string{}, created...), want) {
		t.Errorf("ServiceAccounts created: %v, want %v", created, want)
	}
}
