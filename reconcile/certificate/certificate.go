package certificate

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/listener-operator/listener-operator/api/service"
	"github.com/listener-operator/listener-operator/reconcile/internal/lookup"
	"github.com/listener-operator/listener-operator/reconcile/internal/metrics"
	"github.com/listener-operator/listener-operator/reconcile/options"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/reconcile/conditions"
)

// Event reasons of the certificate controller.
const (
	// EventCertificateUnavailable: the Listener's class asks for a
	// certificate but cert-manager's CRDs are not installed.
	EventCertificateUnavailable = "CertificateUnavailable"
	// EventCertificateConflict: a Certificate of the name the operator uses
	// exists and is not this Listener's.
	EventCertificateConflict = "CertificateConflict"
	EventCertificateCreated  = "CertificateCreated"
	EventCertificateUpdated  = "CertificateUpdated"
	EventCertificateDeleted  = "CertificateDeleted"
)

// ControllerName names the certificate controller (logs, metrics).
const ControllerName = string(v1alpha1.CertificateStatusWriter)

// certificateRecheck is how often a Listener whose class asks for a
// certificate is looked at again without an event: Certificates are read
// live, not watched (cert-manager may not be installed, and a cache of every
// Certificate in the cluster would cost memory for objects that are not
// the operator's), so one deleted by hand comes back within this period.
const certificateRecheck = 10 * time.Minute

// +kubebuilder:rbac:groups=cert-manager.io,resources=certificates,verbs=get;create;update;delete

// certificateReconciler keeps one cert-manager Certificate per Listener
// whose class has spec.certificate, naming exactly the Listener's current
// addresses and its Service's in-cluster DNS names, and says how that goes
// in the Listener's CertificateManaged condition.
type certificateReconciler struct {
	client        client.Client // reads Listeners and classes from the cache; writes Certificates and the condition
	live          client.Reader // reads Certificates from the API server
	recorder      events.EventRecorder
	clusterDomain string
	// missing remembers that cert-manager's CRDs were not served, so that
	// Listeners cost no API call until the next look.
	missing availability
	// now is the clock (time.Now; tests move it).
	now func() time.Time
}

// availability remembers for a while that cert-manager is not installed.
type availability struct {
	mu        sync.Mutex
	missingAt time.Time
}

// certManagerRecheck is how long the controller trusts that cert-manager
// is not installed before it looks again, and how often a Listener whose
// class asks for a certificate is looked at while it is not: an
// installation is noticed within this period, without a restart. The look
// is one read of a Certificate (the RESTMapper's discovery of the
// cert-manager.io group) per period, whatever the number of Listeners, and
// nothing is kept per Listener; Listeners of classes without certificates
// are not looked at for it at all.
const certManagerRecheck = 15 * time.Second

// knownMissing reports whether cert-manager was found missing recently.
func (a *availability) knownMissing(now time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return !a.missingAt.IsZero() && now.Sub(a.missingAt) < certManagerRecheck
}

func (a *availability) set(missing bool, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if missing {
		a.missingAt = now
	} else {
		a.missingAt = time.Time{}
	}
}

// Setup registers the certificate controller with mgr (the indexes of
// lookup.AddIndexes registered).
func Setup(mgr ctrl.Manager, opts options.Options, recorder events.EventRecorder) error {
	r := &certificateReconciler{client: mgr.GetClient(), live: mgr.GetAPIReader(), recorder: recorder, clusterDomain: opts.ClusterDomain, now: time.Now}
	c := mgr.GetClient()
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		// Every update (the addresses are in the status), of the Listeners
		// that have or had a certificate: the others cost no call to the
		// API server. A class that stops asking enqueues its Listeners
		// below.
		Watches(&v1alpha1.Listener{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []ctrl.Request {
			if l, ok := o.(*v1alpha1.Listener); ok && wantsCertificate(ctx, c, l) {
				return []ctrl.Request{{NamespacedName: client.ObjectKeyFromObject(o)}}
			}
			return nil
		})).
		Watches(&v1alpha1.ListenerClass{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []ctrl.Request {
			return lookup.ListenersOfClass(ctx, c, o.GetName())
		})).
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.MaxConcurrentReconciles}).
		Complete(opts.Wrapped(ControllerName, r))
}

// wantsCertificate reports whether the Listener's class asks for a
// certificate or the Listener published one (its class just stopped).
func wantsCertificate(ctx context.Context, c client.Reader, l *v1alpha1.Listener) bool {
	if l.Status.CertificateSecretName != "" {
		return true
	}
	if l.Spec.ClassName == nil {
		return false
	}
	class := &v1alpha1.ListenerClass{}
	if err := c.Get(ctx, types.NamespacedName{Name: *l.Spec.ClassName}, class); err != nil {
		return false
	}
	return class.Spec.Certificate != nil
}

// desiredCertificate is the Certificate the Listener l of class should
// have: its Hostname addresses and its Service's in-cluster names as DNS
// names, its IP addresses as IP addresses, each once, in the order the
// Listener publishes them.
func desiredCertificate(l *v1alpha1.Listener, class *v1alpha1.ListenerClass, clusterDomain string) *cmv1.Certificate {
	var dnsNames, ips []string
	for _, a := range l.Status.IngressAddresses {
		switch a.AddressType {
		case v1alpha1.AddressTypeIP:
			if !slices.Contains(ips, a.Address) {
				ips = append(ips, a.Address)
			}
		default:
			if !slices.Contains(dnsNames, a.Address) {
				dnsNames = append(dnsNames, a.Address)
			}
		}
	}
	for _, n := range names.ServiceDNSNames(names.ServiceName(l.Name), l.Namespace, clusterDomain) {
		if !slices.Contains(dnsNames, n) {
			dnsNames = append(dnsNames, n)
		}
	}
	ref := class.Spec.Certificate.IssuerRef
	kind := string(ref.Kind)
	if kind == "" {
		kind = string(v1alpha1.IssuerKindClusterIssuer)
	}
	name := names.CertificateName(l.Name)
	return &cmv1.Certificate{
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: l.Namespace,
			Labels:    map[string]string{service.LabelName: "listener", service.LabelInstance: names.ServiceName(l.Name), service.LabelManagedBy: v1alpha1.FieldManager},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: v1alpha1.GroupVersion.String(), Kind: "Listener", Name: l.Name, UID: l.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: cmv1.CertificateSpec{
			SecretName:  name,
			DNSNames:    dnsNames,
			IPAddresses: ips,
			IssuerRef:   cmmeta.IssuerReference{Group: "cert-manager.io", Kind: kind, Name: ref.Name},
		},
	}
}

// certificateUpToDate reports whether existing has what want decides.
func certificateUpToDate(existing, want *cmv1.Certificate) bool {
	return existing.Spec.SecretName == want.Spec.SecretName &&
		equality.Semantic.DeepEqual(existing.Spec.IssuerRef, want.Spec.IssuerRef) &&
		slices.Equal(existing.Spec.DNSNames, want.Spec.DNSNames) &&
		slices.Equal(existing.Spec.IPAddresses, want.Spec.IPAddresses)
}

// certManagerMissing reports whether err says the API server does not
// serve cert-manager's Certificates.
func certManagerMissing(err error) bool {
	if meta.IsNoMatchError(err) {
		return true
	}
	var status apierrors.APIStatus
	if s, ok := err.(apierrors.APIStatus); ok {
		status = s
	}
	// A NotFound without details is the resource missing, not the object.
	return status != nil && apierrors.IsNotFound(err) && status.Status().Details == nil
}

func (r *certificateReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	defer metrics.ObserveReconcile(ControllerName, time.Now())
	l := &v1alpha1.Listener{}
	if err := r.client.Get(ctx, req.NamespacedName, l); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !l.DeletionTimestamp.IsZero() || l.Spec.ClassName == nil {
		return ctrl.Result{}, nil
	}
	class := &v1alpha1.ListenerClass{}
	if err := r.client.Get(ctx, types.NamespacedName{Name: *l.Spec.ClassName}, class); err != nil {
		// A missing class leaves the Certificate as it is: the Listener
		// keeps its last addresses too.
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	existing, missing, err := r.existing(ctx, l)
	if err != nil {
		return ctrl.Result{}, err
	}
	return r.carryOut(ctx, l, decide(l, class, r.clusterDomain, missing, existing))
}

// existing reads the Listener's Certificate from the API server (nil:
// none). missing says cert-manager is not installed: known from a recent
// look (no API call until the next one), or found now.
func (r *certificateReconciler) existing(ctx context.Context, l *v1alpha1.Listener) (*cmv1.Certificate, bool, error) {
	if r.missing.knownMissing(r.now()) {
		return nil, true, nil
	}
	key := types.NamespacedName{Namespace: l.Namespace, Name: names.CertificateName(l.Name)}
	existing := &cmv1.Certificate{}
	err := r.live.Get(ctx, key, existing)
	r.missing.set(err != nil && certManagerMissing(err), r.now())
	switch {
	case err != nil && certManagerMissing(err):
		return nil, true, nil
	case apierrors.IsNotFound(err):
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("get certificate %s: %w", key, err)
	}
	return existing, false, nil
}

// carryOut makes the write o decided, records its events, and writes the
// CertificateManaged condition when it changed. A lost race (the
// Certificate made or changed meanwhile) looks again shortly, condition
// unwritten.
func (r *certificateReconciler) carryOut(ctx context.Context, l *v1alpha1.Listener, o outcome) (ctrl.Result, error) {
	if o.warning != "" {
		r.recorder.Eventf(l, o.related(), corev1.EventTypeWarning, o.warning, "Certificate", "%s", o.cond.Message)
		if o.warning == EventCertificateUnavailable {
			ctrl.LoggerFrom(ctx).Info("certificates unavailable: cert-manager's CRDs are not installed", "class", *l.Spec.ClassName)
		}
	}
	if o.cert != nil {
		done, err := r.write(ctx, l, o)
		if err != nil {
			return ctrl.Result{}, err
		}
		if !done {
			return ctrl.Result{RequeueAfter: options.ConflictRetry}, nil
		}
	}
	return r.withCondition(ctx, l, o.cond, ctrl.Result{RequeueAfter: o.requeueAfter})
}

// write creates, updates or deletes o.cert, as o.write says, and records
// it by an event. done is false when it lost a race.
func (r *certificateReconciler) write(ctx context.Context, l *v1alpha1.Listener, o outcome) (done bool, err error) {
	cert := o.cert
	key := client.ObjectKeyFromObject(cert)
	switch o.write {
	case writeDelete:
		err := r.client.Delete(ctx, cert, client.Preconditions{UID: &cert.UID})
		if metrics.CountWrite(ControllerName, "Certificate", "delete", err) != nil && !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("delete certificate %s: %w", key, err)
		}
		r.recorder.Eventf(l, cert, corev1.EventTypeNormal, EventCertificateDeleted, "Delete", "Deleted Certificate %s: the class asks for none", key.Name)
	case writeCreate:
		err := r.client.Create(ctx, cert, client.FieldOwner(v1alpha1.FieldManager))
		if metrics.CountWrite(ControllerName, "Certificate", "create", err) != nil {
			if apierrors.IsAlreadyExists(err) {
				return false, nil
			}
			return false, fmt.Errorf("create certificate %s: %w", key, err)
		}
		r.recorder.Eventf(l, cert, corev1.EventTypeNormal, EventCertificateCreated, "Create", "Created Certificate %s naming %d DNS name(s) and %d IP address(es)", key.Name, len(cert.Spec.DNSNames), len(cert.Spec.IPAddresses))
	case writeUpdate:
		err := r.client.Update(ctx, cert, client.FieldOwner(v1alpha1.FieldManager))
		if metrics.CountWrite(ControllerName, "Certificate", "update", err) != nil {
			if apierrors.IsConflict(err) {
				return false, nil
			}
			return false, fmt.Errorf("update certificate %s: %w", key, err)
		}
		r.recorder.Eventf(l, cert, corev1.EventTypeNormal, EventCertificateUpdated, "Update", "Updated Certificate %s to the Listener's addresses", key.Name)
	}
	return true, nil
}

// changed reports whether cond (nil: none) differs from the Listener's
// CertificateManaged condition.
func changed(l *v1alpha1.Listener, cond *metav1.Condition) bool {
	old := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionCertificateManaged)
	if cond == nil || old == nil {
		return (cond == nil) != (old == nil)
	}
	return old.Status != cond.Status || old.Reason != cond.Reason || old.Message != cond.Message || old.ObservedGeneration != l.Generation
}

// withCondition writes the Listener's CertificateManaged condition (nil
// removes it) when it changed, and returns res. It is a server-side apply
// of that condition alone under the certificate controller's own field
// manager (conditions.Writer.ApplyCondition, api/v1alpha1's status
// ownership table): the Listener controller's fields and conditions are
// left as they are, and neither writer has to retry on the other's write.
func (r *certificateReconciler) withCondition(ctx context.Context, l *v1alpha1.Listener, cond *metav1.Condition, res ctrl.Result) (ctrl.Result, error) {
	if !changed(l, cond) {
		return res, nil
	}
	_, err := conditions.For(v1alpha1.CertificateStatusWriter).ApplyCondition(ctx, r.client, l, cond, r.now())
	if metrics.CountWrite(ControllerName, "Listener", "patch-status", err) != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("apply condition %s of listener %s/%s: %w", v1alpha1.ConditionCertificateManaged, l.Namespace, l.Name, err)
	}
	return res, nil
}
