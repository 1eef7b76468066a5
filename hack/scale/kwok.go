package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// kwokOptions are the settings kwok v0.8.0 needs in its configuration
// file: it applies no defaults to them (../shared/FACTS.md).
const kwokOptions = `apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options:
  manageAllNodes: false
  manageNodesWithAnnotationSelector: kwok.x-k8s.io/node=fake
  nodeLeaseDurationSeconds: 40
  nodeLeaseParallelism: 4
  podPlayStageParallelism: 4
  nodePlayStageParallelism: 4
  podsOnNodeSyncParallelism: 1
  enablePodsOnNodeSyncListPager: true
`

// kwokStages are the stock Stage sets the fake nodes and their pods play.
var kwokStages = []string{"node/fast", "node/heartbeat-with-lease", "pod/fast"}

// startKwok writes kwok's configuration (options plus the stock stages
// under stagesDir) into dir and runs kwok out of cluster until ctx ends or
// the returned stop is called. Its log goes to dir/kwok.log.
func startKwok(ctx context.Context, bin, stagesDir, kubeconfig, dir string) (stop func(), err error) {
	var cfg strings.Builder
	cfg.WriteString(kwokOptions)
	for _, set := range kwokStages {
		files, err := filepath.Glob(filepath.Join(stagesDir, set, "*.yaml"))
		if err != nil || len(files) == 0 {
			return nil, fmt.Errorf("no kwok stages in %s (%v)", filepath.Join(stagesDir, set), err)
		}
		for _, f := range files {
			if filepath.Base(f) == "kustomization.yaml" {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				return nil, err
			}
			cfg.WriteString("---\n")
			cfg.Write(b)
			cfg.WriteString("\n")
		}
	}
	cfgFile := filepath.Join(dir, "kwok.yaml")
	if err := os.WriteFile(cfgFile, []byte(cfg.String()), 0o600); err != nil {
		return nil, err
	}
	logFile, err := os.Create(filepath.Join(dir, "kwok.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--kubeconfig", kubeconfig, "--config", cfgFile,
		"--manage-all-nodes=false", "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
		"--server-address=127.0.0.1:0", "--cidr=10.90.0.0/16")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start kwok: %w", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); logFile.Close(); close(done) }()
	stop = func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	go func() {
		select {
		case <-ctx.Done():
			stop()
		case <-done:
		}
	}()
	return stop, nil
}

// kwokNodeName is the name of fake node i.
func kwokNodeName(i int) string { return fmt.Sprintf("kwok-node-%03d", i) }

// createKwokNodes creates n fake nodes for kwok to manage, tainted so that
// only the harness's pods go there, each with a CSINode that lists the
// listener driver and its topology key (the provisioner runs with
// topology) and a pod CIDR of its own for kwok's pod IPs.
func createKwokNodes(ctx context.Context, c client.Client, n int) error {
	for i := range n {
		name := kwokNodeName(i)
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name:        name,
				Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
				Labels: map[string]string{
					"type": "kwok", corev1.LabelHostname: name, v1alpha1.TopologyKeyHostname: name,
					corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64",
				},
			},
			Spec: corev1.NodeSpec{
				PodCIDR: fmt.Sprintf("10.90.%d.0/24", i),
				Taints:  []corev1.Taint{{Key: "kwok.x-k8s.io/node", Value: "fake", Effect: corev1.TaintEffectNoSchedule}},
			},
			Status: corev1.NodeStatus{
				Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("512Gi"), corev1.ResourcePods: resource.MustParse("400")},
				Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("512Gi"), corev1.ResourcePods: resource.MustParse("400")},
				Addresses:   []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("10.91.%d.%d", i/250, i%250+1)}, {Type: corev1.NodeHostName, Address: name}},
			},
		}
		if err := c.Create(ctx, node); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create node %s: %w", name, err)
		}
		csiNode := &storagev1.CSINode{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{
				Name: v1alpha1.DriverName, NodeID: name, TopologyKeys: []string{v1alpha1.TopologyKeyHostname},
			}}},
		}
		if err := c.Create(ctx, csiNode); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create CSINode %s: %w", name, err)
		}
	}
	return nil
}

// kwokPlacement puts a pod on the fake nodes.
func kwokPlacement(spec *corev1.PodSpec) {
	spec.NodeSelector = map[string]string{"type": "kwok"}
	spec.Tolerations = []corev1.Toleration{{Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
}

// readyKwokNodes counts the kwok nodes that are Ready.
func readyKwokNodes(ctx context.Context, c client.Client) (int, error) {
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes, client.MatchingLabels{"type": "kwok"}); err != nil {
		return 0, err
	}
	ready := 0
	for _, n := range nodes.Items {
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				ready++
			}
		}
	}
	return ready, nil
}
