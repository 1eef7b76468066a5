package main

import (
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// deployerName is the olm-deployer's Deployment and service account.
const deployerName = "listener-operator-olm-deployer"

// addDeployer adds the olm-deployer: a Deployment of the operator's image
// running `listener-operator olm-deploy`, which applies the objects of the
// ConfigMap deployerManifests into the install namespace, and the rights it
// needs for exactly those kinds. On OpenShift the CSI node plugin's account
// also needs the privileged SCC (docs/install.md, "OpenShift").
func addDeployer(p *csvParts, image string) {
	labels := map[string]string{"app.kubernetes.io/name": "listener-operator", "app.kubernetes.io/component": "olm-deployer"}
	apply := []string{"get", "create", "patch"}
	p.clusterPermissions[deployerName] = []rbacv1.PolicyRule{
		{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"mutatingwebhookconfigurations", "validatingwebhookconfigurations", "validatingadmissionpolicies", "validatingadmissionpolicybindings"}, Verbs: apply},
		{APIGroups: []string{"flowcontrol.apiserver.k8s.io"}, Resources: []string{"flowschemas"}, Verbs: apply},
		{APIGroups: []string{"storage.k8s.io"}, Resources: []string{"csidrivers", "storageclasses"}, Verbs: apply},
		// To own the cluster-scoped objects by the ClusterRole OLM made for
		// it, so that they go when the CSV goes.
		{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"clusterrolebindings", "clusterroles"}, Verbs: []string{"get", "list"}},
	}
	p.permissions[deployerName] = []rbacv1.PolicyRule{
		{APIGroups: []string{"apps"}, Resources: []string{"daemonsets"}, Verbs: apply},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: apply},
	}
	p.clusterPermissions["listener-operator-csi-node"] = append(p.clusterPermissions["listener-operator-csi-node"],
		rbacv1.PolicyRule{APIGroups: []string{"security.openshift.io"}, Resources: []string{"securitycontextconstraints"}, ResourceNames: []string{"privileged"}, Verbs: []string{"use"}})
	spec := appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](1),
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{
				ServiceAccountName: deployerName,
				NodeSelector:       map[string]string{"kubernetes.io/os": "linux"},
				SecurityContext:    &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
				Containers: []corev1.Container{{
					Name:  "olm-deployer",
					Image: image,
					Args:  []string{"olm-deploy", "--manifests=/manifests", "--deployment=" + deployerName},
					Env:   []corev1.EnvVar{{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}},
					Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
						Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
					},
					SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
					VolumeMounts:    []corev1.VolumeMount{{Name: "manifests", MountPath: "/manifests", ReadOnly: true}},
				}},
				Volumes: []corev1.Volume{{Name: "manifests", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: deployerManifests}}}}},
			},
		},
	}
	p.deployments = append(p.deployments, v1alpha1.StrategyDeploymentSpec{Name: deployerName, Label: labels, Spec: spec})
}
