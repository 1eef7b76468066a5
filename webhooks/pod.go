package webhooks

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
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

func (m *podMutator) Handle(ctx context.Context, req admission.Request) admission.Response {
	var pod podTemplateView
	if err := decode(req.Object.Raw, "Pod", &pod); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	podName := pod.Metadata.Name
	if podName == "" {
		podName = req.Name
	}
	var (
		p          patch
		warnings   []string
		validate   bool // the pod has volumes the validator checks
		listeners  []claims.PodListener
		nodes      []string
		mayMount   bool                       // a claim that may be a listener claim could not be looked up
		listenerOf = make(map[string]bool, 2) // volume name → is a listener volume
		named      = -1                       // the volume named like the listener volume
	)
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if v.Name == v1alpha1.VolumeName {
			named = i
		}
		switch {
		case v.PersistentVolumeClaim != nil:
			listener, node, statefulSetPod, ok, err := m.claim(ctx, req.Namespace, v.PersistentVolumeClaim.ClaimName)
			switch {
			case errors.Is(err, errNoClaimYet):
				// A pod may be created before its claim: it may become a
				// listener claim, and the controller must see this pod
				// to label it then.
				mayMount = true
			case err != nil:
				m.failOpen(ctx, err)
				mayMount = true
			}
			if ok {
				listenerOf[v.Name] = true
				if listener != "" {
					listeners = append(listeners, claims.PodListener{Listener: listener, StatefulSetPod: statefulSetPod})
				}
				if node != "" {
					nodes = append(nodes, node)
				}
			}
		case v.CSI != nil && v.CSI.Driver == v1alpha1.DriverName:
			validate = true
		case v.Ephemeral != nil && v.Ephemeral.VolumeClaimTemplate != nil:
			t := v.Ephemeral.VolumeClaimTemplate
			if !claims.Requested(t.Metadata.Annotations, t.Spec.StorageClassName) {
				continue
			}
			validate = true
			listenerOf[v.Name] = true
			if l := claims.EphemeralListener(t.Metadata.Annotations, podName, v.Name); l != "" {
				listeners = append(listeners, claims.PodListener{Listener: l})
			}
		}
	}

	if validate {
		var w workloadView
		if err := decode(req.Object.Raw, "Pod", &w); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		resp := m.validator.check(ctx, req, &w)
		if !resp.Allowed {
			return resp
		}
		warnings = append(warnings, resp.Warnings...)
	}

	optedIn := pod.Metadata.Labels[v1alpha1.LabelEnabled] == "true"
	// A volume named like the listener volume is taken for it when it is
	// one, or a claim (whose class a failed or early lookup may not know).
	hasNamed := named >= 0 && (listenerOf[v1alpha1.VolumeName] || pod.Spec.Volumes[named].PersistentVolumeClaim != nil)
	if optedIn && named >= 0 && !hasNamed {
		return invalid(req, field.ErrorList{validation.ForeignListenerVolume(field.NewPath("spec", "volumes").Index(named))})
	}
	if optedIn && !hasNamed {
		ann, errs, err := claimAnnotations(ctx, m.lookup, req.Namespace, pod.Metadata.Annotations, field.NewPath("metadata", "annotations"))
		switch {
		case err != nil:
			m.failOpen(ctx, err)
		case errs != nil:
			return invalid(req, errs)
		case claims.WillOwnListener(ann, ""):
			var containers []validation.ContainerPorts
			for _, c := range pod.Spec.Containers {
				containers = append(containers, validation.ContainerPorts{Name: c.Name, Ports: len(c.Ports)})
			}
			if errs := validation.PortsForOwnListener([]string{v1alpha1.VolumeName}, containers, field.NewPath("spec", "containers")); errs != nil {
				return invalid(req, errs)
			}
			fallthrough
		default:
			n := len(pod.Spec.Volumes)
			if pod.Spec.Volumes == nil {
				n = -1
			}
			p.appendTo("/spec/volumes", &n, ephemeralVolume(ann))
			hasNamed = true
			listenerOf[v1alpha1.VolumeName] = true
			if l := claims.EphemeralListener(ann, podName, v1alpha1.VolumeName); l != "" {
				listeners = append(listeners, claims.PodListener{Listener: l})
			}
		}
	}

	// The volume to mount in every container: the opt-in volume, or a
	// listener volume that some container already mounts at the well-known
	// path (a container injected later by another webhook lacks it).
	spread := ""
	if optedIn && hasNamed {
		spread = v1alpha1.VolumeName
	} else {
		for _, c := range pod.Spec.Containers {
			for _, vm := range c.VolumeMounts {
				if vm.MountPath == v1alpha1.MountPath && listenerOf[vm.Name] {
					spread = vm.Name
				}
			}
		}
	}
	if spread != "" {
		mountEverywhere(&p, "/spec", &pod, spread)
	}

	if len(listenerOf) > 0 || mayMount {
		exists := pod.Metadata.Labels != nil
		missing := claims.Missing(claims.PodLabels(podName, pod.Metadata.Labels, listeners), pod.Metadata.Labels)
		// In a stable order: the listener-volume label, then the volumes'.
		order := []string{v1alpha1.LabelListenerVolume}
		for _, l := range listeners {
			order = append(order, names.PodSelectorLabel(l.Listener))
		}
		for _, k := range order {
			if v, ok := missing[k]; ok {
				p.setMapEntry("/metadata/labels", &exists, k, v)
				delete(missing, k)
			}
		}
	}

	nodes = dedupe(nodes)
	if len(nodes) > 1 {
		warnings = append(warnings, fmt.Sprintf("the pod mounts listener volumes pinned to different nodes (%s) and cannot be scheduled; mount volumes pinned to one node only", joinSorted(nodes)))
	}
	requireNodes(&p, pod.Spec.Affinity, nodes)

	if len(p) == 0 {
		return admission.Allowed("").WithWarnings(warnings...)
	}
	return admission.Patched("", p...).WithWarnings(warnings...)
}

// failOpen records a lookup that failed: the pod is admitted without what
// the lookup would have added.
func (m *podMutator) failOpen(ctx context.Context, err error) {
	failOpen.WithLabelValues("pods.mutate").Inc()
	logf.FromContext(ctx).Error(err, "admitting the pod without the mutation that needed this lookup")
}

// errNoClaimYet says that a pod's claim does not exist (yet).
var errNoClaimYet = errors.New("the claim does not exist yet")

// claim looks up the claim name in namespace and says whether it is a
// listener claim, which Listener it belongs to, the StatefulSet pod that
// Listener selects by name (if it does) and the node its volume is pinned
// to, if any.
func (m *podMutator) claim(ctx context.Context, namespace, name string) (listener, node, statefulSetPod string, ok bool, err error) {
	var c corev1.PersistentVolumeClaim
	if err := m.lookup.get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &c); err != nil {
		if apierrors.IsNotFound(err) {
			return "", "", "", false, errNoClaimYet
		}
		return "", "", "", false, fmt.Errorf("get PersistentVolumeClaim %s/%s: %w", namespace, name, err)
	}
	use, ok := claims.OfClaim(&c)
	if !ok {
		return "", "", "", false, nil
	}
	var pv *corev1.PersistentVolume
	if c.Spec.VolumeName != "" {
		pv = &corev1.PersistentVolume{}
		if err = m.lookup.get(ctx, types.NamespacedName{Name: c.Spec.VolumeName}, pv); err != nil {
			if apierrors.IsNotFound(err) {
				err = nil
			} else {
				err = fmt.Errorf("get PersistentVolume %s: %w", c.Spec.VolumeName, err)
			}
			pv = nil
		}
	}
	// A bound volume keeps the Listener it was provisioned for.
	listener = claims.Bound(&c, use, pv).Listener
	if listener != "" {
		// The Listener, once it exists, decides how its Service selects
		// (the reconciler makes it from the claim). Read from the cache
		// only: a Listener made a moment ago was made from this claim.
		statefulSetPod = claims.SelectedPod(name, c.Annotations, func() (map[string]string, bool) {
			var l v1alpha1.Listener
			err := m.lookup.cache.Get(ctx, types.NamespacedName{Namespace: namespace, Name: listener}, &l, client.UnsafeDisableDeepCopy)
			return l.Annotations, err == nil
		})
	}
	if pv != nil {
		node = addresses.PinnedNode(pv)
	}
	return listener, node, statefulSetPod, true, err
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
			n := len(t.MatchExpressions)
			if t.MatchExpressions == nil {
				n = -1
			}
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
