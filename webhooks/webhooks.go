package webhooks

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/go-logr/logr"
	jsoniter "github.com/json-iterator/go"
	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/api/validation"
)

// Webhook configuration names and the Service that fronts the handlers; the
// certificate component injects the CA bundle into these.
const (
	MutatingConfigurationName   = "listener-operator-mutating"
	ValidatingConfigurationName = "listener-operator-validating"
	ServiceName                 = "listener-operator-webhook"
)

// Paths the handlers are served on.
const (
	PathMutatePod          = "/mutate-v1-pod"
	PathMutateClaim        = "/mutate-v1-persistentvolumeclaim"
	PathMutateStatefulSet  = "/mutate-apps-v1-statefulset"
	PathValidateClass      = "/validate-listeners-stackable-tech-v1alpha1-listenerclass"
	PathValidateListener   = "/validate-listeners-stackable-tech-v1alpha1-listener"
	PathValidateClaim      = "/validate-v1-persistentvolumeclaim"
	PathValidateWorkload   = "/validate-apps-v1-workload"
	defaultStorageClassAnn = "storageclass.kubernetes.io/is-default-class"
)

// The handlers read these; they write nothing.
// +kubebuilder:rbac:groups=listeners.stackable.tech,resources=listenerclasses;listeners,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims;persistentvolumes;namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=storage.k8s.io,resources=storageclasses,verbs=get;list;watch

// +kubebuilder:webhookconfiguration:mutating=true,name=listener-operator-mutating
// +kubebuilder:webhookconfiguration:mutating=false,name=listener-operator-validating

// failOpen counts admissions that a handler let through unchanged because a
// lookup failed, on webhooks whose failurePolicy is Ignore.
var failOpen = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "listener_operator_webhook_fail_open_total",
	Help: "Admissions let through without (part of) their mutation because a lookup failed.",
}, []string{"webhook"})

func init() {
	metrics.Registry.MustRegister(failOpen)
}

// SetupWithManager registers every handler on the manager's webhook server.
// It runs on every replica, leader or not.
func SetupWithManager(mgr ctrl.Manager) error {
	l := &lookup{cache: mgr.GetCache(), live: mgr.GetAPIReader(), reads: newLiveBounds()}
	// Start the informers now, so that the first admission does not wait
	// for a cache to fill.
	ctx := context.Background()
	for _, obj := range []client.Object{&v1alpha1.ListenerClass{}, &v1alpha1.Listener{}, &corev1.PersistentVolumeClaim{}, &corev1.PersistentVolume{}, &corev1.Namespace{}, &storagev1.StorageClass{}} {
		if _, err := mgr.GetCache().GetInformer(ctx, obj); err != nil {
			return fmt.Errorf("start informer for %T: %w", obj, err)
		}
	}
	srv := mgr.GetWebhookServer()
	log := mgr.GetLogger().WithName("webhooks")
	for path, h := range handlers(l) {
		wh := &admission.Webhook{Handler: h, RecoverPanic: ptr(true)}
		wh.LogConstructor = func(_ logr.Logger, req *admission.Request) logr.Logger {
			return admission.DefaultLogConstructor(log.WithValues("webhook", path), req)
		}
		srv.Register(path, wh)
	}
	return nil
}

// handlers are the handlers by path, each refusing kinds it does not judge.
func handlers(l *lookup) map[string]admission.Handler {
	pod := schema.GroupKind{Kind: "Pod"}
	claim := schema.GroupKind{Kind: "PersistentVolumeClaim"}
	sts := schema.GroupKind{Group: "apps", Kind: "StatefulSet"}
	return map[string]admission.Handler{
		PathMutatePod:         expectKinds{&podMutator{lookup: l, validator: &workloadValidator{lookup: l}}, []schema.GroupKind{pod}},
		PathMutateClaim:       expectKinds{&claimMutator{lookup: l}, []schema.GroupKind{claim}},
		PathMutateStatefulSet: expectKinds{&statefulSetMutator{lookup: l}, []schema.GroupKind{sts}},
		PathValidateClass:     expectKinds{&classValidator{lookup: l}, []schema.GroupKind{{Group: v1alpha1.GroupVersion.Group, Kind: "ListenerClass"}}},
		PathValidateListener:  expectKinds{&listenerValidator{lookup: l}, []schema.GroupKind{{Group: v1alpha1.GroupVersion.Group, Kind: "Listener"}}},
		PathValidateClaim:     expectKinds{&claimValidator{lookup: l}, []schema.GroupKind{claim}},
		PathValidateWorkload: expectKinds{&workloadValidator{lookup: l}, []schema.GroupKind{
			{Group: "apps", Kind: "Deployment"}, sts, {Group: "apps", Kind: "DaemonSet"}, {Group: "apps", Kind: "ReplicaSet"},
			{Group: "batch", Kind: "Job"}, {Group: "batch", Kind: "CronJob"}}},
	}
}

// expectKinds refuses requests for kinds the handler does not judge: the
// API server only sends what a webhook's rules name, so anything else was
// posted by something else, and a handler must not read one kind's fields
// as another's.
type expectKinds struct {
	admission.Handler
	kinds []schema.GroupKind
}

func (e expectKinds) Handle(ctx context.Context, req admission.Request) admission.Response {
	got := schema.GroupKind{Group: req.Kind.Group, Kind: req.Kind.Kind}
	if slices.Contains(e.kinds, got) {
		return e.Handler.Handle(ctx, req)
	}
	want := make([]string, len(e.kinds))
	for i, k := range e.kinds {
		want[i] = k.String()
	}
	return admission.Errored(http.StatusBadRequest, fmt.Errorf("this webhook judges %s, not %q", strings.Join(want, ", "), got.String()))
}

func ptr[T any](v T) *T { return &v }

// viewDecoder decodes the admitted objects into the handlers' views. It
// matches field names case-sensitively, as the API server's own decoder
// does, and is about twice as fast as encoding/json on a pod, which is most
// of the pod webhook's time.
var viewDecoder = jsoniter.Config{CaseSensitive: true, ObjectFieldMustBeSimpleString: true}.Froze()

// decode decodes an admitted object of kind into the view v.
func decode(raw []byte, kind string, v any) error {
	if err := viewDecoder.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("decode %s: %w", kind, err)
	}
	return nil
}

// lookup reads through the manager's cache and falls back to a live read
// when the cache does not have an object yet (created a moment ago).
//
// Objects read from the cache share their maps and slices with it (no deep
// copy, which would be a third of a pod admission's allocations): handlers
// only read what they look up and must never modify it.
type lookup struct {
	cache client.Reader
	live  client.Reader
	// reads bounds the live reads of names the cache lacks (livereads.go);
	// nil: unbounded.
	reads *liveBounds
}

func (l *lookup) get(ctx context.Context, key types.NamespacedName, obj client.Object) error {
	err := l.cache.Get(ctx, key, obj, client.UnsafeDisableDeepCopy)
	if apierrors.IsNotFound(err) {
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
	if err := l.cache.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
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
	var ns corev1.Namespace
	if err := l.get(ctx, types.NamespacedName{Name: namespace}, &ns); err != nil && !apierrors.IsNotFound(err) {
		return "", fmt.Errorf("get namespace %s: %w", namespace, err)
	}
	if c := ns.Annotations[v1alpha1.AnnotationDefaultClass]; c != "" {
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

// invalid is the denial for errs: a Kubernetes Invalid error that kubectl
// shows with each field path and message.
func invalid(req admission.Request, errs field.ErrorList) admission.Response {
	gk := schema.GroupKind{Group: req.Kind.Group, Kind: req.Kind.Kind}
	name := req.Name
	st := apierrors.NewInvalid(gk, name, errs).Status()
	return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: &st}}
}

// lookupFailed is the answer of a handler on a failurePolicy Fail webhook
// when it cannot read what it needs: the API server refuses the request and
// the client can retry.
func lookupFailed(err error) admission.Response {
	return admission.Errored(http.StatusServiceUnavailable, err)
}

// ratchet drops from errs the errors that old already had, so that an
// update of an object that became invalid (its class was deleted, a rule
// got stricter) is only refused for what the update itself breaks. Without
// it, removing a finalizer from such an object would be refused.
func ratchet(errs, old field.ErrorList) field.ErrorList {
	if len(errs) == 0 || len(old) == 0 {
		return errs
	}
	seen := make(map[string]bool, len(old))
	for _, e := range old {
		seen[e.Error()] = true
	}
	var out field.ErrorList
	for _, e := range errs {
		if !seen[e.Error()] {
			out = append(out, e)
		}
	}
	return out
}

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

// joinSorted lists names for a message.
func joinSorted(names []string) string {
	sort.Strings(names)
	return strings.Join(names, ", ")
}
