package webhooks

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/listener-operator/listener-operator/api/addresses"
	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/api/validation"
)

// Two webhooks call the pod handler: one for pods with the opt-in label
// (an objectSelector, cheap for the API server), one for the others that
// have volumes that may be listener volumes (a CEL match condition, which
// costs the API server a conversion of the pod).
// +kubebuilder:webhook:path=/mutate-v1-pod,mutating=true,failurePolicy=ignore,sideEffects=None,groups="",resources=pods,verbs=create,versions=v1,name=pods.mutate.listeners.stackable.tech,admissionReviewVersions=v1,timeoutSeconds=2,reinvocationPolicy=IfNeeded,serviceName=listener-operator-webhook,serviceNamespace=listener-operator
// +kubebuilder:webhook:path=/mutate-v1-pod,mutating=true,failurePolicy=ignore,sideEffects=None,groups="",resources=pods,verbs=create,versions=v1,name=opted-in-pods.mutate.listeners.stackable.tech,admissionReviewVersions=v1,timeoutSeconds=2,reinvocationPolicy=IfNeeded,serviceName=listener-operator-webhook,serviceNamespace=listener-operator

// podMutator prepares pods that mount listener volumes: it adds the Service
// selector label of each Listener the pod belongs to (so that the CSI node
// never has to patch pods), requires the node a pinned volume lives on, and
// mounts the listener volume in containers that other webhooks added. Bare
// pods with the opt-in label get an ephemeral listener volume.
//
// It also refuses pods with listener volumes that cannot work (inline CSI
// volumes of the driver, ephemeral claims of unknown classes): a mutating
// webhook may deny, and one webhook call per pod instead of a mutating and a
// validating one halves what pods with listener volumes cost the API
// server.
//
// The webhook fails open (failurePolicy: Ignore, so that an unavailable
// operator does not stop every pod with a claim in the cluster), and so does
// the handler when a lookup fails: the reconciler labels pods it finds
// unlabelled, and the scheduler honours a pinned volume's node affinity on
// its own.
type podMutator struct {
	lookup    *lookup
	validator *workloadValidator
}

// podView is what the pod handler reads of a pod. It is decoded once: the
// validator's checks read the same view (workload).
type podView struct {
	Metadata objectMetaView `json:"metadata"`
	Spec     podSpecView    `json:"spec"`
}

// workload is the pod as the workload validator reads it.
func (pod *podView) workload() *workloadView {
	w := &workloadView{Metadata: pod.Metadata}
	w.Spec.podSpecView = pod.Spec
	return w
}

// podVolumes is what the walk over a pod's volumes found.
type podVolumes struct {
	validate  bool // volumes the validator checks: inline CSI volumes of the driver, ephemeral listener volumes
	mayMount  bool // a claim that may be a listener claim could not be looked up
	named     int  // the volume named like the listener volume, or -1
	hasNamed  bool // the volume named like the listener volume is taken for it
	listeners []claims.PodListener
	nodes     []string     // the nodes pinned listener volumes live on
	own       []ownClaim   // the standalone claims that get Listeners of their own
	uses      []claims.Use // which Listener (or class) each listener volume uses, for the readiness gate
}

// ownClaim is a standalone listener claim a pod mounts that gets a
// Listener of its own, of class.
type ownClaim struct{ claim, class string }

// listenerVolumes says which of a pod's volumes (by name) are listener
// volumes. It is kept apart from podVolumes so that it stays on the
// handler's stack.
type listenerVolumes map[string]bool

func (m *podMutator) Handle(ctx context.Context, req admission.Request) admission.Response {
	var pod podView
	if err := decodePod(req.Object.Raw, &pod); err != nil {
		return malformed(err)
	}
	name := pod.Metadata.Name
	if name == "" {
		name = req.Name
	}
	listenerOf := make(listenerVolumes, 2)
	vs := m.walk(ctx, req.Namespace, name, &pod.Spec, listenerOf)
	var warnings []string
	if vs.validate {
		resp := m.validator.check(ctx, req, pod.workload())
		if !resp.Allowed {
			return resp
		}
		warnings = append(warnings, resp.Warnings...)
	}
	if errs := m.validator.standaloneClaimPortErrors(ctx, vs.own, &pod.Spec); len(errs) > 0 {
		return invalid(req, errs) // gatewayports.go
	}
	var p patch
	optedIn := pod.Metadata.Labels[v1alpha1.LabelEnabled] == "true"
	if optedIn {
		if resp, denied := m.optIn(ctx, req, name, &pod, &vs, listenerOf, &p); denied {
			return resp
		}
	}
	if spread := vs.spread(optedIn, &pod.Spec, listenerOf); spread != "" {
		mountEverywhere(&p, "/spec", pod.Metadata.Annotations, &pod.Spec, spread)
	}
	if len(listenerOf) > 0 || vs.mayMount {
		label(&p, name, pod.Metadata.Labels, vs.listeners)
	}
	warnings = append(warnings, pin(&p, pod.Spec.Affinity, vs.nodes)...)
	if len(vs.uses) > 0 && m.lookup.gates(ctx, req.Namespace, vs.uses) {
		addGate(&p, &pod.Spec) // podgate.go
	}
	return respond(p, warnings)
}

// walk finds the pod's listener volumes (into listenerOf): the claims it
// mounts that are listener claims (looked up), with their Listeners and
// pinned nodes, and its ephemeral listener volumes.
func (m *podMutator) walk(ctx context.Context, namespace, podName string, spec *podSpecView, listenerOf listenerVolumes) podVolumes {
	vs := podVolumes{named: -1}
	for i := range spec.Volumes {
		v := &spec.Volumes[i]
		if v.Name == v1alpha1.VolumeName {
			vs.named = i
		}
		switch t := v.ephemeralClaim(); {
		case v.PersistentVolumeClaim != nil:
			m.addClaim(ctx, namespace, v, &vs, listenerOf)
		case v.CSI != nil && v.CSI.Driver == v1alpha1.DriverName:
			vs.validate = true
		case t != nil && claims.Requested(t.Annotations, t.Spec.StorageClassName):
			vs.validate = true
			listenerOf[v.Name] = true
			if l := claims.EphemeralListener(t.Annotations, podName, v.Name); l != "" {
				vs.listeners = append(vs.listeners, claims.PodListener{Listener: l})
			}
			vs.uses = append(vs.uses, claims.Of(names.EphemeralClaimName(podName, v.Name), t.Annotations))
		}
	}
	// A volume named like the listener volume is taken for it when it is
	// one, or a claim (whose class a failed or early lookup may not know).
	vs.hasNamed = vs.named >= 0 && (listenerOf[v1alpha1.VolumeName] || spec.Volumes[vs.named].PersistentVolumeClaim != nil)
	return vs
}

// addClaim adds the claim volume v to what the walk found.
func (m *podMutator) addClaim(ctx context.Context, namespace string, v *volumeView, vs *podVolumes, listenerOf listenerVolumes) {
	c, err := m.claim(ctx, namespace, v.PersistentVolumeClaim.ClaimName)
	switch {
	case errors.Is(err, errNoClaimYet):
		// A pod may be created before its claim: it may become a
		// listener claim, and the controller must see this pod to label
		// it then.
		vs.mayMount = true
	case err != nil:
		recordFailOpen(ctx, "pods.mutate", "pod", err)
		vs.mayMount = true
	}
	if !c.ok {
		return
	}
	listenerOf[v.Name] = true
	if c.listener != "" {
		vs.listeners = append(vs.listeners, claims.PodListener{Listener: c.listener, StatefulSetPod: c.statefulSetPod})
	}
	vs.uses = append(vs.uses, claims.Use{Listener: c.listener, Class: c.ownClass})
	if c.node != "" {
		vs.nodes = append(vs.nodes, c.node)
	}
	if c.ownClass != "" {
		vs.own = append(vs.own, ownClaim{claim: v.PersistentVolumeClaim.ClaimName, class: c.ownClass})
	}
}

// optIn gives an opted-in pod without a listener volume an ephemeral one
// (of the class or Listener its annotations name), or refuses it: a volume
// of its own named like the listener volume, no class to use, no ports for
// a Listener of its own. A failed lookup admits it without the volume.
func (m *podMutator) optIn(ctx context.Context, req admission.Request, name string, pod *podView, vs *podVolumes, listenerOf listenerVolumes, p *patch) (admission.Response, bool) {
	if vs.hasNamed {
		return admission.Response{}, false
	}
	if vs.named >= 0 {
		return invalid(req, field.ErrorList{validation.ForeignListenerVolume(field.NewPath("spec", "volumes").Index(vs.named))}), true
	}
	ann, errs, err := optInClaimAnnotations(ctx, m.lookup, req.Namespace, pod.Metadata.Annotations, field.NewPath("metadata", "annotations"))
	switch {
	case err != nil:
		recordFailOpen(ctx, "pods.mutate", "pod", err)
		return admission.Response{}, false
	case errs != nil:
		return invalid(req, errs), true
	}
	if claims.WillOwnListener(ann, "") {
		if errs := validation.PortsForOwnListener([]string{v1alpha1.VolumeName}, containerPorts(pod.Spec.Containers), field.NewPath("spec", "containers")); errs != nil {
			return invalid(req, errs), true
		}
	}
	n := length(pod.Spec.Volumes)
	p.appendTo("/spec/volumes", &n, ephemeralVolume(ann))
	vs.hasNamed = true
	listenerOf[v1alpha1.VolumeName] = true
	if l := claims.EphemeralListener(ann, name, v1alpha1.VolumeName); l != "" {
		vs.listeners = append(vs.listeners, claims.PodListener{Listener: l})
	}
	vs.uses = append(vs.uses, claims.Of(names.EphemeralClaimName(name, v1alpha1.VolumeName), ann))
	return admission.Response{}, false
}

// spread is the volume to mount in every container: the opt-in volume, or
// a listener volume that some container already mounts at the well-known
// path (a container injected later by another webhook lacks it); "" for
// none.
func (vs *podVolumes) spread(optedIn bool, spec *podSpecView, listenerOf listenerVolumes) string {
	if optedIn && vs.hasNamed {
		return v1alpha1.VolumeName
	}
	spread := ""
	for _, c := range spec.Containers {
		for _, vm := range c.VolumeMounts {
			if vm.MountPath == v1alpha1.MountPath && listenerOf[vm.Name] {
				spread = vm.Name
			}
		}
	}
	return spread
}

// label adds the labels a pod (named podName, with labels) that mounts
// volumes of listeners lacks (claims.PodLabels), in a stable order: the
// listener-volume label, then the volumes'.
func label(p *patch, podName string, labels map[string]string, listeners []claims.PodListener) {
	exists := labels != nil
	claims.EachPodLabel(podName, labels, listeners, func(k, v string) {
		if labels[k] != v {
			p.setMapEntry("/metadata/labels", &exists, k, v)
		}
	})
}

// pin requires the nodes that pinned listener volumes live on; a pod with
// volumes pinned to different nodes gets a warning.
func pin(p *patch, a *affinityView, nodes []string) (warnings []string) {
	nodes = dedupe(nodes)
	if len(nodes) > 1 {
		warnings = append(warnings, fmt.Sprintf("the pod mounts listener volumes pinned to different nodes (%s) and cannot be scheduled; mount volumes pinned to one node only", joinSorted(nodes)))
	}
	requireNodes(p, a, nodes)
	return warnings
}

// errNoClaimYet says that a pod's claim does not exist (yet).
var errNoClaimYet = errors.New("the claim does not exist yet")

// podClaim is what the pod handler needs of a claim it mounts: whether it
// is a listener claim, which Listener it belongs to, the StatefulSet pod
// that Listener selects by name (if it does), the node its volume is
// pinned to, if any, and the class of its Listener when the claim gets
// one of its own (its ports are the pods' container ports).
type podClaim struct {
	listener, node, statefulSetPod, ownClass string
	ok                                       bool
}

// claim looks up the claim name in namespace.
func (m *podMutator) claim(ctx context.Context, namespace, name string) (podClaim, error) {
	var c corev1.PersistentVolumeClaim
	ordinary, err := m.lookup.claim(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &c)
	switch {
	case err != nil && apierrors.IsNotFound(err): // err != nil first: IsNotFound(nil) allocates
		return podClaim{}, errNoClaimYet
	case err != nil:
		return podClaim{}, fmt.Errorf("get PersistentVolumeClaim %s/%s: %w", namespace, name, err)
	case ordinary:
		return podClaim{}, nil
	}
	use, ok := claims.OfClaim(&c)
	if !ok {
		return podClaim{}, nil
	}
	pv, err := m.volume(ctx, c.Spec.VolumeName)
	// A bound volume keeps the Listener it was provisioned for.
	out := podClaim{listener: claims.Bound(&c, use, pv).Listener, ok: true}
	if use.Own && out.listener == use.Listener {
		out.ownClass = use.Class
	}
	if out.listener != "" {
		// The Listener, once it exists, decides how its Service selects
		// (the reconciler makes it from the claim). Read from the cache
		// only: a Listener made a moment ago was made from this claim.
		out.statefulSetPod = claims.SelectedPod(name, c.Annotations, func() (map[string]string, bool) {
			var l v1alpha1.Listener
			err := m.lookup.cache.Get(ctx, types.NamespacedName{Namespace: namespace, Name: out.listener}, &l)
			return l.Annotations, err == nil
		})
	}
	if pv != nil {
		out.node = addresses.PinnedNode(pv)
	}
	return out, err
}

// volume is the PersistentVolume a claim is bound to, nil when it is not
// bound or the volume does not exist (or cannot be read: err says why).
func (m *podMutator) volume(ctx context.Context, name string) (*corev1.PersistentVolume, error) {
	if name == "" {
		return nil, nil
	}
	pv := &corev1.PersistentVolume{}
	if err := m.lookup.get(ctx, types.NamespacedName{Name: name}, pv); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("get PersistentVolume %s: %w", name, err)
	}
	return pv, nil
}

// ephemeralVolume is the listener volume added to opted-in bare pods.
func ephemeralVolume(annotations map[string]string) corev1.Volume {
	return corev1.Volume{Name: v1alpha1.VolumeName, VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
		VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
			ObjectMeta: metav1.ObjectMeta{Annotations: annotations},
			Spec:       claims.TemplateSpec(),
		},
	}}}
}

// requireNodes adds required node affinity to each node in nodes, ANDed
// into every existing node selector term (terms are ORed, so each must
// carry it). Terms that already require a node are left alone.
func requireNodes(p *patch, a *affinityView, nodes []string) {
	if len(nodes) == 0 {
		return
	}
	exprs := make([]corev1.NodeSelectorRequirement, len(nodes))
	for i, n := range nodes {
		exprs[i] = claims.NodeRequirement(n)
	}
	required := map[string]any{"nodeSelectorTerms": []corev1.NodeSelectorTerm{{MatchExpressions: exprs}}}
	const base = "/spec/affinity"
	switch {
	case a == nil:
		p.add(base, map[string]any{"nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": required}})
	case a.NodeAffinity == nil:
		p.add(base+"/nodeAffinity", map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": required})
	case a.NodeAffinity.Required == nil || len(a.NodeAffinity.Required.NodeSelectorTerms) == 0:
		p.add(base+"/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution", required)
	default:
		for j, t := range a.NodeAffinity.Required.NodeSelectorTerms {
			path := index(base+"/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms", j, "/matchExpressions")
			n := length(t.MatchExpressions)
			for i, e := range exprs {
				if !hasRequirement(t.MatchExpressions, nodes[i]) {
					p.appendTo(path, &n, e)
				}
			}
		}
	}
}

// hasRequirement reports whether one of the expressions pins the pod to
// node (claims.PinnedBy).
func hasRequirement(have []corev1.NodeSelectorRequirement, node string) bool {
	for _, h := range have {
		if n, ok := claims.PinnedBy(h); ok && n == node {
			return true
		}
	}
	return false
}

// dedupe removes repeated names, keeping the first occurrence.
func dedupe(s []string) []string {
	if len(s) < 2 {
		return s
	}
	out := s[:0]
	seen := make(map[string]bool, len(s))
	for _, v := range s {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}
