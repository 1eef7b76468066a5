package deploy

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/listener-operator/listener-operator/internal/testenv"
)

// envValue returns the value of a container's environment variable ("" if unset).
func envValue(c map[string]any, name string) string {
	env, _ := c["env"].([]any)
	for _, e := range env {
		if m := e.(map[string]any); m["name"] == name {
			v, _ := m["value"].(string)
			return v
		}
	}
	return ""
}

// securityContext returns a container's securityContext.
func securityContext(c map[string]any) map[string]any {
	sc, _ := c["securityContext"].(map[string]any)
	return sc
}

// TestStackableValuesFiles: the existing operator's own values files,
// byte for byte from their repository (testdata/README.md), render with
// this chart, and each of their keys lands where it means the same.
func TestStackableValuesFiles(t *testing.T) {
	tool(t, "helm")
	for _, c := range []struct {
		file, sha256 string
		checks       func(t *testing.T, o objects) []check
	}{
		{"stackable-d8f9cf3-values.yaml", "124b5a395f4471fbc796ba7206098dd561d90b3391fecf36891c70d73446e641", func(t *testing.T, o objects) []check {
			ctl := o.get(t, "Deployment", namespace, "listener-operator-csi-controller")
			node := o.get(t, "DaemonSet", namespace, "listener-operator-csi-node")
			return []check{
				{"registrar (csiNodeDriver.nodeDriverRegistrar.image.tag)", container(t, node, "node-driver-registrar")["image"], "registry.k8s.io/sig-storage/csi-node-driver-registrar:v2.15.0"},
				{"registrar resources", container(t, node, "node-driver-registrar")["resources"].(map[string]any)["limits"], map[string]any{"cpu": "100m", "memory": "128Mi"}},
				{"provisioner (externalProvisioner.image.tag)", container(t, ctl, "csi-provisioner")["image"], "registry.k8s.io/sig-storage/csi-provisioner:v5.3.0"},
				{"controller service: their runAsUser: 0 dropped (its socket must be csi-provisioner's)", securityContext(container(t, ctl, "csi"))["runAsUser"], nil},
				{"... so it runs as the pod's user, like csi-provisioner", podSpec(t, ctl)["securityContext"].(map[string]any)["runAsUser"], int64(65532)},
				{"node service SELinux", securityContext(container(t, node, "csi"))["seLinuxOptions"], map[string]any{"type": "spc_t"}},
				{"vendor label", node.GetLabels()["stackable.tech/vendor"], "Stackable"},
				{"preset", slices.Contains(args(t, container(t, o.get(t, "Deployment", namespace, "listener-operator"), "manager")), "--listener-class-preset=ephemeral-nodes"), true},
				{"no OTLP export (their default)", envValue(container(t, ctl, "csi"), "OTEL_TRACES_EXPORTER"), ""},
			}
		}},
		{"stackable-25.7.0-values.yaml", "94e554eee1ed0c80ecdf00ddcd0ce0f70600fb5a0fa9112dd797a68ffd758fa4", func(t *testing.T, o objects) []check {
			ctl := o.get(t, "Deployment", namespace, "listener-operator-csi-controller")
			node := o.get(t, "DaemonSet", namespace, "listener-operator-csi-node")
			dep := o.get(t, "Deployment", namespace, "listener-operator")
			return []check{
				{"operator image: never theirs (image.repository names Stackable's own)", container(t, dep, "manager")["image"], "listener-operator:dev"},
				{"provisioner (csiProvisioner.image)", container(t, ctl, "csi-provisioner")["image"], "oci.stackable.tech/sdp/sig-storage/csi-provisioner:v5.2.0"},
				{"provisioner resources (csiProvisioner.resources)", container(t, ctl, "csi-provisioner")["resources"].(map[string]any)["limits"], map[string]any{"cpu": "100m", "memory": "128Mi"}},
				{"registrar (csiNodeDriverRegistrar.image)", container(t, node, "node-driver-registrar")["image"], "oci.stackable.tech/sdp/sig-storage/csi-node-driver-registrar:v2.13.0"},
				{"registrar resources", container(t, node, "node-driver-registrar")["resources"].(map[string]any)["requests"], map[string]any{"cpu": "100m", "memory": "128Mi"}},
				{"controller.resources", container(t, ctl, "csi")["resources"].(map[string]any)["limits"], map[string]any{"cpu": "100m", "memory": "128Mi"}},
				{"node.driver.resources", container(t, node, "csi")["resources"].(map[string]any)["requests"], map[string]any{"cpu": "100m", "memory": "128Mi"}},
				{"securityContext on the controller service", securityContext(container(t, ctl, "csi"))["seLinuxOptions"], map[string]any{"type": "spc_t"}},
				{"... without its runAsUser: 0", securityContext(container(t, ctl, "csi"))["runAsUser"], nil},
				{"securityContext keeps our hardening", securityContext(container(t, node, "csi"))["readOnlyRootFilesystem"], true},
				{"the operator stays non-root (operator.* only)", securityContext(container(t, dep, "manager"))["runAsUser"], nil},
				{"preset", slices.Contains(args(t, container(t, dep, "manager")), "--listener-class-preset=stable-nodes"), true},
			}
		}},
	} {
		t.Run(c.file, func(t *testing.T) {
			path := filepath.Join(testenv.RepoRoot(), "deploy", "testdata", c.file)
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if sum := sha256.Sum256(raw); hex.EncodeToString(sum[:]) != c.sha256 {
				t.Fatalf("%s is not their file any more (sha256 %x): take it again from their repository (testdata/README.md)", c.file, sum)
			}
			out, err := helmRender(namespace, "-f", path)
			if err != nil {
				t.Fatal(err)
			}
			o := parse(t, out)
			for _, ch := range c.checks(t, o) {
				if !reflect.DeepEqual(ch.got, ch.want) {
					t.Errorf("%s = %#v, want %#v", ch.what, ch.got, ch.want)
				}
			}
		})
	}
}

type check struct {
	what      string
	got, want any
}

// TestHelmOlderSpellings: the existing chart's older keys (their 25.7
// shape, and this chart's own nodeRegistrar) land where the current ones
// do, each when set alone.
func TestHelmOlderSpellings(t *testing.T) {
	render := func(t *testing.T, values ...string) (ctl, node, dep *unstructured.Unstructured) {
		o := parse(t, helm(t, values...))
		return o.get(t, "Deployment", namespace, "listener-operator-csi-controller"), o.get(t, "DaemonSet", namespace, "listener-operator-csi-node"), o.get(t, "Deployment", namespace, "listener-operator")
	}
	for _, c := range []struct {
		set   []string
		check func(t *testing.T, ctl, node, dep *unstructured.Unstructured) check
	}{
		{[]string{"csiNodeDriver.nodeRegistrar.image.tag=v7"}, func(t *testing.T, _, node, _ *unstructured.Unstructured) check {
			return check{"nodeRegistrar alias", container(t, node, "node-driver-registrar")["image"], "registry.k8s.io/sig-storage/csi-node-driver-registrar:v7"}
		}},
		{[]string{"csiNodeDriverRegistrar.image.repository=mirror/reg"}, func(t *testing.T, _, node, _ *unstructured.Unstructured) check {
			return check{"csiNodeDriverRegistrar.image.repository keeps the default tag", container(t, node, "node-driver-registrar")["image"], "mirror/reg:v2.13.0"}
		}},
		{[]string{"csiProvisioner.image.tag=v5"}, func(t *testing.T, ctl, _, _ *unstructured.Unstructured) check {
			return check{"csiProvisioner.image.tag", container(t, ctl, "csi-provisioner")["image"], "registry.k8s.io/sig-storage/csi-provisioner:v5"}
		}},
		{[]string{"controller.resources.limits.memory=1Gi"}, func(t *testing.T, ctl, _, _ *unstructured.Unstructured) check {
			return check{"controller.resources", container(t, ctl, "csi")["resources"].(map[string]any)["limits"], map[string]any{"memory": "1Gi"}}
		}},
		{[]string{"node.driver.resources.requests.cpu=500m"}, func(t *testing.T, _, node, _ *unstructured.Unstructured) check {
			return check{"node.driver.resources", container(t, node, "csi")["resources"].(map[string]any)["requests"], map[string]any{"cpu": "500m", "memory": "32Mi"}}
		}},
		{[]string{"podAnnotations.a=b"}, func(t *testing.T, ctl, node, _ *unstructured.Unstructured) check {
			a1, _, _ := unstructured.NestedString(ctl.Object, "spec", "template", "metadata", "annotations", "a")
			a2, _, _ := unstructured.NestedString(node.Object, "spec", "template", "metadata", "annotations", "a")
			return check{"podAnnotations on both CSI pods", a1 + a2, "bb"}
		}},
		{[]string{"nodeSelector.pool=infra"}, func(t *testing.T, ctl, node, dep *unstructured.Unstructured) check {
			want := map[string]any{"kubernetes.io/os": "linux", "pool": "infra"}
			return check{"nodeSelector on both CSI pods and the operator", []any{podSpec(t, ctl)["nodeSelector"], podSpec(t, node)["nodeSelector"], podSpec(t, dep)["nodeSelector"]}, []any{want, want, want}}
		}},
		{[]string{"tolerations[0].key=gpu", "tolerations[0].operator=Exists"}, func(t *testing.T, ctl, node, dep *unstructured.Unstructured) check {
			want := []any{map[string]any{"key": "gpu", "operator": "Exists"}}
			return check{"tolerations replace both CSI pods' and the operator's", []any{podSpec(t, ctl)["tolerations"], podSpec(t, node)["tolerations"], podSpec(t, dep)["tolerations"]}, []any{want, want, want}}
		}},
		{[]string{"affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight=1", "affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.topologyKey=zone"}, func(t *testing.T, ctl, node, dep *unstructured.Unstructured) check {
			_, ok1 := podSpec(t, ctl)["affinity"].(map[string]any)["podAffinity"]
			_, ok2 := podSpec(t, node)["affinity"].(map[string]any)["podAffinity"]
			_, ok3 := podSpec(t, dep)["affinity"].(map[string]any)["podAffinity"]
			return check{"affinity on both CSI pods and the operator", []bool{ok1, ok2, ok3}, []bool{true, true, true}}
		}},
		{[]string{"podSecurityContext.fsGroup=7"}, func(t *testing.T, ctl, node, _ *unstructured.Unstructured) check {
			return check{"podSecurityContext merged into both CSI pods'", []any{podSpec(t, ctl)["securityContext"].(map[string]any)["fsGroup"], podSpec(t, ctl)["securityContext"].(map[string]any)["runAsNonRoot"], podSpec(t, node)["securityContext"].(map[string]any)["fsGroup"]}, []any{int64(7), true, int64(7)}}
		}},
		{[]string{"securityContext.runAsUser=1000"}, func(t *testing.T, ctl, node, _ *unstructured.Unstructured) check {
			return check{"securityContext on both csi containers, the uid also on csi-provisioner (the socket is 0600)", []any{securityContext(container(t, ctl, "csi"))["runAsUser"], securityContext(container(t, node, "csi"))["runAsUser"], securityContext(container(t, ctl, "csi-provisioner"))["runAsUser"]}, []any{int64(1000), int64(1000), int64(1000)}}
		}},
		{[]string{"telemetry.consoleLog.level=TRACE", "telemetry.consoleLog.format=Json"}, func(t *testing.T, _, node, dep *unstructured.Unstructured) check {
			a := args(t, container(t, dep, "manager"))
			return check{"consoleLog level and format", []bool{slices.Contains(a, "--zap-log-level=2"), slices.Contains(args(t, container(t, node, "csi")), "--zap-encoder=json")}, []bool{true, true}}
		}},
		{[]string{"telemetry.consoleLog.level=ERROR", "logging.level=debug"}, func(t *testing.T, _, _, dep *unstructured.Unstructured) check {
			return check{"logging.level wins over consoleLog.level", slices.Contains(args(t, container(t, dep, "manager")), "--zap-log-level=debug"), true}
		}},
		{[]string{"telemetry.otelTraceExporter.enabled=true", "telemetry.otelTraceExporter.endpoint=http://collector:4317"}, func(t *testing.T, ctl, node, dep *unstructured.Unstructured) check {
			var got []string
			for _, c := range []map[string]any{container(t, dep, "manager"), container(t, ctl, "csi"), container(t, node, "csi")} {
				got = append(got, envValue(c, "OTEL_TRACES_EXPORTER")+" "+envValue(c, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")+" "+envValue(c, "OTEL_LOGS_EXPORTER"))
			}
			return check{"trace export in every component", got, []string{"otlp http://collector:4317 ", "otlp http://collector:4317 ", "otlp http://collector:4317 "}}
		}},
		{[]string{"telemetry.otelLogExporter.enabled=true", "telemetry.otelLogExporter.endpoint=http://collector:4317", "csiProvisioner.controllerService.extraEnv[0].name=X", "csiProvisioner.controllerService.extraEnv[0].value=y"}, func(t *testing.T, ctl, _, _ *unstructured.Unstructured) check {
			c := container(t, ctl, "csi")
			return check{"log export next to extraEnv", []string{envValue(c, "OTEL_LOGS_EXPORTER"), envValue(c, "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT"), envValue(c, "X")}, []string{"otlp", "http://collector:4317", "y"}}
		}},
	} {
		t.Run(strings.Join(c.set, ","), func(t *testing.T) {
			ctl, node, dep := render(t, c.set...)
			ch := c.check(t, ctl, node, dep)
			if !reflect.DeepEqual(ch.got, ch.want) {
				t.Errorf("%s = %#v, want %#v", ch.what, ch.got, ch.want)
			}
		})
	}
}
