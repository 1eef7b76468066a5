package csi

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// TestManifests renders config/csi with kubectl's kustomize, has the real
// API server accept it (server-side dry run), and checks the settings the
// driver depends on.
func TestManifests(t *testing.T) {
	e := testenv.Require(t, env)
	ctx := context.Background()
	rendered, err := e.Kubectl(ctx, nil, "kustomize", filepath.Join(testenv.RepoRoot(), "config", "csi"))
	if err != nil {
		t.Fatalf("kustomize config/csi: %v\n%s", err, rendered)
	}
	if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "listener-operator"}}); err != nil && !strings.Contains(err.Error(), "already exists") {
		t.Fatal(err)
	}
	if out, err := e.Kubectl(ctx, []byte(rendered), "apply", "--dry-run=server", "-f", "-"); err != nil {
		t.Fatalf("the API server refuses config/csi: %v\n%s", err, out)
	}

	decode := serializer.NewCodecFactory(e.Scheme).UniversalDeserializer()
	var (
		driver  *storagev1.CSIDriver
		class   *storagev1.StorageClass
		deploy  *appsv1.Deployment
		daemons *appsv1.DaemonSet
	)
	r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(rendered)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj, _, err := decode.Decode(doc, nil, nil)
		if err != nil {
			t.Fatalf("decode %s: %v", doc, err)
		}
		switch o := obj.(type) {
		case *storagev1.CSIDriver:
			driver = o
		case *storagev1.StorageClass:
			class = o
		case *appsv1.Deployment:
			deploy = o
		case *appsv1.DaemonSet:
			daemons = o
		}
	}
	if driver == nil || class == nil || deploy == nil || daemons == nil {
		t.Fatalf("config/csi lacks a CSIDriver, StorageClass, Deployment or DaemonSet")
	}
	if driver.Name != v1alpha1.DriverName || *driver.Spec.AttachRequired || !*driver.Spec.PodInfoOnMount || !*driver.Spec.RequiresRepublish {
		t.Errorf("CSIDriver %s: attachRequired %v podInfoOnMount %v requiresRepublish %v; want %s, false, true, true",
			driver.Name, *driver.Spec.AttachRequired, *driver.Spec.PodInfoOnMount, *driver.Spec.RequiresRepublish, v1alpha1.DriverName)
	}
	if class.Name != v1alpha1.StorageClassName || class.Provisioner != v1alpha1.DriverName || *class.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer {
		t.Errorf("StorageClass %s (provisioner %s, binding %s) is not the delayed-binding listener class", class.Name, class.Provisioner, *class.VolumeBindingMode)
	}
	args := func(spec corev1.PodSpec, container string) []string {
		for _, c := range spec.Containers {
			if c.Name == container {
				return c.Args
			}
		}
		t.Errorf("no container %s", container)
		return nil
	}
	if a := args(deploy.Spec.Template.Spec, "csi-provisioner"); !slices.Contains(a, "--extra-create-metadata") {
		t.Errorf("csi-provisioner args %v lack --extra-create-metadata", a)
	}
	if a := args(deploy.Spec.Template.Spec, "csi"); !slices.Contains(a, "--mode=controller") {
		t.Errorf("controller args %v lack --mode=controller", a)
	}
	if a := args(daemons.Spec.Template.Spec, "csi"); !slices.Contains(a, "--mode=node") {
		t.Errorf("node args %v lack --mode=node", a)
	}
	// Sealed volumes: the node plugin mounts a tmpfs per volume that kubelet
	// and the pod must see.
	for _, c := range daemons.Spec.Template.Spec.Containers {
		if c.Name != "csi" {
			continue
		}
		if sc := c.SecurityContext; sc == nil || sc.Privileged == nil || !*sc.Privileged {
			t.Errorf("node plugin securityContext %+v: want privileged (Bidirectional mount propagation)", sc)
		}
		for _, m := range c.VolumeMounts {
			if m.Name == "pods-dir" && (m.MountPropagation == nil || *m.MountPropagation != corev1.MountPropagationBidirectional) {
				t.Errorf("node plugin mounts kubelet's pods directory with propagation %v, want Bidirectional", m.MountPropagation)
			}
		}
	}
}
