package validation

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// maxNamespacesListed bounds the namespaces named in a deletion denial, so
// that a class used in thousands of namespaces still yields a readable
// message.
const maxNamespacesListed = 10

// ClassUse counts the objects of one namespace that refer to a
// ListenerClass.
type ClassUse struct {
	Listeners, Claims int
}

// ClassUsers is what refers to a ListenerClass, counted per namespace.
// A deletion denial gives counts, never names: the review's userInfo is
// whatever its sender wrote (anyone who reaches the webhook server can post
// one), and a ListenerClass is cluster-wide, so no namespace of the request
// bounds what the answer may name.
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
// refer to it, with counts per namespace and the command that lists them.
func ListenerClassDeletion(name string, users ClassUsers) field.ErrorList {
	if len(users) == 0 {
		return nil
	}
	namespaces := make([]string, 0, len(users))
	for ns := range users {
		namespaces = append(namespaces, ns)
	}
	sort.Strings(namespaces)
	more := ""
	if len(namespaces) > maxNamespacesListed {
		more = fmt.Sprintf(" and %d more namespaces", len(namespaces)-maxNamespacesListed)
		namespaces = namespaces[:maxNamespacesListed]
	}
	parts := make([]string, 0, len(namespaces))
	for _, ns := range namespaces {
		c := users[ns]
		var what []string
		if c.Listeners > 0 {
			what = append(what, plural(c.Listeners, "Listener"))
		}
		if c.Claims > 0 {
			what = append(what, plural(c.Claims, "PersistentVolumeClaim"))
		}
		parts = append(parts, strings.Join(what, " and ")+" in namespace "+ns)
	}
	return field.ErrorList{field.Forbidden(field.NewPath("metadata", "name"),
		fmt.Sprintf("ListenerClass %q is still used by %s%s; delete them or move them to another class first (list them: %s)",
			name, strings.Join(parts, ", "), more, ListUsersCommand(name)))}
}

func plural(n int, kind string) string {
	if n == 1 {
		return "1 " + kind
	}
	return fmt.Sprintf("%d %ss", n, kind)
}
