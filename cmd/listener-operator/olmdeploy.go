package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// olmDeployCommand is the OLM bundle's olm-deployer (docs/install.md,
// "OLM"): a CSV installs only Deployments, RBAC, Services and a few other
// kinds, so this applies the rest of the install (webhook configurations,
// admission policies, FlowSchema, CSI node DaemonSet, CSIDriver,
// StorageClass, the webhook Secret), which the bundle carries in a ConfigMap
// mounted at --manifests, into the namespace OLM installed it in. Then it
// waits, so that its Deployment stays available as OLM expects.
//
// Namespaced objects are owned by the deployer's Deployment and
// cluster-scoped ones by the ClusterRole OLM created for it, so that
// removing the CSV (which deletes both) lets the garbage collector delete
// everything this applied.
func olmDeployCommand() command {
	return command{
		summary: "apply the objects an OLM bundle cannot carry (the bundle's olm-deployer)",
		setup: func(fs *flag.FlagSet, _ io.Writer) func(context.Context) error {
			dir := fs.String("manifests", "/manifests", "Directory of the objects to apply (the bundle's ConfigMap).")
			deployment := fs.String("deployment", "listener-operator-olm-deployer", "This deployer's Deployment (owner of the namespaced objects).")
			ns := fs.String("namespace", os.Getenv("POD_NAMESPACE"), "The install namespace (env POD_NAMESPACE).")
			from := fs.String("manifests-namespace", "listener-operator", "The namespace the manifests were rendered for.")
			return func(ctx context.Context) error {
				if *ns == "" {
					return errors.New("--namespace (or POD_NAMESPACE) is required")
				}
				objs, err := readManifests(*dir)
				if err != nil {
					return err
				}
				cfg, err := ctrl.GetConfig()
				if err != nil {
					return err
				}
				c, err := client.New(cfg, client.Options{})
				if err != nil {
					return err
				}
				if err := olmApply(ctx, c, objs, *ns, *from, *deployment); err != nil {
					return err
				}
				fmt.Fprintf(os.Stderr, "olm-deploy: applied %d objects into %s; waiting\n", len(objs), *ns)
				<-ctx.Done()
				return nil
			}
		},
	}
}

// readManifests decodes every *.yaml file of dir, in name order (a
// ConfigMap volume also holds ..data links, which are skipped).
func readManifests(dir string) ([]*unstructured.Unstructured, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var out []*unstructured.Unstructured
	for _, n := range names {
		data, err := os.ReadFile(n)
		if err != nil {
			return nil, err
		}
		u := &unstructured.Unstructured{}
		if err := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096).Decode(&u.Object); err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		out = append(out, u)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no *.yaml in %s", dir)
	}
	return out, nil
}

// olmApply retargets each object at namespace ns, sets its owner and applies
// it server-side (so the webhook Secret keeps the data the operator wrote).
func olmApply(ctx context.Context, c client.Client, objs []*unstructured.Unstructured, ns, from, deployment string) error {
	var dep appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: deployment}, &dep); err != nil {
		return fmt.Errorf("own Deployment: %w", err)
	}
	clusterOwner, err := deployerClusterRole(ctx, c, ns, dep.Spec.Template.Spec.ServiceAccountName)
	if err != nil {
		return err
	}
	for _, u := range objs {
		retarget(u.Object, "", from, ns)
		namespaced, err := c.IsObjectNamespaced(u)
		if err != nil {
			return fmt.Errorf("%s %s: %w", u.GetKind(), u.GetName(), err)
		}
		owner := clusterOwner
		if namespaced {
			owner = metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: dep.Name, UID: dep.UID}
		} else {
			u.SetNamespace("") // kustomize gives kinds it does not know (FlowSchema) a namespace
		}
		if owner.UID != "" {
			u.SetOwnerReferences([]metav1.OwnerReference{owner})
		}
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("listener-operator-olm-deployer"), client.ForceOwnership); err != nil {
			return fmt.Errorf("apply %s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
	return nil
}

// deployerClusterRole finds the ClusterRole OLM bound to the deployer's
// service account (OLM names it after the CSV, with a hash). No owner (a
// zero reference) if there is none: the objects then stay after the CSV.
// Unstructured, so that the operator's scheme need not know RBAC's types.
func deployerClusterRole(ctx context.Context, c client.Client, ns, sa string) (metav1.OwnerReference, error) {
	crbs := &unstructured.UnstructuredList{}
	crbs.SetAPIVersion("rbac.authorization.k8s.io/v1")
	crbs.SetKind("ClusterRoleBindingList")
	if err := c.List(ctx, crbs); err != nil {
		return metav1.OwnerReference{}, fmt.Errorf("find own ClusterRole: %w", err)
	}
	for _, b := range crbs.Items {
		kind, _, _ := unstructured.NestedString(b.Object, "roleRef", "kind")
		name, _, _ := unstructured.NestedString(b.Object, "roleRef", "name")
		subjects, _, _ := unstructured.NestedSlice(b.Object, "subjects")
		for _, s := range subjects {
			m, _ := s.(map[string]any)
			if kind != "ClusterRole" || m["kind"] != "ServiceAccount" || m["namespace"] != ns || m["name"] != sa {
				continue
			}
			r := &unstructured.Unstructured{}
			r.SetAPIVersion("rbac.authorization.k8s.io/v1")
			r.SetKind("ClusterRole")
			if err := c.Get(ctx, client.ObjectKey{Name: name}, r); err != nil {
				return metav1.OwnerReference{}, err
			}
			return metav1.OwnerReference{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: r.GetName(), UID: r.GetUID()}, nil
		}
	}
	return metav1.OwnerReference{}, nil
}

// retarget moves an object rendered for namespace from into namespace to:
// every "namespace" field and "namespaces" item, the values of a
// kubernetes.io/metadata.name selector (the webhooks skip the operator's
// own namespace), and service account user names in CEL expressions (the
// admission policies' matchConditions).
func retarget(v any, key, from, to string) any {
	switch x := v.(type) {
	case map[string]any:
		selector := x["key"] == "kubernetes.io/metadata.name"
		for k, val := range x {
			as := k
			if selector && k == "values" {
				as = "namespaces" // its items are namespace names
			}
			x[k] = retarget(val, as, from, to)
		}
		return x
	case []any:
		for i, val := range x {
			x[i] = retarget(val, key, from, to)
		}
		return x
	case string:
		if (key == "namespace" || key == "namespaces") && x == from {
			return to
		}
		if key == "expression" {
			return strings.ReplaceAll(x, "system:serviceaccount:"+from+":", "system:serviceaccount:"+to+":")
		}
		return x
	}
	return v
}
