package caches

import (
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/addresses"
	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// The cache benchmarks measure the shipped policy against the same policy
// with one trick turned off at a time, in the same process and on the same
// objects: what each trick saves per object, which docs/benchmarks.md
// multiplies by the objects of the 1,000-claim mix to decide whether the
// trick pays for itself (issue 38: one that saves less than 5% of a
// replica's RSS goes).

// trickConfigs are the shipped policy and, for each trick, the policy
// without it. CACHE_CONFIGS=shipped,interning-off measures only those.
func trickConfigs(b *testing.B) []cacheConfig {
	all := []cacheConfig{
		{name: "shipped", webhooks: Webhooks, reconciler: Reconcilers},
		// Every object its own maps (the keys still canonical).
		{name: "sharedmaps-off", webhooks: after(Webhooks, ownMaps), reconciler: after(Reconcilers, ownMaps)},
		// Every object its own copy of every string, and its own maps.
		{name: "interning-off", webhooks: after(Webhooks, ownStrings), reconciler: after(Reconcilers, ownStrings)},
		// No object trimmed to what is read: managedFields dropped and
		// strings interned (Compact), the rest kept.
		{name: "trimming-off", webhooks: untrimmed(Webhooks), reconciler: untrimmed(Reconcilers)},
		// Namespaces and PodListeners held by informers of their metadata,
		// trimmed to what is read, instead of the stores of their own.
		{name: "metastores-off", webhooks: Webhooks, reconciler: Reconcilers, namespaceInformer: true, podListenersInformer: true},
	}
	only := os.Getenv("CACHE_CONFIGS")
	if only == "" {
		return all
	}
	var out []cacheConfig
	for _, c := range all {
		if slices.Contains(strings.Split(only, ","), c.name) {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		b.Fatalf("CACHE_CONFIGS=%q names no configuration", only)
	}
	return out
}

// after is policy with f applied to every object after its transform.
func after(policy func() cache.Options, f func(any)) func() cache.Options {
	wrap := func(t toolscache.TransformFunc) toolscache.TransformFunc {
		return func(obj any) (any, error) {
			if t != nil {
				var err error
				if obj, err = t(obj); err != nil {
					return obj, err
				}
			}
			f(obj)
			return obj, nil
		}
	}
	return func() cache.Options {
		opts := policy()
		opts.DefaultTransform = wrap(opts.DefaultTransform)
		for obj, by := range opts.ByObject {
			by.Transform = wrap(by.Transform)
			opts.ByObject[obj] = by
		}
		return opts
	}
}

// untrimmed is policy with its default transform (Compact, sharing the
// policy's maps) in place of every transform of its own.
func untrimmed(policy func() cache.Options) func() cache.Options {
	return func() cache.Options {
		opts := policy()
		for obj, by := range opts.ByObject {
			by.Transform = opts.DefaultTransform
			opts.ByObject[obj] = by
		}
		return opts
	}
}

// ownMaps gives every map obj holds a copy of its own.
func ownMaps(obj any) { unshare(reflect.ValueOf(obj), false) }

// ownStrings gives every string and every map obj holds a copy of its own,
// as the decoder made them.
func ownStrings(obj any) { unshare(reflect.ValueOf(obj), true) }

var (
	timeType = reflect.TypeFor[time.Time]()
	uidType  = reflect.TypeFor[types.UID]()
)

// unshare replaces each map under v (and each string, with strings) by a
// copy of its own.
func unshare(v reflect.Value, withStrings bool) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			unshare(v.Elem(), withStrings)
		}
	case reflect.Struct:
		if v.Type() == timeType {
			return // its location is global
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				unshare(v.Field(i), withStrings)
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			unshare(v.Index(i), withStrings)
		}
	case reflect.Map:
		if v.IsNil() || !v.CanSet() {
			return
		}
		m := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			k.Set(it.Key())
			e.Set(it.Value())
			if withStrings {
				unshare(k, true)
				unshare(e, true)
			}
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.String:
		if withStrings && v.CanSet() && v.Len() > 0 {
			v.SetString(strings.Clone(v.String()))
		}
	}
}

// namespacesMetadata is the metadata-only view of namespaces that the
// webhooks' cache holds when metastores-off, in place of NamespaceDefaults
// (podListenersMetadata the same for PodListenersHashes).
func namespacesMetadata() client.Object {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	return m
}

// trimNamespaceMetadata keeps of a namespace what the claim webhook reads:
// its identity and the default class it names.
func trimNamespaceMetadata(obj any) (any, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil
	}
	out := &metav1.PartialObjectMetadata{TypeMeta: m.TypeMeta, ObjectMeta: minimalMeta(m.ObjectMeta)}
	if c, ok := m.Annotations[v1alpha1.AnnotationDefaultClass]; ok {
		out.Annotations = map[string]string{v1alpha1.AnnotationDefaultClass: c}
	}
	(*interner)(nil).meta(out)
	return out, nil
}

// benchIndexes are the indexes the operator registers on the webhooks'
// cache (the shared kinds: reconcile's, nodeloss's and ReconcilerView's, on
// every replica, at setup) or on the reconcilers' own, with the values they
// file (reconcile/internal/lookup/lookup.go, reconcile/nodeloss/mapping.go,
// ReconcilerView).
func benchIndexes(webhooks bool) []Index {
	if !webhooks {
		return []Index{
			{Object: &corev1.Service{}, Field: "listener.controller", Values: func(o client.Object) []string {
				if ref := metav1.GetControllerOfNoCopy(o); ref != nil && ref.Kind == "Listener" && names.ServiceName(ref.Name) != o.GetName() {
					return []string{ref.Name}
				}
				return nil
			}},
			{Object: &corev1.Pod{}, Field: "pod.node", Values: func(o client.Object) []string {
				if n := o.(*corev1.Pod).Spec.NodeName; n != "" {
					return []string{n}
				}
				return nil
			}},
			{Object: &corev1.Pod{}, Field: IndexPodClaim, Values: PodNamedClaims},
		}
	}
	return []Index{
		{Object: &v1alpha1.Listener{}, Field: "spec.className", Values: func(o client.Object) []string {
			if c := o.(*v1alpha1.Listener).Spec.ClassName; c != nil {
				return []string{*c}
			}
			return nil
		}},
		{Object: &v1alpha1.Listener{}, Field: "status.serviceName", Values: func(o client.Object) []string {
			if s := o.(*v1alpha1.Listener).Status.ServiceName; s != "" && s != o.GetName() {
				return []string{s}
			}
			return nil
		}},
		{Object: &corev1.PersistentVolumeClaim{}, Field: "claim.listener", Values: func(o client.Object) []string {
			if use, ok := claims.OfClaim(o.(*corev1.PersistentVolumeClaim)); ok && use.Listener != "" && use.Listener != o.GetName() {
				return []string{use.Listener}
			}
			return nil
		}},
		{Object: &corev1.PersistentVolumeClaim{}, Field: "claim.class", Values: func(o client.Object) []string {
			if use, ok := claims.OfClaim(o.(*corev1.PersistentVolumeClaim)); ok && use.Own {
				return []string{use.Class}
			}
			return nil
		}},
		{Object: &corev1.PersistentVolume{}, Field: IndexVolumeNode, Values: func(o client.Object) []string {
			return addresses.PinnedNodes(o.(*corev1.PersistentVolume))
		}},
	}
}
