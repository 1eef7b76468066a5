package webhooks

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/api/validation"
)

// The views of a pod spec, shared by the kinds that carry one: a pod (the
// pod mutator), a StatefulSet's pod template (the StatefulSet mutator) and
// the pod templates of workloads (the workload validator). A view decodes
// only what the handlers read, so fields this build does not know survive
// untouched and a pod is decoded once, however many handlers' checks it
// goes through.

// objectMetaView is the part of an object's metadata the handlers read.
type objectMetaView struct {
	Name        string            `json:"name"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

// podSpecView is the part of a pod spec that decides which listener
// volumes a pod has, where they are mounted and where the pod may run.
type podSpecView struct {
	Volumes        []volumeView    `json:"volumes"`
	Containers     []containerView `json:"containers"`
	InitContainers []containerView `json:"initContainers"`
	Affinity       *affinityView   `json:"affinity"`
	// ReadinessGates are read so that the gate of ListenerClass
	// spec.podReadiness is added once (podgate.go).
	ReadinessGates []readinessGateView `json:"readinessGates"`
}

// readinessGateView is a pod's readiness gate.
type readinessGateView struct {
	ConditionType string `json:"conditionType"`
}

// volumeView is a volume of the kinds a listener volume can be (others
// keep only their name).
type volumeView struct {
	Name                  string                                    `json:"name"`
	PersistentVolumeClaim *corev1.PersistentVolumeClaimVolumeSource `json:"persistentVolumeClaim"`
	Ephemeral             *corev1.EphemeralVolumeSource             `json:"ephemeral"`
	CSI                   *corev1.CSIVolumeSource                   `json:"csi"`
}

// containerView is the part of a container the handlers read.
type containerView struct {
	Name         string      `json:"name"`
	Ports        []portView  `json:"ports"`
	VolumeMounts []mountView `json:"volumeMounts"`
}

type portView struct {
	Name          string          `json:"name"`
	ContainerPort int32           `json:"containerPort"`
	Protocol      corev1.Protocol `json:"protocol"`
}

type mountView struct {
	Name      string `json:"name"`
	MountPath string `json:"mountPath"`
}

type affinityView struct {
	NodeAffinity *struct {
		Required *struct {
			NodeSelectorTerms []corev1.NodeSelectorTerm `json:"nodeSelectorTerms"`
		} `json:"requiredDuringSchedulingIgnoredDuringExecution"`
	} `json:"nodeAffinity"`
}

// volumes are the volumes as validation reads them: of the kinds a
// listener volume can be.
func (s *podSpecView) volumes() []corev1.Volume {
	out := make([]corev1.Volume, len(s.Volumes))
	for i, v := range s.Volumes {
		out[i] = corev1.Volume{Name: v.Name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: v.PersistentVolumeClaim, Ephemeral: v.Ephemeral, CSI: v.CSI,
		}}
	}
	return out
}

// ephemeralClaim is the claim template of v when it is a generic ephemeral
// volume, or nil.
func (v *volumeView) ephemeralClaim() *corev1.PersistentVolumeClaimTemplate {
	if v.Ephemeral == nil {
		return nil
	}
	return v.Ephemeral.VolumeClaimTemplate
}

// mountEverywhere mounts volume read-only at /stackable/listener in every
// container of the pod (template) spec at path, and in the init containers
// that the pod's v1alpha1.AnnotationMountInitContainers (among annotations)
// names. Containers that already mount something at that path, or mount the
// volume elsewhere, are left alone.
func mountEverywhere(p *patch, path string, annotations map[string]string, spec *podSpecView, volume string) {
	mount := corev1.VolumeMount{Name: volume, MountPath: v1alpha1.MountPath, ReadOnly: true}
	for i := range spec.Containers {
		mountIn(p, path+"/containers", i, &spec.Containers[i], mount)
	}
	want := annotations[v1alpha1.AnnotationMountInitContainers]
	if want == "" {
		return
	}
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		if want == "*" || containsName(want, c.Name) {
			mountIn(p, path+"/initContainers", i, c, mount)
		}
	}
}

func mountIn(p *patch, path string, i int, c *containerView, mount corev1.VolumeMount) {
	for _, m := range c.VolumeMounts {
		if m.MountPath == mount.MountPath || m.Name == mount.Name {
			return
		}
	}
	n := length(c.VolumeMounts)
	p.appendTo(index(path, i, "/volumeMounts"), &n, mount)
}

// containsName reports whether the comma-separated list has name.
func containsName(list, name string) bool {
	for item := range strings.SplitSeq(list, ",") {
		if strings.TrimSpace(item) == name {
			return true
		}
	}
	return false
}

// containerPorts are the containers' names and how many ports each
// declares, as validation.PortsForOwnListener reads them.
func containerPorts(cs []containerView) []validation.ContainerPorts {
	var out []validation.ContainerPorts
	for _, c := range cs {
		out = append(out, validation.ContainerPorts{Name: c.Name, Ports: len(c.Ports)})
	}
	return out
}
