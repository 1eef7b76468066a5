package main

import (
	"fmt"
	"strings"
	"time"
)

// checkListener is the Helm chart's `helm test` (its listener-check pod)
// against the operator OLM installed: a pod with a listener volume of class
// external-unstable (a node's address and a NodePort, what a client outside
// the cluster reaches), admitted by the webhooks the olm-deployer applied, provisioned by the CSI
// controller, published by the node plugin; `listener-operator
// check-listener` connects to its own published address and exits 0. It
// returns the address the Listener got.
func checkListener(k kube, operatorRef string) (string, error) {
	err := k.apply(fmt.Sprintf(checkPod, checkNS, operatorRef))
	if err != nil {
		return "", err
	}
	err = k.wait("the listener-check pod to succeed", 4*time.Minute, func() (bool, string) {
		phase := k.field(checkNS, "pod/listener-check", "{.status.phase}")
		return phase == "Succeeded" || phase == "Failed", "phase " + phase
	})
	if err != nil {
		return "", err
	}
	if phase := k.field(checkNS, "pod/listener-check", "{.status.phase}"); phase != "Succeeded" {
		logs, _ := k.out("-n", checkNS, "logs", "listener-check")
		return "", fmt.Errorf("listener-check pod %s:\n%s", phase, logs)
	}
	addr := k.field(checkNS, "listeners", "{.items[0].status.ingressAddresses[0].address}:{.items[0].status.ingressAddresses[0].ports.check}")
	if strings.HasPrefix(addr, ":") || strings.HasSuffix(addr, ":") {
		return "", fmt.Errorf("the check's Listener has no address and port in its status (%q)", addr)
	}
	// The claim, its volume and Listener go with the namespace while the
	// driver still runs: deleted after the uninstall, their finalizers
	// would have nobody to clear them.
	if _, err := k.out("delete", "namespace", checkNS, "--timeout=120s"); err != nil {
		return addr, err
	}
	return addr, nil
}

// checkPod is the chart's listener-check pod (templates/tests), in a
// namespace of its own: %[1]s the namespace, %[2]s the operator's image.
const checkPod = `apiVersion: v1
kind: Namespace
metadata: {name: %[1]s}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: listener-check, namespace: %[1]s}
automountServiceAccountToken: false
---
apiVersion: v1
kind: Pod
metadata: {name: listener-check, namespace: %[1]s}
spec:
  serviceAccountName: listener-check
  automountServiceAccountToken: false
  restartPolicy: Never
  securityContext:
    runAsNonRoot: true
    runAsUser: 65532
    runAsGroup: 65532
    seccompProfile: {type: RuntimeDefault}
  containers:
  - name: check
    image: %[2]s
    args: [check-listener, --dir=/stackable/listener, --serve=check=8080, --timeout=120s]
    ports: [{name: check, containerPort: 8080, protocol: TCP}]
    securityContext:
      allowPrivilegeEscalation: false
      readOnlyRootFilesystem: true
      capabilities: {drop: [ALL]}
    volumeMounts: [{name: listener, mountPath: /stackable/listener}]
  volumes:
  - name: listener
    ephemeral:
      volumeClaimTemplate:
        metadata:
          annotations: {listeners.stackable.tech/listener-class: external-unstable}
        spec:
          storageClassName: listeners.stackable.tech
          accessModes: [ReadWriteMany]
          resources: {requests: {storage: "1"}}
`

// uninstall removes the operator the way OLM's documentation says (the
// Subscription first, or OLM installs the CSV again) and checks that
// deleting the CSV removed what the olm-deployer created: the DaemonSet and
// webhook Secret (owned by its Deployment), the CSIDriver, StorageClass,
// webhook configurations and admission policies (owned by the ClusterRole
// OLM made for it), and the CSV's own Deployments.
func uninstall(k kube, csv string) error {
	// Each is checked present first: a name that never existed would be
	// "gone" at once.
	if ok, missing := present(k, installNS, namespaced...); !ok {
		return fmt.Errorf("before deleting the CSV: %s", missing)
	}
	if ok, missing := present(k, "", clusterScoped...); !ok {
		return fmt.Errorf("before deleting the CSV: %s", missing)
	}
	if _, err := k.out("-n", installNS, "delete", "subscription/listener-operator", "csv/"+csv); err != nil {
		return err
	}
	return k.wait("the operator's objects to be removed", 3*time.Minute, func() (bool, string) {
		if ok, left := k.gone(installNS, namespaced...); !ok {
			return false, left
		}
		return k.gone("", clusterScoped...)
	})
}

// What deleting the CSV must remove.
var (
	namespaced = []string{"deployment/listener-operator", "deployment/listener-operator-csi-controller",
		"deployment/listener-operator-olm-deployer", "daemonset/listener-operator-csi-node",
		"secret/listener-operator-webhook-cert"}
	clusterScoped = []string{"csidriver/listeners.stackable.tech", "storageclass/listeners.stackable.tech",
		"mutatingwebhookconfiguration/listener-operator-mutating",
		"validatingwebhookconfiguration/listener-operator-validating",
		"validatingadmissionpolicy/listener-operator-volumes",
		"validatingadmissionpolicybinding/listener-operator-volumes"}
)
