package webhooks

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/caches"
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
	PathMutatePod         = "/mutate-v1-pod"
	PathMutateClaim       = "/mutate-v1-persistentvolumeclaim"
	PathMutateStatefulSet = "/mutate-apps-v1-statefulset"
	PathValidateClass     = "/validate-listeners-stackable-tech-v1alpha1-listenerclass"
	PathValidateListener  = "/validate-listeners-stackable-tech-v1alpha1-listener"
	PathValidateClaim     = "/validate-v1-persistentvolumeclaim"
	PathValidateWorkload  = "/validate-apps-v1-workload"
)

// The handlers read these; they write nothing.
// +kubebuilder:rbac:groups=listeners.stackable.tech,resources=listenerclasses;listeners,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims;persistentvolumes;namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=storage.k8s.io,resources=storageclasses,verbs=get;list;watch

// +kubebuilder:webhookconfiguration:mutating=true,name=listener-operator-mutating
// +kubebuilder:webhookconfiguration:mutating=false,name=listener-operator-validating

// NamespaceDefaults tells which default ListenerClass a namespace names
// ("" for none) and whether the namespace has been seen at all (one created
// a moment ago may not have been): caches.NamespaceDefaults, which holds
// that much of each namespace and no more.
type NamespaceDefaults interface {
	DefaultClass(ctx context.Context, namespace string) (class string, seen bool, err error)
}

// SetupWithManager registers every handler on the manager's webhook server.
// It runs on every replica, leader or not. namespaces answers what the
// claim webhook asks of namespaces; the caller runs it.
func SetupWithManager(mgr ctrl.Manager, namespaces NamespaceDefaults) error {
	_, err := setup(mgr, namespaces)
	return err
}

// setup is SetupWithManager, which returns the handlers' lookup.
func setup(mgr ctrl.Manager, namespaces NamespaceDefaults) (*lookup, error) {
	l := newLookup(mgr.GetCache(), mgr.GetAPIReader(), namespaces)
	// Start the informers now, so that the first admission does not wait
	// for a cache to fill.
	ctx := context.Background()
	for _, obj := range []client.Object{&v1alpha1.ListenerClass{}, &v1alpha1.Listener{}, &corev1.PersistentVolumeClaim{}, &corev1.PersistentVolume{}, &storagev1.StorageClass{}} {
		if _, err := mgr.GetCache().GetInformer(ctx, obj); err != nil {
			return nil, fmt.Errorf("start informer for %T: %w", obj, err)
		}
	}
	var err error
	if l.plainClasses, err = indexPlainClasses(ctx, mgr.GetCache()); err != nil {
		return nil, err
	}
	if l.gatingClasses, err = indexGatingClasses(ctx, mgr.GetCache()); err != nil {
		return nil, err
	}
	if l.heldClaims, err = caches.NewKeyIndex(ctx, mgr.GetCache(), &corev1.PersistentVolumeClaim{}, "", nil); err != nil {
		return nil, err
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
	return l, nil
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
