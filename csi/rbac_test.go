package csi

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/testenv"
)

// TestRolesGrantEachComponentOnlyWhatItReads applies config/csi/rbac to the
// real API server and asks it, as each CSI service account, what it may
// do: the node plugin reads what a publish needs and nothing else (no list
// of volumes or claims, no writes, no secrets); the controller no longer
// reads pods. A few real requests made as the node plugin confirm it.
func TestRolesGrantEachComponentOnlyWhatItReads(t *testing.T) {
	e := testenv.Require(t, env)
	ctx := context.Background()
	rendered, err := e.Kubectl(ctx, nil, "kustomize", filepath.Join(testenv.RepoRoot(), "config", "csi", "rbac"))
	if err != nil {
		t.Fatalf("kustomize config/csi/rbac: %v\n%s", err, rendered)
	}
	if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "listener-operator"}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if out, err := e.Kubectl(ctx, []byte(rendered), "apply", "--server-side", "-f", "-"); err != nil {
		t.Fatalf("apply config/csi/rbac: %v\n%s", err, out)
	}

	const (
		node       = "system:serviceaccount:listener-operator:listener-operator-csi-node"
		controller = "system:serviceaccount:listener-operator:listener-operator-csi-controller"
	)
	core := func(resource string) authorizationv1.ResourceAttributes {
		return authorizationv1.ResourceAttributes{Resource: resource}
	}
	listeners := func(resource string) authorizationv1.ResourceAttributes {
		return authorizationv1.ResourceAttributes{Group: v1alpha1.GroupVersion.Group, Resource: resource}
	}
	tests := []struct {
		user  string
		verb  string
		attrs authorizationv1.ResourceAttributes
		want  bool
	}{
		// The node plugin: its caches and live reads.
		{node, "list", core("pods"), true},
		{node, "watch", core("pods"), true},
		{node, "get", core("pods"), true},
		{node, "list", core("nodes"), true},
		{node, "watch", core("nodes"), true},
		{node, "list", listeners("listeners"), true},
		{node, "watch", listeners("listeners"), true},
		{node, "get", listeners("listeners"), true},
		{node, "list", listeners("listenerclasses"), true},
		{node, "get", core("persistentvolumes"), true},
		{node, "get", core("persistentvolumeclaims"), true},
		// … and nothing else.
		{node, "list", core("persistentvolumes"), false},
		{node, "watch", core("persistentvolumes"), false},
		{node, "list", core("persistentvolumeclaims"), false},
		{node, "get", core("secrets"), false},
		{node, "list", core("configmaps"), false},
		{node, "create", core("pods"), false},
		{node, "patch", core("pods"), false},
		{node, "delete", core("pods"), false},
		{node, "update", core("nodes"), false},
		{node, "create", core("events"), false},
		{node, "update", listeners("listeners"), false},
		{node, "patch", authorizationv1.ResourceAttributes{Group: v1alpha1.GroupVersion.Group, Resource: "listeners", Subresource: "status"}, false},
		{node, "create", core("persistentvolumes"), false},
		// The controller: provisioning reads, and csi-provisioner's role.
		{controller, "list", core("persistentvolumes"), true},
		{controller, "get", listeners("listeners"), true},
		{controller, "watch", listeners("listenerclasses"), true},
		// Listeners are read one at a time, never watched or listed.
		{controller, "watch", listeners("listeners"), false},
		{controller, "list", listeners("listeners"), false},
		{controller, "get", core("persistentvolumeclaims"), true},
		{controller, "create", core("persistentvolumes"), true}, // csi-provisioner
		{controller, "list", core("pods"), false},
		{controller, "get", core("pods"), false},
		{controller, "get", core("secrets"), false},
	}
	for _, tt := range tests {
		who := tt.user[strings.LastIndex(tt.user, ":")+1:]
		res := tt.attrs.Resource
		if tt.attrs.Subresource != "" {
			res += "/" + tt.attrs.Subresource
		}
		t.Run(fmt.Sprintf("%s %s %s", who, tt.verb, res), func(t *testing.T) {
			attrs := tt.attrs
			attrs.Verb = tt.verb
			// RBAC objects reach the authorizer through an informer: a
			// grant may take a moment to show.
			var got bool
			for range 50 {
				sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
					User:               tt.user,
					Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:listener-operator", "system:authenticated"},
					ResourceAttributes: &attrs,
				}}
				if err := e.Client.Create(ctx, sar); err != nil {
					t.Fatal(err)
				}
				if got = sar.Status.Allowed; got == tt.want || !tt.want {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if got != tt.want {
				t.Errorf("%s may %s %s: %v, want %v", who, tt.verb, res, got, tt.want)
			}
		})
	}

	// Real requests as the node plugin: what its cache does, and a write.
	cfg := rest.CopyConfig(e.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: node, Groups: []string{"system:serviceaccounts", "system:authenticated"}}
	c, err := client.New(cfg, client.Options{Scheme: e.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.List(ctx, &corev1.PodList{}, client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("spec.nodeName", "node-1")}); err != nil {
		t.Errorf("the node plugin's list of its node's pods: %v", err)
	}
	if err := c.List(ctx, &corev1.PersistentVolumeList{}); !apierrors.IsForbidden(err) {
		t.Errorf("the node plugin's list of every PersistentVolume: %v, want Forbidden", err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "from-node-plugin"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
	if err := c.Create(ctx, pod); !apierrors.IsForbidden(err) {
		t.Errorf("the node plugin creating a pod: %v, want Forbidden", err)
	}
}
