package certificate

import (
	"testing"
	"time"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// TestDecide: what the certificate controller does for each state of the
// class, cert-manager and the Certificate of the Listener's name.
func TestDecide(t *testing.T) {
	l := &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "uid-web", Generation: 2}}
	wants := &v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{Name: "tls"}, Spec: v1alpha1.ListenerClassSpec{
		Certificate: &v1alpha1.ListenerCertificate{IssuerRef: v1alpha1.ListenerCertificateIssuer{Name: "ca"}}}}
	plain := &v1alpha1.ListenerClass{ObjectMeta: metav1.ObjectMeta{Name: "plain"}}
	own := desiredCertificate(l, wants, "example.test")
	stale := own.DeepCopy()
	stale.Spec.DNSNames = []string{"old.example.test"}
	foreign := own.DeepCopy()
	foreign.OwnerReferences = nil
	withCond := func(reason string, msgOf outcome) *v1alpha1.Listener {
		out := l.DeepCopy()
		out.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionCertificateManaged, Status: msgOf.cond.Status, Reason: reason, Message: msgOf.cond.Message, ObservedGeneration: l.Generation}}
		return out
	}
	for _, tc := range []struct {
		name      string
		listener  *v1alpha1.Listener
		class     *v1alpha1.ListenerClass
		missing   bool
		existing  *cmv1.Certificate
		write     certWrite
		reason    string // of the condition; "" none
		warning   string
		requeue   time.Duration
		sameAsOwn bool // the write carries desiredCertificate's spec
	}{
		{name: "no certificate asked, cert-manager missing", class: plain, missing: true},
		{name: "no certificate asked, none there", class: plain},
		{name: "no certificate asked, another's there", class: plain, existing: foreign},
		{name: "no certificate asked, ours there: deleted", class: plain, existing: own, write: writeDelete},
		{name: "cert-manager missing", class: wants, missing: true, reason: v1alpha1.ReasonCertManagerMissing, warning: EventCertificateUnavailable, requeue: certManagerRecheck},
		{name: "another's holds the name", class: wants, existing: foreign, reason: v1alpha1.ReasonCertificateConflict, warning: EventCertificateConflict, requeue: certificateRecheck},
		{name: "none yet: created", class: wants, write: writeCreate, reason: v1alpha1.ReasonCertificateManaged, requeue: certificateRecheck, sameAsOwn: true},
		{name: "up to date", class: wants, existing: own, reason: v1alpha1.ReasonCertificateManaged, requeue: certificateRecheck},
		{name: "stale: updated", class: wants, existing: stale, write: writeUpdate, reason: v1alpha1.ReasonCertificateManaged, requeue: certificateRecheck, sameAsOwn: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := ptr.Deref(tc.listener, *l)
			o := decide(&in, tc.class, "example.test", tc.missing, tc.existing)
			if o.write != tc.write || o.warning != tc.warning || o.requeueAfter != tc.requeue {
				t.Errorf("write %d, warning %q, requeue %s; want %d, %q, %s", o.write, o.warning, o.requeueAfter, tc.write, tc.warning, tc.requeue)
			}
			var reason string // none: the condition is removed
			if o.cond != nil {
				reason = o.cond.Reason
			}
			if reason != tc.reason {
				t.Errorf("condition reason %q, want %q", reason, tc.reason)
			}
			if (o.write == writeNone) != (o.cert == nil) {
				t.Errorf("write %d with certificate %v", o.write, o.cert)
			}
			if tc.sameAsOwn && !certificateUpToDate(o.cert, own) {
				t.Errorf("writes %+v, want the spec of %+v", o.cert.Spec, own.Spec)
			}
			if tc.warning != "" {
				// Said once: a Listener whose condition already says it
				// gets no second Warning.
				if again := decide(withCond(tc.reason, o), tc.class, "example.test", tc.missing, tc.existing); again.warning != "" {
					t.Errorf("warned again (%s) although the condition already says it", again.warning)
				}
			}
		})
	}
}
