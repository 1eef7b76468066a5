package main

import (
	"fmt"
	"maps"
	"slices"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/api/pkg/lib/version"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// csvParts collects what becomes the CSV while the objects are sorted.
type csvParts struct {
	deployments        []v1alpha1.StrategyDeploymentSpec
	permissions        map[string][]rbacv1.PolicyRule
	clusterPermissions map[string][]rbacv1.PolicyRule
	owned              []v1alpha1.CRDDescription
	images             map[string]string
}

// buildCSV turns the objects OLM can install into the CSV and the plain
// bundle manifests; deployer are the objects the olm-deployer applies
// (their images are related images too).
func buildCSV(objs, deployer []*unstructured.Unstructured, o options) (*v1alpha1.ClusterServiceVersion, []*unstructured.Unstructured, error) {
	p := csvParts{permissions: map[string][]rbacv1.PolicyRule{}, clusterPermissions: map[string][]rbacv1.PolicyRule{}, images: map[string]string{}}
	bound := bindings(objs)
	var plain []*unstructured.Unstructured
	var operatorImage string
	for _, u := range objs {
		switch u.GetKind() {
		case "ClusterRole", "Role":
			var r rbacv1.ClusterRole
			if err := fromUnstructured(u, &r); err != nil {
				return nil, nil, err
			}
			sas := bound[u.GetKind()+"/"+u.GetName()]
			if len(sas) == 0 {
				plain = append(plain, u) // aggregated and reader roles: nobody here is bound to them
			}
			target := p.clusterPermissions
			if u.GetKind() == "Role" {
				target = p.permissions
			}
			for _, sa := range sas {
				target[sa] = append(target[sa], r.Rules...)
			}
		case "ClusterRoleBinding", "RoleBinding", "ServiceAccount":
			// OLM creates the service accounts and binds them to the permissions.
		case "Deployment":
			var d appsv1.Deployment
			if err := fromUnstructured(u, &d); err != nil {
				return nil, nil, err
			}
			p.deployments = append(p.deployments, v1alpha1.StrategyDeploymentSpec{Name: d.Name, Label: d.Labels, Spec: d.Spec})
			addImages(p.images, d.Spec.Template.Spec)
			if d.Name == "listener-operator" {
				operatorImage = d.Spec.Template.Spec.Containers[0].Image
			}
		case "CustomResourceDefinition":
			var crd apiextensionsv1.CustomResourceDefinition
			if err := fromUnstructured(u, &crd); err != nil {
				return nil, nil, err
			}
			p.owned = append(p.owned, describeCRD(&crd)...)
			plain = append(plain, u)
		default:
			plain = append(plain, u)
		}
	}
	for _, u := range deployer {
		if u.GetKind() == "DaemonSet" {
			var ds appsv1.DaemonSet
			if err := fromUnstructured(u, &ds); err != nil {
				return nil, nil, err
			}
			addImages(p.images, ds.Spec.Template.Spec)
		}
	}
	if operatorImage == "" {
		return nil, nil, fmt.Errorf("no listener-operator Deployment in the input")
	}
	addDeployer(&p, operatorImage)
	csv, err := assemble(p, o, operatorImage)
	return csv, plain, err
}

// bindings maps "ClusterRole/<name>" and "Role/<name>" to the service
// accounts bound to it.
func bindings(objs []*unstructured.Unstructured) map[string][]string {
	out := map[string][]string{}
	for _, u := range objs {
		if u.GetKind() != "ClusterRoleBinding" && u.GetKind() != "RoleBinding" {
			continue
		}
		var b rbacv1.RoleBinding
		if fromUnstructured(u, &b) != nil {
			continue
		}
		for _, s := range b.Subjects {
			if s.Kind == "ServiceAccount" {
				k := b.RoleRef.Kind + "/" + b.RoleRef.Name
				out[k] = append(out[k], s.Name)
			}
		}
	}
	return out
}

func fromUnstructured(u *unstructured.Unstructured, into any) error {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into); err != nil {
		return fmt.Errorf("%s %s: %w", u.GetKind(), u.GetName(), err)
	}
	return nil
}

// addImages records every container image of a pod by container name.
func addImages(images map[string]string, spec corev1.PodSpec) {
	for _, c := range spec.Containers {
		name := c.Name
		if name == "csi" || name == "manager" {
			name = "listener-operator"
		}
		images[name] = c.Image
	}
}

// assemble writes the CSV itself.
func assemble(p csvParts, o options, operatorImage string) (*v1alpha1.ClusterServiceVersion, error) {
	v, err := semver.Parse(o.version)
	if err != nil {
		return nil, fmt.Errorf("-version: %w", err)
	}
	csv := &v1alpha1.ClusterServiceVersion{
		TypeMeta: metav1.TypeMeta{APIVersion: "operators.coreos.com/v1alpha1", Kind: "ClusterServiceVersion"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        "listener-operator.v" + o.version,
			Annotations: csvAnnotations(operatorImage),
		},
		Spec: v1alpha1.ClusterServiceVersionSpec{
			DisplayName:    "Listener Operator",
			Description:    description,
			Version:        version.OperatorVersion{Version: v},
			Replaces:       o.replaces,
			Maturity:       "alpha",
			MinKubeVersion: "1.33.0",
			Keywords:       []string{"listener", "network", "csi", "stackable", "nodeport", "loadbalancer"},
			Provider:       v1alpha1.AppLink{Name: "listener-operator"},
			Maintainers:    []v1alpha1.Maintainer{{Name: "listener-operator", Email: "listener-operator@users.noreply.github.com"}},
			Links:          []v1alpha1.AppLink{{Name: "Source", URL: "https://github.com/listener-operator/listener-operator"}},
			InstallModes: []v1alpha1.InstallMode{
				{Type: v1alpha1.InstallModeTypeOwnNamespace, Supported: false},
				{Type: v1alpha1.InstallModeTypeSingleNamespace, Supported: false},
				{Type: v1alpha1.InstallModeTypeMultiNamespace, Supported: false},
				{Type: v1alpha1.InstallModeTypeAllNamespaces, Supported: true},
			},
			CustomResourceDefinitions: v1alpha1.CustomResourceDefinitions{Owned: p.owned},
			InstallStrategy: v1alpha1.NamedInstallStrategy{
				StrategyName: v1alpha1.InstallStrategyNameDeployment,
				StrategySpec: v1alpha1.StrategyDetailsDeployment{
					DeploymentSpecs:    p.deployments,
					Permissions:        permissions(p.permissions),
					ClusterPermissions: permissions(p.clusterPermissions),
				},
			},
			RelatedImages: relatedImages(p.images),
		},
	}
	return csv, nil
}

const description = `Stable, discoverable network addresses for stateful workloads.

A ListenerClass is cluster policy (ClusterIP, NodePort or LoadBalancer); a
Listener is what one workload exposes, with every address it is reachable on
in its status; a listener volume (storage class listeners.stackable.tech)
mounts a pod's own addresses as files. Same API as the Stackable listener
operator (listeners.stackable.tech/v1alpha1).

The operator installs cluster-wide (AllNamespaces). Its admission webhook
configurations, admission policies, CSI node DaemonSet, CSIDriver and
StorageClass are applied by the listener-operator-olm-deployer Deployment,
because a CSV cannot carry them; the operator issues its own webhook
certificate (self-signed mode).`

func csvAnnotations(image string) map[string]string {
	return map[string]string{
		"capabilities":   "Basic Install",
		"categories":     "Networking,Storage",
		"containerImage": image,
		"repository":     "https://github.com/listener-operator/listener-operator",
		"support":        "listener-operator",
		"operators.operatorframework.io/suggested-namespace": "listener-operator",
		"operatorframework.io/suggested-namespace":           "listener-operator",
		"features.operators.openshift.io/disconnected":       "true",
		"alm-examples": almExamples,
	}
}

const almExamples = `[{"apiVersion":"listeners.stackable.tech/v1alpha1","kind":"ListenerClass","metadata":{"name":"external-stable"},"spec":{"serviceType":"NodePort","preferredAddressType":"HostnameConservative"}},{"apiVersion":"listeners.stackable.tech/v1alpha1","kind":"Listener","metadata":{"name":"kafka"},"spec":{"className":"external-stable","ports":[{"name":"kafka","port":9092}]}}]`

// permissions turns rules by service account into the CSV's list, sorted.
func permissions(m map[string][]rbacv1.PolicyRule) []v1alpha1.StrategyDeploymentPermissions {
	names := slices.Sorted(maps.Keys(m))
	out := make([]v1alpha1.StrategyDeploymentPermissions, 0, len(names))
	for _, n := range names {
		out = append(out, v1alpha1.StrategyDeploymentPermissions{ServiceAccountName: n, Rules: m[n]})
	}
	return out
}

func relatedImages(images map[string]string) []v1alpha1.RelatedImage {
	names := slices.Sorted(maps.Keys(images))
	out := make([]v1alpha1.RelatedImage, 0, len(names))
	for _, n := range names {
		out = append(out, v1alpha1.RelatedImage{Name: n, Image: images[n]})
	}
	return out
}
