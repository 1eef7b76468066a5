package validation

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// ClassUse counts the objects of one namespace that refer to a
// ListenerClass.
type ClassUse struct {
	Listeners, Claims int
}

// ClassUsers is what refers to a ListenerClass, counted per namespace.
// A deletion denial gives counts, never names, not even of namespaces: the
// review's userInfo is whatever its sender wrote (anyone who reaches the
// webhook server can post one), and a ListenerClass is cluster-wide, so no
// namespace of the request bounds what the answer may name.
type ClassUsers map[string]ClassUse

// Add counts one Listener (claim false) or claim (claim true) in namespace.
func (u ClassUsers) Add(namespace string, claim bool) {
	c := u[namespace]
	if claim {
		c.Claims++
	} else {
		c.Listeners++
	}
	u[namespace] = c
}

// ListUsersCommand is the command a cluster admin runs to list what refers
// to ListenerClass class: its Listeners and its listener claims, as
// namespace/name.
func ListUsersCommand(class string) string {
	return fmt.Sprintf(`kubectl get listeners -A -o jsonpath='{range .items[?(@.spec.className=="%[1]s")]}{.metadata.namespace}/{.metadata.name}{"\n"}{end}'; `+
		`kubectl get persistentvolumeclaims -A -o jsonpath='{range .items[?(@.metadata.annotations.%[2]s=="%[1]s")]}{.metadata.namespace}/{.metadata.name}{"\n"}{end}'`,
		class, strings.ReplaceAll(v1alpha1.AnnotationListenerClass, ".", `\.`))
}

// ListenerClassDeletion refuses deleting the ListenerClass name while users
// refer to it, with how many and in how many namespaces, and the command
// that lists them (for those allowed to).
func ListenerClassDeletion(name string, users ClassUsers) field.ErrorList {
	if len(users) == 0 {
		return nil
	}
	var total ClassUse
	for _, c := range users {
		total.Listeners += c.Listeners
		total.Claims += c.Claims
	}
	var what []string
	if total.Listeners > 0 {
		what = append(what, plural(total.Listeners, "Listener"))
	}
	if total.Claims > 0 {
		what = append(what, plural(total.Claims, "PersistentVolumeClaim"))
	}
	return field.ErrorList{field.Forbidden(field.NewPath("metadata", "name"),
		fmt.Sprintf("ListenerClass %q is still used by %s in %s; delete them or move them to another class first (list them: %s)",
			name, strings.Join(what, " and "), plural(len(users), "namespace"), ListUsersCommand(name)))}
}

func plural(n int, kind string) string {
	if n == 1 {
		return "1 " + kind
	}
	return fmt.Sprintf("%d %ss", n, kind)
}
