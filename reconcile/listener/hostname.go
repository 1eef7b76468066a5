package listener

import (
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listener-operator/listener-operator/api/addresses"
	"github.com/listener-operator/listener-operator/api/names"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/reconcile/conditions"
)

// EventHostnameTooLong: the class's hostname template gives the Listener a
// name too long for DNS, so no hostname is published.
const EventHostnameTooLong = "HostnameTooLong"

// EventHostnameConflict: another Listener publishes the name the class's
// hostname template gives this one, so this one publishes none.
const EventHostnameConflict = v1alpha1.ReasonHostnameConflict

// withAddressFeatures adds to the status the Listener reconciler computed
// what the class's address features publish: the DNS name first among the
// addresses (spec.hostname, unless another Listener publishes it: hc) with
// the HostnamePublished condition, and the certificate's Secret
// (spec.certificate, the certificate controller). A hostname the Listener cannot
// publish also gets it a Warning event when that starts.
func (r *listenerReconciler) withAddressFeatures(st v1alpha1.ListenerStatus, l *v1alpha1.Listener, class *v1alpha1.ListenerClass, hc hostnameClaim) v1alpha1.ListenerStatus {
	st.IngressAddresses = addresses.WithHostname(hc.published(), st.IngressAddresses)
	st.CertificateSecretName = certificateSecretName(l, class)
	cond := hostnameCondition(l, class, hc)
	old := meta.FindStatusCondition(l.Status.Conditions, v1alpha1.ConditionHostnamePublished)
	if cond != nil && cond.Status == metav1.ConditionFalse && (old == nil || old.Status != cond.Status || old.Message != cond.Message) {
		reason := EventHostnameTooLong
		if cond.Reason == v1alpha1.ReasonHostnameConflict {
			reason = EventHostnameConflict
		}
		r.recorder.Eventf(l, nil, corev1.EventTypeWarning, reason, "Reconcile", "%s", cond.Message)
	}
	st.Conditions = withFeatureCondition(ownedStatus(l.Status).Conditions, v1alpha1.ConditionHostnamePublished, cond)
	return st
}

// hostnameCondition is the HostnamePublished condition of Listener l of
// class: nil when the class publishes no hostname, False with what to do
// when the name it renders for l is too long for DNS, or another Listener
// publishes it (hc.taken).
func hostnameCondition(l *v1alpha1.Listener, class *v1alpha1.ListenerClass, hc hostnameClaim) *metav1.Condition {
	if class.Spec.Hostname == nil {
		return nil
	}
	cond := &metav1.Condition{Type: v1alpha1.ConditionHostnamePublished, ObservedGeneration: l.Generation}
	host, err := addresses.RenderHostname(class.Spec.Hostname, l.Name, l.Namespace)
	var tooLong *addresses.HostnameTooLongError
	switch {
	case err == nil && hc.taken:
		cond.Status, cond.Reason = metav1.ConditionFalse, v1alpha1.ReasonHostnameConflict
		cond.Message = v1alpha1.TruncateMessage(conflictMessage(class))
		if hc.route {
			// Not named: the route may be in a namespace this Listener's
			// owner cannot read.
			cond.Message = v1alpha1.TruncateMessage(fmt.Sprintf("ListenerClass %s gives this Listener, by spec.hostname.template %q, a hostname that a route the operator did not make already carries (a Gateway would send its clients to either), so this Listener publishes no address under it and gets no route; fix: rename this Listener, or have that route removed (docs/install.md, \"Gateway classes\": who may create routes)",
				class.Name, class.Spec.Hostname.Template))
		}
	case err == nil:
		cond.Status, cond.Reason = metav1.ConditionTrue, v1alpha1.ReasonHostnamePublished
		cond.Message = fmt.Sprintf("ListenerClass %s publishes the hostname %s for this Listener (first address; Service annotation %s)", class.Name, host, v1alpha1.AnnotationExternalDNSHostname)
	case errors.As(err, &tooLong):
		what := fmt.Sprintf("the hostname %q of %d characters, more than the %d a DNS name may have", tooLong.Host, tooLong.Length, tooLong.Limit)
		if tooLong.Label != "" {
			what = fmt.Sprintf("the hostname %q, whose label %q has %d characters, more than the %d a DNS label may have", tooLong.Host, tooLong.Label, tooLong.Length, tooLong.Limit)
		}
		cond.Status, cond.Reason = metav1.ConditionFalse, v1alpha1.ReasonHostnameTooLong
		cond.Message = v1alpha1.TruncateMessage(fmt.Sprintf("ListenerClass %s (spec.hostname.template %q) gives this Listener %s, so no hostname is published and its Service gets no %s annotation; "+
			"fix: shorten the Listener's name (%d characters) or its namespace's (%d), or change the class's spec.hostname.template",
			class.Name, class.Spec.Hostname.Template, what, v1alpha1.AnnotationExternalDNSHostname, len(l.Name), len(l.Namespace)))
	default:
		// The class's template is checked before (validation.ListenerClass).
		cond.Status, cond.Reason = metav1.ConditionFalse, v1alpha1.ReasonInvalid
		cond.Message = v1alpha1.TruncateMessage(fmt.Sprintf("ListenerClass %s: %v", class.Name, err))
	}
	return cond
}

// conflictMessage says why a Listener of class does not publish the name
// the class gives it, and what to do. It names neither the name (with a
// flattened template it spells the other Listener's namespace) nor the
// other Listener: that may be in a namespace this one's owner cannot read.
func conflictMessage(class *v1alpha1.ListenerClass) string {
	why := "another ListenerClass's template gives another Listener the same name"
	strict := *class.Spec.Hostname
	strict.AllowAmbiguous = nil
	if len(addresses.AmbiguityProblems(&strict)) > 0 {
		why = "the template is not one-to-one and can give two Listeners one name (spec.hostname.allowAmbiguous: true accepts that)"
	}
	return fmt.Sprintf("ListenerClass %s gives this Listener, by spec.hostname.template %q, a hostname that another Listener already publishes: %s; "+
		"this Listener publishes its other addresses only, and its Service gets no %s annotation; "+
		"fix: rename this Listener, or ask an administrator to give the class a template that puts %s and %s in DNS labels of their own; "+
		"the name comes to this Listener once the other no longer publishes it",
		class.Name, class.Spec.Hostname.Template, why, v1alpha1.AnnotationExternalDNSHostname, addresses.PlaceholderListener, addresses.PlaceholderNamespace)
}

// withFeatureCondition returns a copy of conds (the Listener controller's
// own conditions) with the condition of type typ set to cond, or removed
// when cond is nil; never nil, so that the status write takes it
// (withCondition).
func withFeatureCondition(conds []metav1.Condition, typ string, cond *metav1.Condition) []metav1.Condition {
	out := slices.Clone(conds)
	if out == nil {
		out = []metav1.Condition{}
	}
	if cond == nil {
		meta.RemoveStatusCondition(&out, typ)
		return out
	}
	return conditions.Set(out, *cond, time.Now())
}

// certificateSecretName is the Secret a Listener of class publishes in
// status.certificateSecretName ("" when the class asks for no certificate):
// the one the certificate controller's Certificate makes its issuer write.
func certificateSecretName(l *v1alpha1.Listener, class *v1alpha1.ListenerClass) string {
	if class == nil || class.Spec.Certificate == nil {
		return ""
	}
	return names.CertificateName(l.Name)
}
