package webhooks

import (
	"context"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/api/validation"
	"github.com/listener-operator/listener-operator/caches"
)

// lookup reads through the manager's cache and falls back to a live read
// when the cache does not have an object yet (created a moment ago).
//
// What it reads is a copy of its own (the cache reader's deep copy): the
// cache holds maps that many objects share (caches/intern.go), which a
// write through a read must never reach. The copies cost a pod admission
// about 10 allocations and 2 KB of garbage, no memory that stays
// (BenchmarkPodAdmission, "reads copied" until they became the only way).
type lookup struct {
	cache client.Reader
	live  client.Reader
	// reads bounds the live reads of names the cache lacks (livereads.go);
	// nil: unbounded.
	reads *liveBounds
	// ordinary remembers claims that exist and are not listener claims,
	// which the cache does not hold (ordinaryclaims.go); nil: none.
	ordinary *ordinaryClaims
	// namespaces tells the default class of a namespace; nil: every
	// namespace is read live.
	namespaces NamespaceDefaults
	// plainClasses files the cached ListenerClasses without a gateway by
	// name (indexPlainClasses); nil: every class is read.
	plainClasses *caches.KeyIndex
	// gatingClasses files the cached ListenerClasses whose pods get the
	// readiness gate by name (podgate.go); nil: no pod gets it.
	gatingClasses *caches.KeyIndex
	// heldClaims tells which claims the cache holds, so that a claim
	// remembered as ordinary costs no failed read (ordinaryclaims.go);
	// nil: the cache is read first.
	heldClaims *caches.KeyIndex
}

// indexClassWithoutGateway is the index of plainClasses.
const indexClassWithoutGateway = "listeners.stackable.tech/class-without-gateway"

// indexPlainClasses files the ListenerClasses c holds that have no gateway
// by name: the pod webhook asks it of the class of every standalone claim
// a pod mounts (gatewayports.go), and reading the class (a copy) for that
// cost each pod admission 8 allocations (docs/benchmarks.md,
// "Admission floor").
func indexPlainClasses(ctx context.Context, c cache.Informers) (*caches.KeyIndex, error) {
	return caches.NewKeyIndex(ctx, c, &v1alpha1.ListenerClass{}, indexClassWithoutGateway, func(o client.Object) []string {
		if lc, ok := o.(*v1alpha1.ListenerClass); ok && lc.Spec.Gateway == nil {
			return []string{lc.Name}
		}
		return nil
	})
}

// withoutGateway reports whether class is held by the cache and has no
// gateway; false when it may have one or is not held yet.
func (l *lookup) withoutGateway(class string) bool {
	return l.plainClasses != nil && l.plainClasses.Has(class)
}

// newLookup is the lookup the webhooks run with: cache and live readers,
// live reads bounded, ordinary claims remembered, namespaces' defaults
// from namespaces.
func newLookup(cache, live client.Reader, namespaces NamespaceDefaults) *lookup {
	return &lookup{cache: cache, live: live, reads: newLiveBounds(), ordinary: newOrdinaryClaims(), namespaces: namespaces}
}

func (l *lookup) get(ctx context.Context, key types.NamespacedName, obj client.Object) error {
	err := l.cache.Get(ctx, key, obj)
	if err != nil && apierrors.IsNotFound(err) {
		err = l.getLive(ctx, key, obj, err)
	}
	return err
}

// getLive reads obj live when reads allow it, and otherwise returns
// notFound, the cache's answer.
func (l *lookup) getLive(ctx context.Context, key types.NamespacedName, obj client.Object, notFound error) error {
	k := liveKey{kind: fmt.Sprintf("%T", obj), key: key}
	if !l.reads.allow(k) {
		return notFound
	}
	err := l.live.Get(ctx, key, obj)
	if apierrors.IsNotFound(err) {
		l.reads.notFound(k)
	}
	return err
}

// classes lists the ListenerClasses.
func (l *lookup) classes(ctx context.Context) ([]v1alpha1.ListenerClass, error) {
	var list v1alpha1.ListenerClassList
	if err := l.cache.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("list ListenerClasses: %w", err)
	}
	return list.Items, nil
}

// classNames lists the names of the ListenerClasses. Each name in want
// that the cache does not have yet is read live, so that a class created a
// moment ago counts.
func (l *lookup) classNames(ctx context.Context, want ...string) (validation.ClassNames, error) {
	items, err := l.classes(ctx)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(items), len(items)+len(want))
	for i := range items {
		names[i] = items[i].Name
	}
	for _, w := range want {
		if w == "" || slices.Contains(names, w) {
			continue
		}
		var lc v1alpha1.ListenerClass
		err := l.getLive(ctx, types.NamespacedName{Name: w}, &lc, apierrors.NewNotFound(v1alpha1.GroupVersion.WithResource("listenerclasses").GroupResource(), w))
		switch {
		case err == nil:
			names = append(names, w)
		case !apierrors.IsNotFound(err):
			return nil, fmt.Errorf("get ListenerClass %s: %w", w, err)
		}
	}
	return validation.NewClassNames(names...), nil
}

// defaultClass is the ListenerClass a claim in namespace gets when it names
// none: the namespace's listeners.stackable.tech/is-default-class annotation,
// else the class annotated listeners.stackable.tech/is-default-class: "true"
// (the newest, if several are, as Kubernetes does for StorageClasses). ""
// means there is none.
func (l *lookup) defaultClass(ctx context.Context, namespace string) (string, error) {
	c, err := l.namespaceDefault(ctx, namespace)
	if err != nil {
		return "", err
	}
	if c != "" {
		return c, nil
	}
	classes, err := l.classes(ctx)
	if err != nil {
		return "", err
	}
	if c := DefaultClass(classes); c != "" {
		return c, nil
	}
	// "No default" leads to a refusal: read the classes from the API
	// server in case one was made the default a moment ago.
	var live v1alpha1.ListenerClassList
	if err := l.live.List(ctx, &live); err != nil {
		return "", fmt.Errorf("list ListenerClasses: %w", err)
	}
	return DefaultClass(live.Items), nil
}

// namespaceDefault is the default class namespace names, "" if none. A
// namespace not seen yet (created a moment ago) is read live, as a name the
// cache lacks is.
func (l *lookup) namespaceDefault(ctx context.Context, namespace string) (string, error) {
	if l.namespaces != nil {
		c, seen, err := l.namespaces.DefaultClass(ctx, namespace)
		if err != nil || seen {
			return c, err
		}
	}
	key := types.NamespacedName{Name: namespace}
	var ns corev1.Namespace
	err := l.getLive(ctx, key, &ns, apierrors.NewNotFound(corev1.Resource("namespaces"), namespace))
	if err != nil && !apierrors.IsNotFound(err) {
		return "", fmt.Errorf("get namespace %s: %w", namespace, err)
	}
	return ns.Annotations[v1alpha1.AnnotationDefaultClass], nil
}

// DefaultClass picks the cluster's default ListenerClass from classes: the
// newest annotated listeners.stackable.tech/is-default-class: "true", ties
// broken by name. "" means none is annotated.
func DefaultClass(classes []v1alpha1.ListenerClass) string {
	var best *v1alpha1.ListenerClass
	for i := range classes {
		c := &classes[i]
		if c.Annotations[v1alpha1.AnnotationDefaultClass] != "true" {
			continue
		}
		if best == nil || best.CreationTimestamp.Before(&c.CreationTimestamp) ||
			best.CreationTimestamp.Equal(&c.CreationTimestamp) && c.Name < best.Name {
			best = c
		}
	}
	if best == nil {
		return ""
	}
	return best.Name
}

// claimFacts gathers what validation.Claim needs for claims in namespace
// that refer to the given Listener names.
func (l *lookup) claimFacts(ctx context.Context, namespace string, classNames, listenerNames []string) (validation.ClaimFacts, error) {
	classes, err := l.classNames(ctx, classNames...)
	if err != nil {
		return validation.ClaimFacts{}, err
	}
	facts := validation.ClaimFacts{Namespace: namespace, Classes: classes}
	for _, name := range listenerNames {
		if name == "" {
			continue
		}
		if facts.Listeners == nil {
			facts.Listeners = make(map[string]bool, len(listenerNames))
		}
		var li v1alpha1.Listener
		err := l.get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &li)
		switch {
		case err == nil:
			facts.Listeners[name] = true
		case !apierrors.IsNotFound(err):
			return facts, fmt.Errorf("get Listener %s/%s: %w", namespace, name, err)
		}
	}
	return facts, nil
}

// defaultStorageClassAnn marks the cluster's default StorageClass.
const defaultStorageClassAnn = "storageclass.kubernetes.io/is-default-class"

// isDefaultStorageClass reports whether the StorageClass name is the
// cluster's default, which the DefaultStorageClass admission plugin writes
// into claims without a class before webhooks see them.
func (l *lookup) isDefaultStorageClass(ctx context.Context, name string) (bool, error) {
	var sc storagev1.StorageClass
	err := l.get(ctx, types.NamespacedName{Name: name}, &sc)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("get StorageClass %s: %w", name, err)
	}
	return sc.Annotations[defaultStorageClassAnn] == "true", nil
}

// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get

// statefulSetOf reads live (the webhooks cache no StatefulSet) the
// StatefulSet in namespace whose pod pod would be
// (claims.StatefulSetOfPod): nil when pod is not such a name or it does not
// exist. The read is bounded as other live reads are (livereads.go).
func (l *lookup) statefulSetOf(ctx context.Context, namespace, pod string) (*appsv1.StatefulSet, error) {
	name := claims.StatefulSetOfPod(pod)
	if name == "" {
		return nil, nil
	}
	key := types.NamespacedName{Namespace: namespace, Name: name}
	sts := &appsv1.StatefulSet{}
	err := l.getLive(ctx, key, sts, apierrors.NewNotFound(appsv1.Resource("statefulsets"), name))
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("get StatefulSet %s/%s: %w", namespace, name, err)
	}
	return sts, nil
}

// namesInNamespace lists the Listener names of a namespace from the cache.
func namesInNamespace(ctx context.Context, l *lookup, namespace string) ([]string, error) {
	var list v1alpha1.ListenerList
	if err := l.cache.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("list Listeners of namespace %s: %w", namespace, err)
	}
	out := make([]string, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, list.Items[i].Name)
	}
	return out, nil
}
