package agreement

import (
	"fmt"
	"maps"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// The names every shape uses.
const (
	Namespace    = "agree"
	PodName      = "web-0"
	Shared       = "shared"           // a shared Listener that exists
	Class        = "external"         // a ListenerClass that exists
	DefaultClass = "cluster-internal" // the cluster's default ListenerClass
	Node         = "node-1"           // the node a pinned volume lives on
	OtherClass   = "standard"         // another driver's storage class
)

// Shape is a pod with one volume of a claim (or claim template), and what
// every consumer must answer about it.
type Shape struct {
	Name string
	// Claim is the stored claim the pod's volume names; nil for an
	// ephemeral volume.
	Claim *corev1.PersistentVolumeClaim
	// Template is the claim template of the pod's ephemeral volume; nil
	// for a named claim.
	Template *corev1.PersistentVolumeClaimTemplate
	// Volume is the PersistentVolume the claim is bound to (nil: unbound).
	Volume *corev1.PersistentVolume
	// StatefulSet is the StatefulSet of the claim's namespace that the
	// claim's statefulset-claim-template annotation points at (nil: none).
	StatefulSet *appsv1.StatefulSet
	// Pod mounts the volume.
	Pod *corev1.Pod
	// Want is the one answer.
	Want Answer
	// Rebound: the claim is bound and its listener annotations name
	// another Listener than the one recorded on its volume. Which Listener
	// the volume publishes is Want.Listener; the claim reconciler's index
	// and watches (which the Listener controller lists a Listener's claims
	// by) still go by the annotations, which the volume no longer follows:
	// it is not asked about such a shape (a known difference, left open:
	// an index of claims cannot read their volumes).
	Rebound bool
}

// Answer is what a consumer says about a shape. Each consumer answers the
// fields it decides (Check is told which).
type Answer struct {
	// IsListener: the volume is a listener volume (the storage class is
	// the driver's). A consumer that is not asked about other claims
	// (CSI) does not answer it.
	IsListener bool
	// Listener is the Listener the volume uses ("" none).
	Listener string
	// Own: the Listener is the claim's own (made by the reconciler,
	// controlled by the claim, published as per-claim).
	Own bool
	// Class is the class of the claim's own Listener ("" for a shared one).
	Class string
	// Labels are the labels the operator gives the pod.
	Labels map[string]string
	// Pinned is the node the pod is pinned to ("" none).
	Pinned string
	// SelectsPod is the StatefulSet pod the claim's own Listener selects
	// by name ("" by label: the pods that mount the claim).
	SelectsPod string
}

// Field names a field of Answer.
type Field int

// The fields of Answer.
const (
	AskIsListener Field = 1 << iota
	AskListener
	AskOwn
	AskClass
	AskLabels
	AskPinned
	AskSelectsPod
)

// ClaimName is the name of the claim the shape's pod uses (that of the
// ephemeral volume's claim for a template).
func (s Shape) ClaimName() string {
	if s.Claim != nil {
		return s.Claim.Name
	}
	return names.EphemeralClaimName(PodName, s.Pod.Spec.Volumes[0].Name)
}

// StoredClaim is the claim as the API server holds it: Claim, or the claim
// Kubernetes makes of Template, as the claim webhook completes it (the
// listener storage class, and the default class when it names neither a
// class nor a Listener).
func (s Shape) StoredClaim() *corev1.PersistentVolumeClaim {
	if s.Claim != nil {
		return s.Claim.DeepCopy()
	}
	ann := maps.Clone(s.Template.Annotations)
	if claims.NeedsDefaultClass(ann) { // as the claim webhook asks
		if ann == nil {
			ann = map[string]string{}
		}
		ann[v1alpha1.AnnotationListenerClass] = DefaultClass
	}
	spec := *s.Template.Spec.DeepCopy()
	if spec.StorageClassName == nil { // the claim webhook completes it
		spec.StorageClassName = ptr(v1alpha1.StorageClassName)
	}
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: s.ClaimName(), UID: "claim-uid", Annotations: ann}, Spec: spec}
}

// Objects are the objects a consumer reads about the shape: the stored
// claim, its volume, the ListenerClasses and the shared Listener (and,
// with the pod, the pod).
func (s Shape) Objects(withPod bool) []client.Object {
	objs := []client.Object{s.StoredClaim(),
		&v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{Name: Class}, Spec: v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeNodePort, PinnedNodePorts: ptr(true)}},
		&v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{Name: DefaultClass, Annotations: map[string]string{v1alpha1.AnnotationDefaultClass: "true"}}, Spec: v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeClusterIP}},
		&v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: Shared}, Spec: v1alpha1.ListenerSpec{ClassName: ptr(Class), Ports: []v1alpha1.ListenerPort{{Name: "http", Port: 80}}}},
	}
	if s.Volume != nil {
		objs = append(objs, s.Volume.DeepCopy())
	}
	if s.StatefulSet != nil {
		objs = append(objs, s.StatefulSet.DeepCopy())
	}
	if withPod {
		objs = append(objs, s.Pod.DeepCopy())
	}
	return objs
}

// Check asks ask about every shape and fails the test where the consumer's
// answer differs from the table in the fields it answers. ask returns
// false for a shape the consumer is never asked about.
func Check(t *testing.T, consumer string, fields Field, ask func(t *testing.T, s Shape) (Answer, bool)) {
	t.Helper()
	for _, s := range Shapes() {
		t.Run(s.Name, func(t *testing.T) {
			got, asked := ask(t, s)
			if !asked {
				return
			}
			for _, d := range Diff(s.Want, got, fields) {
				t.Errorf("%s answers %s", consumer, d)
			}
		})
	}
}

// Diff lists the fields in which got differs from want.
func Diff(want, got Answer, fields Field) []string {
	var out []string
	if fields&AskIsListener != 0 && got.IsListener != want.IsListener {
		out = append(out, fmt.Sprintf("is a listener volume: %v, the table %v", got.IsListener, want.IsListener))
	}
	if fields&AskListener != 0 && got.Listener != want.Listener {
		out = append(out, fmt.Sprintf("Listener %q, the table %q", got.Listener, want.Listener))
	}
	if fields&AskOwn != 0 && got.Own != want.Own {
		out = append(out, fmt.Sprintf("own Listener: %v, the table %v", got.Own, want.Own))
	}
	if fields&AskClass != 0 && got.Class != want.Class {
		out = append(out, fmt.Sprintf("class %q, the table %q", got.Class, want.Class))
	}
	if fields&AskLabels != 0 && !maps.Equal(got.Labels, want.Labels) && (len(got.Labels) > 0 || len(want.Labels) > 0) {
		out = append(out, fmt.Sprintf("pod labels %v, the table %v", got.Labels, want.Labels))
	}
	if fields&AskPinned != 0 && got.Pinned != want.Pinned {
		out = append(out, fmt.Sprintf("pinned to %q, the table %q", got.Pinned, want.Pinned))
	}
	if fields&AskSelectsPod != 0 && got.SelectsPod != want.SelectsPod {
		out = append(out, fmt.Sprintf("selects pod %q by name, the table %q", got.SelectsPod, want.SelectsPod))
	}
	return out
}

func ptr[T any](v T) *T { return &v }

// claim is a stored claim of storage class sc (nil: none) named name.
func claim(name string, sc *string, ann map[string]string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: name, UID: "claim-uid", Annotations: ann},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: sc, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1")}}},
	}
}

// pod is the pod web-0 with one volume (named "listener") of source src,
// mounted in its container, which declares a port.
func pod(labels map[string]string, src corev1.VolumeSource) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: PodName, UID: "pod-uid", Labels: labels},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "web", Image: "web", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
				VolumeMounts: []corev1.VolumeMount{{Name: v1alpha1.VolumeName, MountPath: v1alpha1.MountPath}}}},
			Volumes: []corev1.Volume{{Name: v1alpha1.VolumeName, VolumeSource: src}},
		},
	}
}

func named(claimName string) corev1.VolumeSource {
	return corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claimName}}
}

func ephemeral(sc *string, ann map[string]string) corev1.VolumeSource {
	return corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Annotations: ann},
		Spec:       claim("", sc, nil).Spec,
	}}}
}

// volume is the PersistentVolume of claim c, pinned to node when node is
// set, with the listener the volume was provisioned for when listener is
// set (the label the claim reconciler records).
func volume(c *corev1.PersistentVolumeClaim, node, listener string) *corev1.PersistentVolume {
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv-" + c.Name},
		Spec: corev1.PersistentVolumeSpec{
			ClaimRef:                      &corev1.ObjectReference{Namespace: c.Namespace, Name: c.Name, UID: c.UID},
			StorageClassName:              v1alpha1.StorageClassName,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: v1alpha1.DriverName, VolumeHandle: "pv-" + c.Name}},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1")},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
		},
	}
	if listener != "" {
		pv.Labels = map[string]string{v1alpha1.LabelVolumeListener: listener}
	}
	if node != "" {
		pv.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: v1alpha1.TopologyKeyHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
		}}}}
	}
	c.Spec.VolumeName = pv.Name
	return pv
}

// statefulSet is the StatefulSet name with one listener claim template,
// tmpl, annotated as the StatefulSet webhook injects it.
func statefulSet(name, tmpl string) *appsv1.StatefulSet {
	c := claim(tmpl, ptr(v1alpha1.StorageClassName), map[string]string{v1alpha1.AnnotationListenerClass: Class, v1alpha1.AnnotationStatefulSetClaimTemplate: tmpl})
	c.Namespace, c.UID = "", ""
	return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: name},
		Spec: appsv1.StatefulSetSpec{VolumeClaimTemplates: []corev1.PersistentVolumeClaim{*c}}}
}

// labelled are the labels a pod of these Listeners gets.
func labelled(listeners ...string) map[string]string {
	out := map[string]string{v1alpha1.LabelListenerVolume: "true"}
	for _, l := range listeners {
		out[names.PodSelectorLabel(l)] = v1alpha1.PodSelectorLabelValue
	}
	return out
}
