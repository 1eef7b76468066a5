package validation

import (
	"fmt"
	"strings"
	"testing"
)

// TestListenerClassDeletion: a denial counts users and the namespaces they
// are in, and names neither (the review's sender may be anyone, and a
// ListenerClass is cluster-wide: no namespace of the request bounds what
// the answer may name); it says how to list them.
func TestListenerClassDeletion(t *testing.T) {
	cmd := ListUsersCommand("lb")
	many := ClassUsers{}
	for i := range 13 {
		many.Add(fmt.Sprintf("ns-%02d", i), false)
	}
	many.Add("ns-00", true)
	for _, tc := range []struct {
		name  string
		users ClassUsers
		want  string
	}{
		{"unused", nil, ""},
		{"one namespace", ClassUsers{"team-a": {Listeners: 1, Claims: 2}},
			`metadata.name: Forbidden: ListenerClass "lb" is still used by 1 Listener and 2 PersistentVolumeClaims in 1 namespace; delete them or move them to another class first (list them: ` + cmd + `)`},
		{"two namespaces", ClassUsers{"team-b": {Claims: 1}, "team-a": {Listeners: 3}},
			`ListenerClass "lb" is still used by 3 Listeners and 1 PersistentVolumeClaim in 2 namespaces; delete`},
		{"claims only", ClassUsers{"team-a": {Claims: 1}}, `is still used by 1 PersistentVolumeClaim in 1 namespace; delete`},
		{"many namespaces", many, `is still used by 13 Listeners and 1 PersistentVolumeClaim in 13 namespaces; delete them`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := messages(ListenerClassDeletion("lb", tc.users))
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			answer, _, _ := strings.Cut(got, "(list them: ")
			for ns := range tc.users {
				if strings.Contains(answer, ns) {
					t.Errorf("the denial names namespace %s: %s", ns, got)
				}
			}
		})
	}
	if !strings.Contains(cmd, `@.spec.className=="lb"`) || !strings.Contains(cmd, `@.metadata.annotations.listeners\.stackable\.tech/listener-class=="lb"`) {
		t.Errorf("command %s", cmd)
	}
}
