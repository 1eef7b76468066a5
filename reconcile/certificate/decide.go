package certificate

import (
	"fmt"
	"time"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// certWrite is the write a reconcile makes to a Listener's Certificate.
type certWrite int

const (
	writeNone certWrite = iota
	writeCreate
	writeUpdate
	writeDelete
)

// outcome is what one reconcile of a Listener decided (decide): the write
// to its Certificate, the CertificateManaged condition to publish, the
// Warning to record when that condition starts saying something new, and
// when to look again without an event.
type outcome struct {
	write certWrite
	// cert is what write creates, updates (the existing one, changed) or
	// deletes; nil with writeNone.
	cert *cmv1.Certificate
	// cond is the CertificateManaged condition; nil removes it.
	cond *metav1.Condition
	// warning is the reason of a Warning event with cond's message ("":
	// none); conflicting is the Certificate it is about.
	warning     string
	conflicting *cmv1.Certificate
	// requeueAfter is when to look again on its own (0: on events only).
	requeueAfter time.Duration
}

// related is the object the warning is about, if any.
func (o outcome) related() client.Object {
	if o.conflicting == nil {
		return nil
	}
	return o.conflicting
}

// decide is what the certificate controller does for Listener l of class:
// missing says cert-manager is not installed, existing is the Certificate
// of the name the operator uses (nil: none). A class without
// spec.certificate removes the condition (and the operator's Certificate);
// otherwise the Certificate names the Listener's addresses
// (desiredCertificate), unless cert-manager is missing or another owner's
// Certificate holds the name, which the condition says.
func decide(l *v1alpha1.Listener, class *v1alpha1.ListenerClass, clusterDomain string, missing bool, existing *cmv1.Certificate) outcome {
	wanted := class.Spec.Certificate != nil
	switch {
	case missing && !wanted, existing != nil && !metav1.IsControlledBy(existing, l) && !wanted:
		return outcome{}
	case missing:
		cond := &metav1.Condition{Type: v1alpha1.ConditionCertificateManaged, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonCertManagerMissing,
			Message: fmt.Sprintf("ListenerClass %s asks for a certificate (spec.certificate), but cert-manager is not installed: the API server does not serve certificates.cert-manager.io/v1; "+
				"install cert-manager (the operator looks again every %s, no restart needed) or remove spec.certificate from the class", class.Name, certManagerRecheck)}
		return warnOnChange(l, outcome{cond: cond, requeueAfter: certManagerRecheck}, EventCertificateUnavailable)
	case existing != nil && !metav1.IsControlledBy(existing, l):
		cond := &metav1.Condition{Type: v1alpha1.ConditionCertificateManaged, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonCertificateConflict,
			Message: fmt.Sprintf("Certificate %s exists and is not controlled by this Listener; the operator does not take it over: delete or rename it so that the operator can make the Listener's own", existing.Name)}
		// Its deletion is not watched: look again now and then.
		return warnOnChange(l, outcome{cond: cond, conflicting: existing, requeueAfter: certificateRecheck}, EventCertificateConflict)
	case !wanted && existing != nil:
		return outcome{write: writeDelete, cert: existing}
	case !wanted:
		return outcome{}
	}
	want := desiredCertificate(l, class, clusterDomain)
	managed := &metav1.Condition{Type: v1alpha1.ConditionCertificateManaged, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonCertificateManaged,
		Message: fmt.Sprintf("Certificate %s names the Listener's addresses; its issuer (%s %s) writes Secret %s (status.certificateSecretName)", want.Name, want.Spec.IssuerRef.Kind, want.Spec.IssuerRef.Name, want.Spec.SecretName)}
	o := outcome{cond: managed, requeueAfter: certificateRecheck}
	switch {
	case existing == nil:
		o.write, o.cert = writeCreate, want
	case !certificateUpToDate(existing, want):
		updated := existing.DeepCopy()
		updated.Spec.SecretName = want.Spec.SecretName
		updated.Spec.IssuerRef = want.Spec.IssuerRef
		updated.Spec.DNSNames = want.Spec.DNSNames
		updated.Spec.IPAddresses = want.Spec.IPAddresses
		o.write, o.cert = writeUpdate, updated
	}
	return o
}

// warnOnChange is o with a Warning of reason when its condition differs
// from the Listener's (changed): the user hears of it once, not on every
// look.
func warnOnChange(l *v1alpha1.Listener, o outcome, reason string) outcome {
	if changed(l, o.cond) {
		o.warning = reason
	}
	return o
}
