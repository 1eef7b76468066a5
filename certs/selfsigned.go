package certs

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// The self-signed mode reads and writes its one Secret by name (created by
// the manifests; create is needed only when it is missing, and RBAC cannot
// restrict create by name, so the manifests do not grant it) and patches
// the caBundle of the webhook configurations, which it watches. Those rights
// are granted only in this mode, by config/selfsigned/rbac.yaml (and the
// chart's mode-rbac.yaml), not by markers: with cert-manager, cainjector
// writes the caBundle, and a leaked token of the operator must not be able
// to redirect admissions (docs/install.md, "RBAC").
//
// +kubebuilder:rbac:groups=events.k8s.io,namespace=listener-operator,resources=events,verbs=create;patch

// DefaultSecretName is the self-signed mode's Secret.
const DefaultSecretName = "listener-operator-webhook-cert"

// SelfSignedOptions configure the self-signed mode's leader side.
type SelfSignedOptions struct {
	// Namespace and SecretName locate the Secret with the CA and the
	// serving certificate.
	Namespace, SecretName string
	// Hosts the serving certificate covers (see ServiceHosts).
	Hosts []string
	// CAValidity and ServingValidity are the lifetimes of new certificates;
	// zero means DefaultCAValidity and DefaultServingValidity.
	CAValidity, ServingValidity time.Duration
	// MutatingWebhookConfigurations and ValidatingWebhookConfigurations
	// name the configurations whose caBundle the CA goes into.
	MutatingWebhookConfigurations, ValidatingWebhookConfigurations []string
	// Probe says whether every replica serves a certificate of a CA, so
	// that the previous CA can leave the caBundle after a CA change (nil:
	// it stays until the next CA change).
	Probe ServingProbe
	// Resync bounds the time between two checks when nothing happens
	// (default five minutes): the Secret is not watched (that would mean
	// caching Secrets), so this is how soon a damaged Secret is repaired.
	Resync time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Bootstrapper is the leader's half of the self-signed mode: it keeps the
// Secret's certificates valid and the CA in the webhook configurations.
type Bootstrapper struct {
	// Client writes; it reads the webhook configurations from the cache.
	Client client.Client
	// Reader reads the Secret directly from the API server, so that the
	// manager does not cache (and need to list) Secrets.
	Reader client.Reader
	// Recorder, when set, records on the Secret when certificates are
	// issued or rotated.
	Recorder events.EventRecorder
	Opts     SelfSignedOptions

	// mu serialises Reconcile: a pass that read the Secret before a CA
	// change must not inject its older caBundle after a newer pass
	// injected the new one (the controller runs one pass at a time; a
	// direct call, as at start or in tests, would otherwise interleave).
	mu sync.Mutex
}

// Reasons of the events on the Secret.
const (
	EventCertificatesIssued = "CertificatesIssued"
	EventCertificateRotated = "CertificateRotated"
)

func (b *Bootstrapper) event(secret *corev1.Secret, reason, action, note string, args ...any) {
	if b.Recorder != nil {
		b.Recorder.Eventf(secret, nil, corev1.EventTypeNormal, reason, action, note, args...)
	}
}

func (b *Bootstrapper) now() time.Time {
	if b.Opts.Now != nil {
		return b.Opts.Now()
	}
	return time.Now()
}

func (b *Bootstrapper) secretKey() types.NamespacedName {
	return types.NamespacedName{Namespace: b.Opts.Namespace, Name: b.Opts.SecretName}
}

// SetupWithManager runs the Bootstrapper on the leader: once at start, when
// one of the webhook configurations changes (someone cleared the caBundle,
// or a new version of the manifests was applied) and when a certificate is
// due.
func (b *Bootstrapper) SetupWithManager(mgr ctrl.Manager) error {
	if b.Opts.Namespace == "" || b.Opts.SecretName == "" {
		return errors.New("self-signed certificates need a namespace and a Secret name")
	}
	if len(b.Opts.Hosts) == 0 {
		return errors.New("self-signed certificates need the webhook Service's host names")
	}
	key := b.secretKey()
	toSecret := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: key}}
	})
	named := func(names []string) predicate.Predicate {
		return predicate.NewPredicateFuncs(func(o client.Object) bool {
			for _, n := range names {
				if o.GetName() == n {
					return true
				}
			}
			return false
		})
	}
	atStart := source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		q.Add(reconcile.Request{NamespacedName: key})
		return nil
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("webhook-certificates").
		WatchesRawSource(atStart).
		Watches(&admissionregistrationv1.MutatingWebhookConfiguration{}, toSecret,
			builder.WithPredicates(named(b.Opts.MutatingWebhookConfigurations))).
		Watches(&admissionregistrationv1.ValidatingWebhookConfiguration{}, toSecret,
			builder.WithPredicates(named(b.Opts.ValidatingWebhookConfigurations))).
		Complete(b)
}

// Reconcile makes the Secret hold valid certificates and every webhook
// configuration trust the CA, and comes back when the next certificate is
// due. A new CA is trusted before any replica can serve a certificate of
// it, and the CA it replaced stays trusted until every replica serves one
// of the new CA (Probe), so that a CA change refuses no admission.
func (b *Bootstrapper) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	logger := log.FromContext(ctx).WithValues("secret", b.secretKey())
	bundle, rotateAt, err := b.ensureSecret(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	if len(bundle.PreviousCACert) > 0 {
		done, why, err := b.allServeNewCA(ctx, bundle.CACert)
		if err != nil {
			return reconcile.Result{}, err
		}
		if !done {
			logger.Info("keeping the previous CA in the caBundle until every replica serves a certificate of the new one", "waiting", why)
			if err := b.injectAll(ctx, bundle.TrustBundle()); err != nil {
				return reconcile.Result{}, err
			}
			return reconcile.Result{RequeueAfter: rotationRecheck}, nil
		}
		if bundle, err = b.dropPreviousCA(ctx); err != nil {
			return reconcile.Result{}, err
		}
	}
	if err := b.injectAll(ctx, bundle.TrustBundle()); err != nil {
		return reconcile.Result{}, err
	}
	resync := b.Opts.Resync
	if resync <= 0 {
		resync = 5 * time.Minute
	}
	wait := rotateAt.Sub(b.now())
	if wait > resync {
		wait = resync
	}
	if wait < time.Second {
		wait = time.Second
	}
	logger.V(1).Info("webhook certificates in place", "rotateAt", rotateAt, "recheckIn", wait)
	return reconcile.Result{RequeueAfter: wait}, nil
}

// rotationRecheck is how often the leader looks whether every replica
// serves the new CA's certificate (they copy it within seconds).
const rotationRecheck = 2 * time.Second

// injectAll puts bundle into the caBundle of every webhook configuration.
func (b *Bootstrapper) injectAll(ctx context.Context, bundle []byte) error {
	var errs []error
	for _, name := range b.Opts.MutatingWebhookConfigurations {
		errs = append(errs, b.injectCA(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{}, name, bundle))
	}
	for _, name := range b.Opts.ValidatingWebhookConfigurations {
		errs = append(errs, b.injectCA(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{}, name, bundle))
	}
	return errors.Join(errs...)
}

// allServeNewCA asks the Probe whether every replica serves a certificate
// of ca; without a Probe, never.
func (b *Bootstrapper) allServeNewCA(ctx context.Context, ca []byte) (bool, string, error) {
	if b.Opts.Probe == nil {
		return false, "no probe of the replicas", nil
	}
	return b.Opts.Probe.AllServe(ctx, ca)
}

// dropPreviousCA removes the previous CA from the Secret (guarded by its
// resourceVersion) and returns the bundle without it.
func (b *Bootstrapper) dropPreviousCA(ctx context.Context) (Bundle, error) {
	key := b.secretKey()
	secret := &corev1.Secret{}
	if err := b.Reader.Get(ctx, key, secret); err != nil {
		return Bundle{}, fmt.Errorf("read webhook certificate Secret %s: %w", key, err)
	}
	delete(secret.Data, KeyPreviousCACert)
	if err := b.Client.Update(ctx, secret, client.FieldOwner(v1alpha1.FieldManager)); err != nil {
		return Bundle{}, fmt.Errorf("drop the previous CA from Secret %s: %w", key, err)
	}
	log.FromContext(ctx).Info("every replica serves a certificate of the new CA: the previous CA leaves the caBundle", "secret", key)
	b.event(secret, EventCertificateRotated, "Rotate", "Every replica serves a certificate of the new CA; the previous CA is no longer trusted")
	return BundleFromData(secret.Data), nil
}

// ensureSecret renews what is due in the Secret and returns its bundle and
// when it is next due.
func (b *Bootstrapper) ensureSecret(ctx context.Context) (Bundle, time.Time, error) {
	logger := log.FromContext(ctx)
	key := b.secretKey()
	opts := RenewOptions{
		CommonName:      b.Opts.SecretName + "-ca",
		Hosts:           b.Opts.Hosts,
		CAValidity:      orDefault(b.Opts.CAValidity, DefaultCAValidity),
		ServingValidity: orDefault(b.Opts.ServingValidity, DefaultServingValidity),
	}
	secret := &corev1.Secret{}
	err := b.Reader.Get(ctx, key, secret)
	missing := apierrors.IsNotFound(err)
	if err != nil && !missing {
		return Bundle{}, time.Time{}, fmt.Errorf("read webhook certificate Secret %s: %w", key, err)
	}
	old := BundleFromData(secret.Data)
	bundle, d, err := Renew(old, opts, b.now())
	if err != nil {
		return Bundle{}, time.Time{}, fmt.Errorf("renew webhook certificates in Secret %s: %w", key, err)
	}
	if missing {
		secret = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name,
				Labels: map[string]string{"app.kubernetes.io/managed-by": v1alpha1.FieldManager}},
			Type: corev1.SecretTypeOpaque,
			Data: bundle.Data(),
		}
		if err := b.Client.Create(ctx, secret, client.FieldOwner(v1alpha1.FieldManager)); err != nil {
			return Bundle{}, time.Time{}, fmt.Errorf("create webhook certificate Secret %s (the manifests create it empty; is it missing?): %w", key, err)
		}
		logger.Info("created webhook certificates", "secret", key, "rotateAt", d.RotateAt)
		b.event(secret, EventCertificatesIssued, "Issue", "Issued a CA and a webhook serving certificate; next rotation at %s", d.RotateAt.UTC().Format(time.RFC3339))
		return bundle, d.RotateAt, nil
	}
	if bundle.Equal(old) {
		return bundle, d.RotateAt, nil
	}
	if d.NewCA && len(bundle.PreviousCACert) > 0 {
		// Trust the new CA before any replica can copy a certificate it
		// signed: the API server then accepts both the old and the new
		// serving certificate. (A failure below leaves an unused CA in the
		// caBundle until the next attempt replaces it.)
		if err := b.injectAll(ctx, bundle.TrustBundle()); err != nil {
			return Bundle{}, time.Time{}, err
		}
	}
	if secret.Data == nil {
		secret.Data = map[string][]byte{}
	}
	delete(secret.Data, KeyPreviousCACert)
	for k, v := range bundle.Data() {
		secret.Data[k] = v
	}
	// Update carries the resourceVersion read above: a concurrent writer
	// (an old leader) makes it fail and the next attempt starts over.
	if err := b.Client.Update(ctx, secret, client.FieldOwner(v1alpha1.FieldManager)); err != nil {
		return Bundle{}, time.Time{}, fmt.Errorf("store renewed webhook certificates in Secret %s: %w", key, err)
	}
	logger.Info("renewed webhook certificates", "secret", key, "reason", d.Reason, "newCA", d.NewCA, "rotateAt", d.RotateAt)
	if d.NewCA {
		b.event(secret, EventCertificatesIssued, "Issue", "Issued a new CA (%s) and webhook serving certificate; next rotation at %s", d.Reason, d.RotateAt.UTC().Format(time.RFC3339))
	} else {
		b.event(secret, EventCertificateRotated, "Rotate", "Rotated the webhook serving certificate (%s); next rotation at %s", d.Reason, d.RotateAt.UTC().Format(time.RFC3339))
	}
	return bundle, d.RotateAt, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// jsonPatchOp is one RFC 6902 operation.
type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// CABundlePatch returns the JSON patch that sets caBundle on each webhook
// whose caBundle differs from ca, guarded by the resourceVersion it was
// computed from; nil when every webhook has it already.
func CABundlePatch(resourceVersion string, current [][]byte, ca []byte) ([]byte, error) {
	ops := []jsonPatchOp{{Op: "test", Path: "/metadata/resourceVersion", Value: resourceVersion}}
	for i, have := range current {
		if !bytes.Equal(have, ca) {
			ops = append(ops, jsonPatchOp{Op: "add", Path: fmt.Sprintf("/webhooks/%d/clientConfig/caBundle", i), Value: base64.StdEncoding.EncodeToString(ca)})
		}
	}
	if len(ops) == 1 {
		return nil, nil
	}
	return json.Marshal(ops)
}

// injectCA puts ca into every webhook of one configuration. A configuration
// that does not exist (yet) is not an error: the watch brings us back when
// it appears.
func (b *Bootstrapper) injectCA(ctx context.Context, obj client.Object, name string, ca []byte) error {
	kind := "ValidatingWebhookConfiguration"
	if _, ok := obj.(*admissionregistrationv1.MutatingWebhookConfiguration); ok {
		kind = "MutatingWebhookConfiguration"
	}
	if err := b.Client.Get(ctx, types.NamespacedName{Name: name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			log.FromContext(ctx).Info("webhook configuration not found; its caBundle is set when it appears", "kind", kind, "name", name)
			return nil
		}
		return fmt.Errorf("read %s %s: %w", kind, name, err)
	}
	var current [][]byte
	switch c := obj.(type) {
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		for _, w := range c.Webhooks {
			current = append(current, w.ClientConfig.CABundle)
		}
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		for _, w := range c.Webhooks {
			current = append(current, w.ClientConfig.CABundle)
		}
	}
	patch, err := CABundlePatch(obj.GetResourceVersion(), current, ca)
	if err != nil || patch == nil {
		return err
	}
	if err := b.Client.Patch(ctx, obj, client.RawPatch(types.JSONPatchType, patch), client.FieldOwner(v1alpha1.FieldManager)); err != nil {
		return fmt.Errorf("set caBundle of %s %s: %w", kind, name, err)
	}
	log.FromContext(ctx).Info("set caBundle", "kind", kind, "name", name)
	return nil
}
