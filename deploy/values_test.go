package deploy

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/listener-operator/listener-operator/internal/testenv"
)

// podSpec returns a workload's pod template spec.
func podSpec(t *testing.T, u *unstructured.Unstructured) map[string]any {
	t.Helper()
	p, _, err := unstructured.NestedMap(u.Object, "spec", "template", "spec")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestHelmValues sets every value of the chart and checks where it lands.
func TestHelmValues(t *testing.T) {
	o := parse(t, helm(t,
		"image.repository=registry.example/listener-operator", "image.tag=1.2.3", "image.pullPolicy=Always",
		"image.pullSecrets[0].name=regcred",
		"labels.team=platform",
		"kubernetesClusterDomain=corp.example",
		"kubeletDir=/var/snap/microk8s/common/var/lib/kubelet",
		"preset=none",
		"serviceAccount.name=lo-operator", "serviceAccount.annotations.iam=role-1",
		"webhook.port=10250", "webhook.timeoutSeconds=7", "webhook.tlsMinVersion=1.3", "webhook.enableHTTP2=true", "webhook.certValidity=720h",
		"logging.level=debug", "logging.format=console",
		"operator.replicas=3",
		"operator.podAnnotations.a=b",
		"operator.nodeSelector.role=infra",
		"operator.tolerations[0].key=infra", "operator.tolerations[0].operator=Exists",
		"operator.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key=infra",
		"operator.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator=Exists",
		"operator.priorityClassName=platform-high",
		"operator.podSecurityContext.runAsUser=1001",
		"operator.securityContext.privileged=false",
		"operator.resources.limits.memory=1Gi",
		"operator.extraArgs[0]=--graceful-shutdown-timeout=5s",
		"operator.extraEnv[0].name=HTTPS_PROXY", "operator.extraEnv[0].value=http://proxy:3128",
		"csiProvisioner.replicas=2",
		"csiProvisioner.serviceAccountName=lo-csi-ctl",
		"csiProvisioner.podAnnotations.c=d",
		"csiProvisioner.nodeSelector.role=infra",
		"csiProvisioner.tolerations[0].key=infra", "csiProvisioner.tolerations[0].operator=Exists",
		"csiProvisioner.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight=1",
		"csiProvisioner.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.topologyKey=zone",
		"csiProvisioner.priorityClassName=platform-low",
		"csiProvisioner.podSecurityContext.runAsUser=2002",
		"csiProvisioner.controllerService.resources.limits.memory=300Mi",
		"csiProvisioner.controllerService.securityContext.runAsUser=2003",
		"csiProvisioner.controllerService.extraArgs[0]=--cache-sync-timeout=1m",
		"csiProvisioner.controllerService.extraEnv[0].name=X", "csiProvisioner.controllerService.extraEnv[0].value=y",
		"csiProvisioner.externalProvisioner.image.repository=mirror.example/csi-provisioner",
		"csiProvisioner.externalProvisioner.image.tag=v9",
		"csiProvisioner.externalProvisioner.resources.limits.memory=200Mi",
		"csiProvisioner.externalProvisioner.securityContext.runAsUser=2004",
		"csiNodeDriver.serviceAccountName=lo-csi-node",
		"csiNodeDriver.podAnnotations.e=f",
		"csiNodeDriver.nodeSelector.pool=workers",
		"csiNodeDriver.tolerations[0].key=dedicated", "csiNodeDriver.tolerations[0].operator=Exists",
		"csiNodeDriver.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key=pool",
		"csiNodeDriver.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator=Exists",
		"csiNodeDriver.priorityClassName=",
		"csiNodeDriver.podSecurityContext.fsGroup=3001",
		"csiNodeDriver.nodeService.resources.limits.memory=400Mi",
		"csiNodeDriver.nodeService.securityContext.seLinuxOptions.type=container_t",
		"csiNodeDriver.nodeService.extraArgs[0]=--cache-sync-timeout=3m",
		"csiNodeDriver.nodeService.extraEnv[0].name=Z", "csiNodeDriver.nodeService.extraEnv[0].value=w",
		"csiNodeDriver.nodeDriverRegistrar.image.repository=mirror.example/registrar",
		"csiNodeDriver.nodeDriverRegistrar.image.tag=v8",
		"csiNodeDriver.nodeDriverRegistrar.resources.limits.memory=100Mi",
		"csiNodeDriver.nodeDriverRegistrar.securityContext.runAsUser=0",
	))
	dep := o.get(t, "Deployment", namespace, "listener-operator")
	pod := podSpec(t, dep)
	mgr := container(t, dep, "manager")
	a := args(t, mgr)
	ctl := o.get(t, "Deployment", namespace, "listener-operator-csi-controller")
	ctlPod := podSpec(t, ctl)
	node := o.get(t, "DaemonSet", namespace, "listener-operator-csi-node")
	nodePod := podSpec(t, node)
	tmplAnn := func(u *unstructured.Unstructured) map[string]string {
		m, _, _ := unstructured.NestedStringMap(u.Object, "spec", "template", "metadata", "annotations")
		return m
	}
	envNames := func(c map[string]any) []string {
		var out []string
		for _, e := range slice(t, c, "env") {
			out = append(out, e.(map[string]any)["name"].(string))
		}
		return out
	}
	webhookPort := slice(t, mgr, "ports")[0].(map[string]any)
	svc := o.get(t, "Service", namespace, "listener-operator-webhook")
	svcPort := slice(t, svc.Object, "spec", "ports")[0].(map[string]any)
	vwc := o.get(t, "ValidatingWebhookConfiguration", "", "listener-operator-validating")
	infra := []any{map[string]any{"key": "infra", "operator": "Exists"}}
	checks := []struct {
		what      string
		got, want any
	}{
		{"operator image", mgr["image"], "registry.example/listener-operator:1.2.3"},
		{"operator pull policy", mgr["imagePullPolicy"], "Always"},
		{"CSI controller image", container(t, ctl, "csi")["image"], "registry.example/listener-operator:1.2.3"},
		{"CSI node image", container(t, node, "csi")["image"], "registry.example/listener-operator:1.2.3"},
		{"pull secrets (operator)", pod["imagePullSecrets"], []any{map[string]any{"name": "regcred"}}},
		{"pull secrets (CSI node)", nodePod["imagePullSecrets"], []any{map[string]any{"name": "regcred"}}},
		{"global label on a Deployment", dep.GetLabels()["team"], "platform"},
		{"global label on a ClusterRole", o.get(t, "ClusterRole", "", "listener-operator").GetLabels()["team"], "platform"},
		{"cluster domain", slices.Contains(a, "--cluster-domain=corp.example"), true},
		{"preset", slices.Contains(a, "--listener-class-preset=none"), true},
		{"operator service account", pod["serviceAccountName"], "lo-operator"},
		{"service account annotations", o.get(t, "ServiceAccount", namespace, "lo-operator").GetAnnotations()["iam"], "role-1"},
		{"webhook container port", webhookPort["containerPort"], int64(10250)},
		{"webhook flag", slices.Contains(a, "--webhook-port=10250"), true},
		{"webhook Service target port", svcPort["targetPort"], int64(10250)},
		{"webhook timeout", slice(t, vwc.Object, "webhooks")[0].(map[string]any)["timeoutSeconds"], int64(7)},
		{"TLS min version", slices.Contains(a, "--webhook-tls-min-version=1.3"), true},
		{"HTTP/2", slices.Contains(a, "--webhook-enable-http2=true"), true},
		{"cert validity", slices.Contains(a, "--cert-validity=720h"), true},
		{"log level (operator)", slices.Contains(a, "--zap-log-level=debug"), true},
		{"log format (CSI node)", slices.Contains(args(t, container(t, node, "csi")), "--zap-encoder=console"), true},
		{"log level (CSI controller)", slices.Contains(args(t, container(t, ctl, "csi")), "--zap-log-level=debug"), true},
		{"operator replicas", dep.Object["spec"].(map[string]any)["replicas"], int64(3)},
		{"operator pod annotations", tmplAnn(dep)["a"], "b"},
		{"operator node selector", pod["nodeSelector"], map[string]any{"kubernetes.io/os": "linux", "role": "infra"}},
		{"operator tolerations", pod["tolerations"], infra},
		{"operator affinity replaces the default spread", reflect.ValueOf(pod["affinity"].(map[string]any)["podAntiAffinity"]).IsValid(), false},
		{"operator priority class", pod["priorityClassName"], "platform-high"},
		{"operator pod security context", pod["securityContext"].(map[string]any)["runAsUser"], int64(1001)},
		{"operator security context", mgr["securityContext"].(map[string]any)["privileged"], false},
		{"operator memory limit", mgr["resources"].(map[string]any)["limits"], map[string]any{"memory": "1Gi"}},
		{"operator extra args", a[len(a)-1], "--graceful-shutdown-timeout=5s"},
		{"operator extra env", envNames(mgr), []string{"POD_NAMESPACE", "GOMEMLIMIT", "GOGC", "GODEBUG", "HTTPS_PROXY"}},
		{"CSI controller replicas", ctl.Object["spec"].(map[string]any)["replicas"], int64(2)},
		{"CSI controller service account", ctlPod["serviceAccountName"], "lo-csi-ctl"},
		{"CSI controller pod annotations", tmplAnn(ctl)["c"], "d"},
		{"CSI controller node selector", ctlPod["nodeSelector"], map[string]any{"kubernetes.io/os": "linux", "role": "infra"}},
		{"CSI controller tolerations", ctlPod["tolerations"], infra},
		{"CSI controller affinity", reflect.ValueOf(ctlPod["affinity"].(map[string]any)["podAffinity"]).IsValid(), true},
		{"CSI controller priority class", ctlPod["priorityClassName"], "platform-low"},
		{"CSI controller pod security context", ctlPod["securityContext"].(map[string]any)["runAsUser"], int64(2002)},
		{"CSI controller memory limit", container(t, ctl, "csi")["resources"].(map[string]any)["limits"], map[string]any{"memory": "300Mi"}},
		{"CSI controller security context", container(t, ctl, "csi")["securityContext"].(map[string]any)["runAsUser"], int64(2003)},
		{"CSI controller extra args", slices.Contains(args(t, container(t, ctl, "csi")), "--cache-sync-timeout=1m"), true},
		{"CSI controller extra env", envNames(container(t, ctl, "csi")), []string{"X"}},
		{"csi-provisioner image", container(t, ctl, "csi-provisioner")["image"], "mirror.example/csi-provisioner:v9"},
		{"csi-provisioner memory limit", container(t, ctl, "csi-provisioner")["resources"].(map[string]any)["limits"], map[string]any{"memory": "200Mi"}},
		{"csi-provisioner security context", container(t, ctl, "csi-provisioner")["securityContext"].(map[string]any)["runAsUser"], int64(2004)},
		{"CSI node service account", nodePod["serviceAccountName"], "lo-csi-node"},
		{"CSI node pod annotations", tmplAnn(node)["e"], "f"},
		{"CSI node node selector", nodePod["nodeSelector"], map[string]any{"kubernetes.io/os": "linux", "pool": "workers"}},
		{"CSI node tolerations", nodePod["tolerations"], []any{map[string]any{"key": "dedicated", "operator": "Exists"}}},
		{"CSI node affinity", reflect.ValueOf(nodePod["affinity"].(map[string]any)["nodeAffinity"]).IsValid(), true},
		{"CSI node priority class unset", nodePod["priorityClassName"], nil},
		{"CSI node pod security context", nodePod["securityContext"].(map[string]any)["fsGroup"], int64(3001)},
		{"CSI node memory limit", container(t, node, "csi")["resources"].(map[string]any)["limits"], map[string]any{"memory": "400Mi"}},
		{"CSI node SELinux type", container(t, node, "csi")["securityContext"].(map[string]any)["seLinuxOptions"], map[string]any{"type": "container_t"}},
		{"CSI node extra args", slices.Contains(args(t, container(t, node, "csi")), "--cache-sync-timeout=3m"), true},
		{"CSI node extra env", envNames(container(t, node, "csi")), []string{"KUBERNETES_NODE_NAME", "Z"}},
		{"registrar image", container(t, node, "node-driver-registrar")["image"], "mirror.example/registrar:v8"},
		{"registrar memory limit", container(t, node, "node-driver-registrar")["resources"].(map[string]any)["limits"], map[string]any{"memory": "100Mi"}},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %#v, want %#v", c.what, c.got, c.want)
		}
	}
	crb := o.get(t, "ClusterRoleBinding", "", "listener-operator")
	if sa := slice(t, crb.Object, "subjects")[0].(map[string]any)["name"]; sa != "lo-operator" {
		t.Errorf("ClusterRoleBinding binds %v, want the custom service account", sa)
	}
	for crb, want := range map[string][]string{"listener-operator-csi": {"lo-csi-ctl"}, "listener-operator-csi-node": {"lo-csi-node"}} {
		var bound []string
		for _, s := range slice(t, o.get(t, "ClusterRoleBinding", "", crb).Object, "subjects") {
			bound = append(bound, s.(map[string]any)["name"].(string))
		}
		if !reflect.DeepEqual(bound, want) {
			t.Errorf("ClusterRoleBinding %s binds %v, want %v", crb, bound, want)
		}
	}
	serving := parse(t, helm(t, "certMode=cert-manager", "kubernetesClusterDomain=corp.example")).get(t, "Certificate", namespace, "listener-operator-serving-cert")
	if dns, _, _ := unstructured.NestedStringSlice(serving.Object, "spec", "dnsNames"); !slices.Contains(dns, "listener-operator-webhook."+namespace+".svc.corp.example") {
		t.Errorf("serving certificate DNS names %v ignore the cluster domain", dns)
	}

	const kubelet = "/var/snap/microk8s/common/var/lib/kubelet"
	if !slices.Contains(args(t, container(t, node, "node-driver-registrar")), "--kubelet-registration-path="+kubelet+"/plugins/listeners.stackable.tech/csi.sock") {
		t.Error("node-driver-registrar does not register the socket under the kubelet directory")
	}
	for _, v := range slice(t, nodePod, "volumes") {
		p, _, _ := unstructured.NestedString(v.(map[string]any), "hostPath", "path")
		if !strings.HasPrefix(p, kubelet+"/") {
			t.Errorf("node plugin host path %s is outside the kubelet directory", p)
		}
	}
}

// TestHelmDefaults: what a bare `helm install` renders for the platform
// notes of docs/install.md.
func TestHelmDefaults(t *testing.T) {
	o := parse(t, helm(t))
	dep := o.get(t, "Deployment", namespace, "listener-operator")
	node := o.get(t, "DaemonSet", namespace, "listener-operator-csi-node")
	ctl := o.get(t, "Deployment", namespace, "listener-operator-csi-controller")
	nodePod := podSpec(t, node)
	if mode, _ := flagValue(args(t, container(t, dep, "manager")), "--cert-mode"); mode != "self-signed" {
		t.Errorf("default --cert-mode=%s: a bare cluster has no cert-manager, want self-signed", mode)
	}
	for k := range o {
		if strings.Contains(k, "cert-manager") || strings.HasPrefix(k, "Certificate/") || strings.HasPrefix(k, "Issuer/") {
			t.Errorf("the default install renders %s, which needs cert-manager", k)
		}
	}
	if got := nodePod["priorityClassName"]; got != "system-node-critical" {
		t.Errorf("CSI node priority class %v", got)
	}
	for _, u := range []*unstructured.Unstructured{dep, node, ctl} {
		if sel, _, _ := unstructured.NestedStringMap(u.Object, "spec", "template", "spec", "nodeSelector"); sel["kubernetes.io/os"] != "linux" {
			t.Errorf("%s node selector %v, want kubernetes.io/os=linux", u.GetName(), sel)
		}
	}
	if se, _, _ := unstructured.NestedString(container(t, node, "csi"), "securityContext", "seLinuxOptions", "type"); se != "spc_t" {
		t.Errorf("CSI node SELinux type %q, want spc_t (OpenShift)", se)
	}
	// Liveness: the node plugin's and the registrar's /healthz, and the
	// CSI controller's readiness and liveness.
	probe := func(c map[string]any, kind string) (string, any) {
		p, _, _ := unstructured.NestedString(c, kind, "httpGet", "path")
		port, _, _ := unstructured.NestedFieldNoCopy(c, kind, "httpGet", "port")
		return p, port
	}
	reg := container(t, node, "node-driver-registrar")
	if p, port := probe(reg, "livenessProbe"); p != "/healthz" || port != "registrar" || !slices.Contains(args(t, reg), "--http-endpoint=:9809") {
		t.Errorf("registrar liveness %s on %v, args %v: want /healthz on its --http-endpoint", p, port, args(t, reg))
	}
	for _, c := range []struct {
		what string
		c    map[string]any
		kind string
	}{{"node plugin liveness", container(t, node, "csi"), "livenessProbe"}, {"CSI controller liveness", container(t, ctl, "csi"), "livenessProbe"}, {"CSI controller readiness", container(t, ctl, "csi"), "readinessProbe"}} {
		// Not on the metrics port: that one wants a token, the kubelet
		// sends none.
		if p, port := probe(c.c, c.kind); p != "/healthz" || port != "health" {
			t.Errorf("%s: %s on %v, want /healthz on health", c.what, p, port)
		}
	}
	// Metrics: one Service per component, selecting its pods.
	for svc, w := range map[string]*unstructured.Unstructured{
		"listener-operator-metrics": dep, "listener-operator-csi-controller-metrics": ctl, "listener-operator-csi-node-metrics": node,
	} {
		s := o.get(t, "Service", namespace, svc)
		sel, _, _ := unstructured.NestedStringMap(s.Object, "spec", "selector")
		labels, _, _ := unstructured.NestedStringMap(w.Object, "spec", "template", "metadata", "labels")
		for k, v := range sel {
			if labels[k] != v {
				t.Errorf("Service %s selects %s=%s, %s pods have %v", svc, k, v, w.GetName(), labels)
			}
		}
		if p := slice(t, s.Object, "spec", "ports")[0].(map[string]any); p["targetPort"] != "metrics" {
			t.Errorf("Service %s targets %v", svc, p["targetPort"])
		}
	}
	// Aggregated roles: tenants' view and edit include listener objects.
	view := o.get(t, "ClusterRole", "", "listener-operator-view")
	if view.GetLabels()["rbac.authorization.k8s.io/aggregate-to-view"] != "true" || !grants(view, "listeners.stackable.tech", "podlisteners", "", "list") {
		t.Errorf("view role %v does not let viewers list PodListeners", view.Object)
	}
	edit := o.get(t, "ClusterRole", "", "listener-operator-edit")
	if edit.GetLabels()["rbac.authorization.k8s.io/aggregate-to-edit"] != "true" || !grants(edit, "listeners.stackable.tech", "listeners", "", "create") {
		t.Errorf("edit role %v does not let editors create Listeners", edit.Object)
	}
	if grants(edit, "listeners.stackable.tech", "podlisteners", "", "update") {
		t.Error("edit role lets tenants write PodListeners, which only the operator writes")
	}
	// PDB: one replica down at most, so drains never block.
	pdb := o.get(t, "PodDisruptionBudget", namespace, "listener-operator")
	if v, _, _ := unstructured.NestedFieldNoCopy(pdb.Object, "spec", "maxUnavailable"); v != int64(1) {
		t.Errorf("PDB maxUnavailable %v, want 1", v)
	}
	// The operator may set blockOwnerDeletion on what it owns
	// (OwnerReferencesPermissionEnforcement, OpenShift).
	role := o.get(t, "ClusterRole", "", "listener-operator")
	for _, r := range []struct{ group, resource string }{{"listeners.stackable.tech", "listeners/finalizers"}, {"", "persistentvolumeclaims/finalizers"}, {"", "pods/finalizers"}} {
		if !grants(role, r.group, r.resource, "", "update") {
			t.Errorf("operator's ClusterRole cannot update %s: owner references with blockOwnerDeletion are refused under OwnerReferencesPermissionEnforcement", r.resource)
		}
	}
}

// TestHelmOptionalObjects: values that add or remove whole objects.
func TestHelmOptionalObjects(t *testing.T) {
	o := parse(t, helm(t, "metrics.serviceMonitor.enabled=true", "metrics.serviceMonitor.labels.release=prom", "metrics.serviceMonitor.interval=15s"))
	for _, name := range []string{"listener-operator-metrics", "listener-operator-csi-controller-metrics", "listener-operator-csi-node-metrics"} {
		sm := o.get(t, "ServiceMonitor", namespace, name)
		svc := o.get(t, "Service", namespace, name)
		sel, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
		for k, v := range sel {
			if svc.GetLabels()[k] != v {
				t.Errorf("ServiceMonitor %s selects %s=%s; its Service has %v", name, k, v, svc.GetLabels())
			}
		}
		ep := slice(t, sm.Object, "spec", "endpoints")[0].(map[string]any)
		if ep["port"] != "metrics" || ep["interval"] != "15s" || sm.GetLabels()["release"] != "prom" {
			t.Errorf("ServiceMonitor %s: endpoint %v labels %v", name, ep, sm.GetLabels())
		}
	}
	o = parse(t, helm(t, "metrics.service.enabled=false", "rbac.aggregatedRoles=false", "operator.podDisruptionBudget.enabled=false", "serviceAccount.create=false", "serviceAccount.name=existing"))
	for k := range o {
		if strings.HasPrefix(k, "PodDisruptionBudget/") || strings.HasPrefix(k, "ServiceAccount/") || strings.HasSuffix(k, "-metrics") ||
			strings.HasSuffix(k, "-view") || strings.HasSuffix(k, "-edit") {
			t.Errorf("disabled object still rendered: %s", k)
		}
	}
	if sa := podSpec(t, o.get(t, "Deployment", namespace, "listener-operator"))["serviceAccountName"]; sa != "existing" {
		t.Errorf("operator runs as %v, want the existing service account", sa)
	}
	o = parse(t, helm(t, "operator.replicas=3", "operator.podDisruptionBudget.maxUnavailable=null", "operator.podDisruptionBudget.minAvailable=2"))
	if v, _, _ := unstructured.NestedFieldNoCopy(o.get(t, "PodDisruptionBudget", namespace, "listener-operator").Object, "spec", "minAvailable"); v != int64(2) {
		t.Errorf("PDB minAvailable %v, want 2", v)
	}
}

// TestHelmMetricsSecurity: by default every component serves metrics over
// HTTPS to authorised callers (the ServiceMonitor sends a token and skips
// verification of the self-signed certificate); metrics.secure=false turns
// that off everywhere; the NetworkPolicies let only the API server reach
// the webhook port and only the metrics peers the metrics port.
func TestHelmMetricsSecurity(t *testing.T) {
	components := []struct{ kind, name, container string }{
		{"Deployment", "listener-operator", "manager"},
		{"Deployment", "listener-operator-csi-controller", "csi"},
		{"DaemonSet", "listener-operator-csi-node", "csi"},
	}
	for _, secure := range []bool{true, false} {
		values := []string{"metrics.serviceMonitor.enabled=true"}
		if !secure {
			values = append(values, "metrics.secure=false")
		}
		o := parse(t, helm(t, values...))
		for _, c := range components {
			a := args(t, container(t, o.get(t, c.kind, namespace, c.name), c.container))
			if addr, _ := flagValue(a, "--metrics-bind-address"); addr != ":8443" {
				t.Errorf("secure=%v: %s --metrics-bind-address=%q, want :8443", secure, c.name, addr)
			}
			if v, set := flagValue(a, "--metrics-secure"); set == secure {
				t.Errorf("secure=%v: %s --metrics-secure=%q", secure, c.name, v)
			}
		}
		sm := o.get(t, "ServiceMonitor", namespace, "listener-operator-csi-node-metrics")
		ep := slice(t, sm.Object, "spec", "endpoints")[0].(map[string]any)
		skip, _, _ := unstructured.NestedBool(ep, "tlsConfig", "insecureSkipVerify")
		if secure && (ep["scheme"] != "https" || ep["bearerTokenFile"] != "/var/run/secrets/kubernetes.io/serviceaccount/token" || !skip) {
			t.Errorf("secure ServiceMonitor endpoint %v: want https, the service account token and tlsConfig", ep)
		}
		if !secure && (ep["scheme"] != "http" || ep["bearerTokenFile"] != nil) {
			t.Errorf("insecure ServiceMonitor endpoint %v: want plain http", ep)
		}
		auth, hasAuth := o[key("ClusterRole", "", "listener-operator-metrics-auth")]
		if hasAuth != secure {
			t.Errorf("secure=%v: ClusterRole listener-operator-metrics-auth rendered: %v", secure, hasAuth)
		}
		if secure && (!grants(auth, "authentication.k8s.io", "tokenreviews", "", "create") || !grants(auth, "authorization.k8s.io", "subjectaccessreviews", "", "create")) {
			t.Errorf("metrics-auth role %v cannot create TokenReviews and SubjectAccessReviews", auth.Object)
		}
		if secure {
			b := o.get(t, "ClusterRoleBinding", "", "listener-operator-metrics-auth")
			var subjects []string
			for _, s := range slice(t, b.Object, "subjects") {
				subjects = append(subjects, s.(map[string]any)["name"].(string))
			}
			if want := []string{"listener-operator", "listener-operator-csi-controller", "listener-operator-csi-node"}; !slices.Equal(subjects, want) {
				t.Errorf("metrics-auth is bound to %v, want %v", subjects, want)
			}
		}
		o.get(t, "ClusterRole", "", "listener-operator-metrics-reader")
	}

	o := parse(t, helm(t))
	for k := range o {
		if strings.HasPrefix(k, "NetworkPolicy/") {
			t.Errorf("default install renders %s (networkPolicy is off by default)", k)
		}
	}
	o = parse(t, helm(t, "networkPolicy.enabled=true", "networkPolicy.webhookFrom[0].ipBlock.cidr=10.0.0.0/24"))
	ports := func(np *unstructured.Unstructured) map[string]any {
		got := map[string]any{} // port name -> from (nil: anyone)
		for _, r := range slice(t, np.Object, "spec", "ingress") {
			rule := r.(map[string]any)
			for _, p := range rule["ports"].([]any) {
				got[p.(map[string]any)["port"].(string)] = rule["from"]
			}
		}
		return got
	}
	for _, c := range components {
		comp := map[string]string{"listener-operator": "controller", "listener-operator-csi-controller": "csi-controller", "listener-operator-csi-node": "csi-node"}[c.name]
		np := o.get(t, "NetworkPolicy", namespace, "listener-operator-"+comp)
		pods, _, _ := unstructured.NestedStringMap(o.get(t, c.kind, namespace, c.name).Object, "spec", "template", "metadata", "labels")
		sel, _, _ := unstructured.NestedStringMap(np.Object, "spec", "podSelector", "matchLabels")
		for k, v := range sel {
			if pods[k] != v {
				t.Errorf("NetworkPolicy %s selects %s=%s, the pods have %v", np.GetName(), k, v, pods)
			}
		}
		got := ports(np)
		var webhookFrom []string
		for _, r := range slice(t, np.Object, "spec", "ingress") {
			rule := r.(map[string]any)
			if rule["ports"].([]any)[0].(map[string]any)["port"] == "webhook" {
				webhookFrom = append(webhookFrom, fmt.Sprint(rule["from"]))
			}
		}
		want := []string(nil)
		if comp == "controller" {
			// The API server, and the leader probing replicas in a CA change.
			want = []string{"[map[ipBlock:map[cidr:10.0.0.0/24]]]", "[map[podSelector:map[matchLabels:map[app.kubernetes.io/component:controller app.kubernetes.io/name:listener-operator]]]]"}
		}
		if !slices.Equal(webhookFrom, want) {
			t.Errorf("NetworkPolicy %s webhook port from %v, want %v", np.GetName(), webhookFrom, want)
		}
		if from := got["metrics"]; !strings.Contains(fmt.Sprint(from), "kubernetes.io/metadata.name:monitoring") {
			t.Errorf("NetworkPolicy %s metrics port from %v, want Prometheus in monitoring", np.GetName(), from)
		}
		if from, ok := got["health"]; !ok || from != nil {
			t.Errorf("NetworkPolicy %s health port: %v %v, want open to the kubelet", np.GetName(), ok, from)
		}
	}
	o = parse(t, helm(t, "networkPolicy.enabled=true", "networkPolicy.webhookFrom[0].ipBlock.cidr=10.0.0.0/24", "networkPolicy.metricsFrom=null"))
	if _, ok := ports(o.get(t, "NetworkPolicy", namespace, "listener-operator-controller"))["metrics"]; ok {
		t.Error("networkPolicy.metricsFrom empty still opens the metrics port")
	}
}

// TestHelmNames: fullnameOverride renames every object and every reference
// to one (RBAC resourceNames, flags, webhook clientConfig, selectors).
func TestHelmNames(t *testing.T) {
	for _, mode := range []string{"self-signed", "cert-manager"} {
		t.Run(mode, func(t *testing.T) {
			out := helm(t, "fullnameOverride=lo", "nameOverride=listeners", "certMode="+mode)
			o := parse(t, out)
			for k, u := range o {
				if strings.Contains(u.GetName(), "listener-operator") {
					t.Errorf("%s keeps the default name", k)
				}
			}
			dep := o.get(t, "Deployment", namespace, "lo")
			a := args(t, container(t, dep, "manager"))
			role := o.get(t, "Role", namespace, "lo-"+mode)
			switch mode {
			case "self-signed":
				for flag, want := range map[string]string{"--cert-secret-name": "lo-webhook-cert", "--webhook-service-name": "lo-webhook", "--mutating-webhook-configuration": "lo-mutating", "--validating-webhook-configuration": "lo-validating"} {
					if v, _ := flagValue(a, flag); v != want {
						t.Errorf("%s=%s, want %s", flag, v, want)
					}
				}
				o.get(t, "Secret", namespace, "lo-webhook-cert")
				if !grants(role, "", "secrets", "lo-webhook-cert", "update") {
					t.Error("the Role does not grant the renamed Secret")
				}
				if !grants(o.get(t, "ClusterRole", "", "lo-self-signed"), "admissionregistration.k8s.io", "validatingwebhookconfigurations", "lo-validating", "patch") {
					t.Error("the ClusterRole does not grant the renamed webhook configuration")
				}
			case "cert-manager":
				if v, _ := flagValue(a, "--cert-manager-certificate"); v != "lo-serving-cert" {
					t.Errorf("--cert-manager-certificate=%s", v)
				}
				if !grants(role, "cert-manager.io", "certificates", "lo-serving-cert", "get") {
					t.Error("the Role does not grant the renamed Certificate")
				}
				if inj := o.get(t, "MutatingWebhookConfiguration", "", "lo-mutating").GetAnnotations()["cert-manager.io/inject-ca-from"]; inj != namespace+"/lo-ca" {
					t.Errorf("inject-ca-from %q", inj)
				}
			}
			svc := o.get(t, "Service", namespace, "lo-webhook")
			if sel, _, _ := unstructured.NestedStringMap(svc.Object, "spec", "selector"); sel["app.kubernetes.io/name"] != "listeners" {
				t.Errorf("webhook Service selects %v, pods are app.kubernetes.io/name=listeners", sel)
			}
			for _, w := range slice(t, o.get(t, "ValidatingWebhookConfiguration", "", "lo-validating").Object, "webhooks") {
				if n, _, _ := unstructured.NestedString(w.(map[string]any), "clientConfig", "service", "name"); n != "lo-webhook" {
					t.Errorf("webhook calls Service %s", n)
				}
			}
		})
	}
}

// TestHelmRefusesBadValues: typos and contradictions fail at install with
// a message that names the value.
func TestHelmRefusesBadValues(t *testing.T) {
	tool(t, "helm")
	for _, c := range []struct {
		values []string
		want   string
	}{
		{[]string{"replicas=3"}, "additional properties 'replicas' not allowed"},
		{[]string{"operator.replica=3"}, "additional properties 'replica' not allowed"},
		{[]string{"certMode=cert-manger"}, "certMode"},
		{[]string{"preset=stable"}, "preset"},
		{[]string{"webhook.timeoutSeconds=60"}, "timeoutSeconds"},
		{[]string{"webhook.port=0"}, "port"},
		{[]string{"csiNodeDriver.nodeService.resources.limit.memory=1Gi"}, "'limit' not allowed"},
		{[]string{"telemetry.consoleLog.colour=true"}, "'colour' not allowed"},
		{[]string{"telemetry.consoleLog.format=yaml"}, "format"},
		{[]string{"maintenance.endOfSupportCheck.enable=false"}, "'enable' not allowed"},
		{[]string{"monitoring.prometheusRule.for=10 minutes"}, "for"},
		{[]string{"tests.listenerClass="}, "listenerClass"},
		{[]string{"operator.replicas=1", "operator.podDisruptionBudget.maxUnavailable=null", "operator.podDisruptionBudget.minAvailable=1"}, "blocks every node drain"},
		{[]string{"operator.podDisruptionBudget.minAvailable=1"}, "not both"},
		{[]string{"certMode=cert-manager", "certManager.issuerRef.kind=ClusterIssuer"}, "issuerRef needs a name"},
		{[]string{"metrics.service.enabled=false", "metrics.serviceMonitor.enabled=true"}, "needs metrics.service.enabled"},
		{[]string{"networkPolicy.enabled=true"}, "networkPolicy.webhookFrom is empty"},
	} {
		_, err := helmTemplate(namespace, c.values...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("helm template --set %v: err %v, want it to mention %q", c.values, err, c.want)
		}
	}
}

// TestAnotherNamespace installs into "platform" with Helm and with a copy
// of each kustomize overlay whose namespace is changed: every name that
// contains the namespace follows it.
func TestAnotherNamespace(t *testing.T) {
	const ns = "platform"
	overlay := func(t *testing.T, dir string) []byte {
		tmp := t.TempDir()
		if err := os.CopyFS(filepath.Join(tmp, "config"), os.DirFS(filepath.Join(testenv.RepoRoot(), "config"))); err != nil {
			t.Fatal(err)
		}
		k := filepath.Join(tmp, "config", dir, "kustomization.yaml")
		b, err := os.ReadFile(k)
		if err != nil {
			t.Fatal(err)
		}
		b2 := []byte(strings.Replace(string(b), "\nnamespace: listener-operator\n", "\nnamespace: "+ns+"\n", 1))
		if string(b2) == string(b) {
			t.Fatalf("%s sets no namespace", k)
		}
		if err := os.WriteFile(k, b2, 0o644); err != nil {
			t.Fatal(err)
		}
		return run(t, "kustomize", "build", filepath.Join(tmp, "config", dir))
	}
	for _, r := range []struct {
		name        string
		certManager bool
		render      func(t *testing.T) []byte
	}{
		{"helm self-signed", false, func(t *testing.T) []byte { return helmIn(t, ns) }},
		{"helm cert-manager", true, func(t *testing.T) []byte { return helmIn(t, ns, "certMode=cert-manager") }},
		{"kustomize config/selfsigned", false, func(t *testing.T) []byte { return overlay(t, "selfsigned") }},
		{"kustomize config/default", true, func(t *testing.T) []byte { return overlay(t, "default") }},
	} {
		t.Run(r.name, func(t *testing.T) {
			out := r.render(t)
			o := parse(t, out)
			for k, u := range o {
				if u.GetNamespace() != "" && u.GetNamespace() != ns {
					t.Errorf("%s is in %s", k, u.GetNamespace())
				}
			}
			for _, kind := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
				for _, u := range o {
					if u.GetKind() != kind {
						continue
					}
					for _, w := range slice(t, u.Object, "webhooks") {
						w := w.(map[string]any)
						for _, e := range slice(t, w, "namespaceSelector", "matchExpressions") {
							vals, _, _ := unstructured.NestedStringSlice(e.(map[string]any), "values")
							if slices.Contains(vals, "listener-operator") || !slices.Contains(vals, ns) {
								t.Errorf("%s %s excludes %v, want the operator's namespace %s", kind, w["name"], vals, ns)
							}
						}
						if svcNS, _, _ := unstructured.NestedString(w, "clientConfig", "service", "namespace"); svcNS != ns {
							t.Errorf("%s %s calls a Service in %s", kind, w["name"], svcNS)
						}
					}
					inj := u.GetAnnotations()["cert-manager.io/inject-ca-from"]
					if r.certManager && inj != ns+"/listener-operator-ca" {
						t.Errorf("%s inject-ca-from %q", kind, inj)
					}
				}
			}
			if r.certManager {
				dns, _, _ := unstructured.NestedStringSlice(o.get(t, "Certificate", ns, "listener-operator-serving-cert").Object, "spec", "dnsNames")
				want := []string{"listener-operator-webhook." + ns + ".svc", "listener-operator-webhook." + ns + ".svc.cluster.local"}
				if !reflect.DeepEqual(dns, want) {
					t.Errorf("serving certificate DNS names %v, want %v", dns, want)
				}
			}
			if strings.Contains(r.name, "kustomize") {
				nsObj := o.get(t, "Namespace", "", ns)
				if nsObj.GetLabels()["pod-security.kubernetes.io/enforce"] != "privileged" {
					t.Errorf("Namespace labels %v: the CSI node plugin needs pod-security.kubernetes.io/enforce=privileged", nsObj.GetLabels())
				}
			}
		})
	}
}

// TestChartDocumentsEveryValue: the chart's README.md names every leaf of
// values.yaml, and values.schema.json knows every one.
func TestChartDocumentsEveryValue(t *testing.T) {
	chart := filepath.Join(testenv.RepoRoot(), "deploy", "helm", "listener-operator")
	readme, err := os.ReadFile(filepath.Join(chart, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range valueKeys(t, filepath.Join(chart, "values.yaml")) {
		if !strings.Contains(string(readme), "`"+k+"`") {
			t.Errorf("README.md does not document `%s`", k)
		}
	}
}

// valueKeys lists the dotted keys of a values file down to each setting; a
// free-form object (resources, security contexts, selectors, affinity) is
// one setting.
func valueKeys(t *testing.T, path string) []string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(raw, &values); err != nil {
		t.Fatal(err)
	}
	freeForm := map[string]bool{"resources": true, "podSecurityContext": true, "securityContext": true, "nodeSelector": true, "affinity": true, "issuerRef": true}
	var keys []string
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			sub, isMap := v.(map[string]any)
			if isMap && len(sub) > 0 && !freeForm[k] {
				walk(prefix+k+".", sub)
				continue
			}
			keys = append(keys, prefix+k)
		}
	}
	walk("", values)
	slices.Sort(keys)
	return keys
}

// TestHelmLint: the chart passes `helm lint --strict` in both certificate
// modes.
func TestHelmLint(t *testing.T) {
	for _, mode := range []string{"self-signed", "cert-manager"} {
		if out := run(t, "helm", "lint", "--strict", "deploy/helm/listener-operator", "--set", "certMode="+mode); !strings.Contains(string(out), "0 chart(s) failed") {
			t.Errorf("helm lint (%s):\n%s", mode, out)
		}
	}
}

// TestExistingChartValues: a values file written for the existing chart
// installs with this one, each value where it means the same.
func TestExistingChartValues(t *testing.T) {
	tool(t, "helm")
	out, err := exec.Command(filepath.Join(testenv.RepoRoot(), "bin", "tools", "helm"), "template", "listener-operator", filepath.Join(testenv.RepoRoot(), "deploy", "helm", "listener-operator"),
		"--namespace", namespace, "-f", filepath.Join(testenv.RepoRoot(), "deploy", "testdata", "existing-chart-25.11-shape-values.yaml")).CombinedOutput()
	if err != nil {
		t.Fatalf("helm template -f existing-chart-25.11-shape-values.yaml: %v\n%s", err, out)
	}
	o := parse(t, out)
	ctl := o.get(t, "Deployment", namespace, "listener-operator-csi-controller")
	node := o.get(t, "DaemonSet", namespace, "listener-operator-csi-node")
	dep := o.get(t, "Deployment", namespace, "listener-operator")
	checks := []struct {
		what      string
		got, want any
	}{
		{"operator image", container(t, dep, "manager")["image"], "oci.example/sdp/listener-operator:25.7.0"},
		{"pull secrets", podSpec(t, node)["imagePullSecrets"], []any{map[string]any{"name": "regcred"}}},
		{"vendor label", node.GetLabels()["stackable.tech/vendor"], "Stackable"},
		{"cluster domain", slices.Contains(args(t, container(t, dep, "manager")), "--cluster-domain=my-cluster.local"), true},
		{"preset", slices.Contains(args(t, container(t, dep, "manager")), "--listener-class-preset=stable-nodes"), true},
		{"provisioner image", container(t, ctl, "csi-provisioner")["image"], "oci.example/sdp/sig-storage/csi-provisioner:v5.2.0"},
		{"provisioner pod annotations", ctl.Object["spec"].(map[string]any)["template"].(map[string]any)["metadata"].(map[string]any)["annotations"], map[string]any{"team": "platform"}},
		{"provisioner node selector", podSpec(t, ctl)["nodeSelector"], map[string]any{"kubernetes.io/os": "linux", "pool": "infra"}},
		{"controller service resources", container(t, ctl, "csi")["resources"].(map[string]any)["limits"], map[string]any{"cpu": "100m", "memory": "128Mi"}},
		{"registrar image", container(t, node, "node-driver-registrar")["image"], "oci.example/sdp/sig-storage/csi-node-driver-registrar:v2.13.0"},
		{"node service SELinux", container(t, node, "csi")["securityContext"].(map[string]any)["seLinuxOptions"], map[string]any{"type": "spc_t"}},
		{"controller service: their runAsUser: 0 dropped", container(t, ctl, "csi")["securityContext"].(map[string]any)["runAsUser"], nil},
		{"console log level", slices.Contains(args(t, container(t, dep, "manager")), "--zap-log-level=debug"), true},
		{"console log format", slices.Contains(args(t, container(t, node, "csi")), "--zap-encoder=console"), true},
		{"trace exporter", envValue(container(t, dep, "manager"), "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), "http://otel-collector.monitoring:4317"},
		{"log exporter", envValue(container(t, ctl, "csi"), "OTEL_LOGS_EXPORTER"), "otlp"},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %#v, want %#v", c.what, c.got, c.want)
		}
	}
}
