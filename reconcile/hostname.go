package reconcile

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/listener-operator/listener-operator/api/addresses"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// withAddressFeatures adds to the status the Listener reconciler computed
// what the class's address features publish: the DNS name first among the
// addresses (spec.hostname) and the certificate's Secret (spec.certificate,
// certificate.go).
func withAddressFeatures(st v1alpha1.ListenerStatus, l *v1alpha1.Listener, class *v1alpha1.ListenerClass) v1alpha1.ListenerStatus {
	st.IngressAddresses = addresses.WithHostname(addresses.Hostname(&class.Spec, l.Name, l.Namespace), st.IngressAddresses)
	st.CertificateSecretName = certificateSecretName(l, class)
	return st
}

// addHostnameAnnotation sets the external-dns hostname annotation on a
// Listener's desired Service when its class publishes a hostname
// (spec.hostname), after every override: the class decides the name, a
// Listener's objectOverrides cannot move it elsewhere. The same name is
// published first among the Listener's addresses (addresses.WithHostname).
func addHostnameAnnotation(svc *unstructured.Unstructured, l *v1alpha1.Listener, class *v1alpha1.ListenerClass) {
	host := addresses.Hostname(&class.Spec, l.Name, l.Namespace)
	if host == "" {
		return
	}
	ann := svc.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[v1alpha1.AnnotationExternalDNSHostname] = host
	svc.SetAnnotations(ann)
}
