package main

import (
	"fmt"
	"strings"
	"time"
)

// The namespace the operator is installed into through OLM, and the one
// the listener check runs in (the operator's own namespace is left out of
// every webhook, as for the Helm chart's test).
const (
	installNS = "listener-operator-olm"
	checkNS   = "listener-olm-check"
)

// subscribe makes the catalog known to OLM (a CatalogSource of the catalog
// image in OLM's global catalog namespace) and subscribes to the package
// in a namespace of its own whose OperatorGroup names no target namespaces:
// the AllNamespaces install mode, the only one the CSV supports.
func subscribe(k kube, catalogRef string) error {
	return k.apply(fmt.Sprintf(`apiVersion: operators.coreos.com/v1alpha1
kind: CatalogSource
metadata: {name: listener-operator, namespace: %[1]s}
spec:
  sourceType: grpc
  image: %[2]s
  displayName: listener-operator (local)
  grpcPodConfig: {securityContextConfig: restricted}
---
apiVersion: v1
kind: Namespace
metadata: {name: %[3]s}
---
apiVersion: operators.coreos.com/v1
kind: OperatorGroup
metadata: {name: listener-operator, namespace: %[3]s}
spec: {}
---
apiVersion: operators.coreos.com/v1alpha1
kind: Subscription
metadata: {name: listener-operator, namespace: %[3]s}
spec:
  name: listener-operator
  channel: alpha
  source: listener-operator
  sourceNamespace: %[1]s
  installPlanApproval: Automatic
`, olmNS, catalogRef, installNS))
}

// waitInstalled waits for what a user waits for after subscribing: the
// catalog pod serving, the CSV Succeeded (OLM ran its Deployments and they
// are available), and the olm-deployer's objects: the CSI node DaemonSet
// ready on every node, the CSIDriver, the StorageClass, the webhook
// configurations and the preset ListenerClass the operator creates.
func waitInstalled(k kube, csv string) error {
	steps := []struct {
		what    string
		timeout time.Duration
		cond    func() (bool, string)
	}{
		{"the catalog source to be READY", 3 * time.Minute,
			k.equals(olmNS, "catalogsource/listener-operator", "{.status.connectionState.lastObservedState}", "READY")},
		{"CSV " + csv + " to be Succeeded", 6 * time.Minute,
			k.equals(installNS, "csv/"+csv, "{.status.phase}", "Succeeded")},
		{"the CSI node DaemonSet to be ready", 3 * time.Minute, daemonSetReady(k, "listener-operator-csi-node")},
		{"the olm-deployer's cluster-scoped objects", time.Minute, func() (bool, string) {
			return present(k, "", "csidriver/listeners.stackable.tech", "storageclass/listeners.stackable.tech",
				"mutatingwebhookconfiguration/listener-operator-mutating",
				"validatingwebhookconfiguration/listener-operator-validating")
		}},
		{"the preset ListenerClass external-unstable", 2 * time.Minute, func() (bool, string) {
			return present(k, "", "listenerclass/external-unstable")
		}},
	}
	for _, s := range steps {
		if err := k.wait(s.what, s.timeout, s.cond); err != nil {
			return err
		}
	}
	return nil
}

func daemonSetReady(k kube, name string) func() (bool, string) {
	return func() (bool, string) {
		v := k.field(installNS, "daemonset/"+name, "{.status.desiredNumberScheduled}/{.status.numberReady}")
		want, ready, _ := strings.Cut(v, "/")
		return want != "" && want != "0" && want == ready, "scheduled/ready " + v
	}
}

// present says whether every one of objs exists.
func present(k kube, ns string, objs ...string) (bool, string) {
	var missing []string
	for _, o := range objs {
		if k.field(ns, o, "{.metadata.name}") == "" {
			missing = append(missing, o)
		}
	}
	return len(missing) == 0, "missing: " + strings.Join(missing, ", ")
}
