package validation

import (
	"fmt"
	"strings"
	"testing"
)

// TestListenerClassDeletion: a denial counts users per namespace and never
// names them (the review's sender may be anyone), and says how to list
// them.
func TestListenerClassDeletion(t *testing.T) {
	cmd := ListUsersCommand("lb")
	many := ClassUsers{}
	for i := range 13 {
		many.Add(fmt.Sprintf("ns-%02d", i), false)
	}
	for _, tc := range []struct {
		name  string
		users ClassUsers
		want  string
	}{
		{"unused", nil, ""},
		{"one namespace", ClassUsers{"a": {Listeners: 1, Claims: 2}},
			`metadata.name: Forbidden: ListenerClass "lb" is still used by 1 Listener and 2 PersistentVolumeClaims in namespace a; delete them or move them to another class first (list them: ` + cmd + `)`},
		{"namespaces sorted", ClassUsers{"b": {Claims: 1}, "a": {Listeners: 3}},
			`ListenerClass "lb" is still used by 3 Listeners in namespace a, 1 PersistentVolumeClaim in namespace b; delete`},
		{"many namespaces", many,
			`in namespace ns-09 and 3 more namespaces; delete them`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := messages(ListenerClassDeletion("lb", tc.users))
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			if strings.Contains(got, "/") && !strings.Contains(got, "(list them: ") {
				t.Errorf("a denial names an object: %s", got)
			}
		})
	}
	if !strings.Contains(cmd, `@.spec.className=="lb"`) || !strings.Contains(cmd, `@.metadata.annotations.listeners\.stackable\.tech/listener-class=="lb"`) {
		t.Errorf("command %s", cmd)
	}
}
