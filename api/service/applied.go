package service

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/digest"
)

// Desired is the Service the operator applies for Listener l of class,
// whose Service carries carried now: the one rule (Service), then the DNS
// name host the class gives the Listener as its external-dns hostname
// annotation ("" sets none), then the hash of all of it (StampHash). The error means the class itself is broken.
func Desired(l *v1alpha1.Listener, class *v1alpha1.ListenerClass, host string, carried Carried) (*unstructured.Unstructured, Result, error) {
	res, err := Service(l, class, carried)
	if err != nil {
		return nil, Result{}, err
	}
	u := res.Service
	AddHostnameAnnotation(u, host)
	if err := StampHash(u); err != nil {
		return nil, Result{}, err
	}
	return u, res, nil
}

// AddHostnameAnnotation sets the external-dns hostname annotation to host
// on a Listener's desired Service: the name its class gives it
// (spec.hostname), unless that is too long for DNS or another Listener
// publishes it (the reconciler decides that and passes ""); "" sets none.
// It runs after every override: the class decides the name, a Listener's
// objectOverrides cannot move it elsewhere. The same name is published
// first among the Listener's addresses (addresses.WithHostname).
func AddHostnameAnnotation(svc *unstructured.Unstructured, host string) {
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

// StampHash sets the Service hash annotation (v1alpha1.AnnotationServiceHash)
// of svc to the digest of the rest of it (digest.JSON), replacing the one it
// has, so that the reconciler can tell an existing Service that is already
// what it would apply without comparing field by field.
func StampHash(svc *unstructured.Unstructured) error {
	if ann := svc.GetAnnotations(); ann != nil {
		if _, ok := ann[v1alpha1.AnnotationServiceHash]; ok {
			delete(ann, v1alpha1.AnnotationServiceHash)
			svc.SetAnnotations(ann)
		}
	}
	sum, err := digest.JSON(svc.Object)
	if err != nil {
		return fmt.Errorf("hash service %s/%s: %w", svc.GetNamespace(), svc.GetName(), err)
	}
	ann := svc.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[v1alpha1.AnnotationServiceHash] = sum
	svc.SetAnnotations(ann)
	return nil
}
