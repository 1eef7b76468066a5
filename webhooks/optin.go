package webhooks

import (
	"context"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/validation"
)

// optInClaimAnnotations picks the annotations of the listener claim that an
// opted-in object gets (a StatefulSet's claim template, a bare pod's
// ephemeral volume) from its own annotations at path: the listener-name or
// listener-class it names, else the default class (claims.OptInAnnotations).
// errs says that there is no class to use (validation.OptIn).
func optInClaimAnnotations(ctx context.Context, l *lookup, namespace string, annotations map[string]string, path *field.Path) (ann map[string]string, errs field.ErrorList, err error) {
	var want []string
	if c, _ := claims.Named(annotations); c != "" {
		want = append(want, c)
	}
	facts := validation.ClaimFacts{Namespace: namespace}
	if facts.Classes, err = l.classNames(ctx, want...); err != nil {
		return nil, nil, err
	}
	if claims.OptInNeedsDefaultClass(annotations) {
		if facts.DefaultClass, err = l.defaultClass(ctx, namespace); err != nil {
			return nil, nil, err
		}
	}
	if errs := validation.OptIn(annotations, facts, path); len(errs) > 0 {
		return nil, errs, nil
	}
	return claims.OptInAnnotations(annotations, facts.DefaultClass), nil, nil
}
