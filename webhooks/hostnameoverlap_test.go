package webhooks

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/listener-operator/listener-operator/internal/testenv"
)

// TestListenerClassTemplatesOverlap: two classes whose templates are each
// one-to-one can still render one name for two Listeners
// ("{listener}.{namespace}.zone" and "{namespace}.{listener}.zone"). The
// class admitted second, or changed to such a template, is admitted with
// a warning that names the other class and two Listeners that would share
// a name (issue 48, shape 3); classes whose templates cannot meet get none.
func TestListenerClassTemplatesOverlap(t *testing.T) {
	e := testenv.Require(t, env)
	apply := func(name, template, note string) (string, error) {
		manifest := fmt.Sprintf(`apiVersion: listeners.stackable.tech/v1alpha1
kind: ListenerClass
metadata: {name: %s}
spec:
  serviceType: ClusterIP
  serviceAnnotations: {note: %q}
  hostname: {template: %q}
`, name, note, template)
		return e.Kubectl(t.Context(), []byte(manifest), "apply", "-f", "-")
	}
	t.Cleanup(func() {
		_, _ = e.Kubectl(context.Background(), nil, "delete", "listenerclass", "overlap-a", "overlap-b", "overlap-c", "--ignore-not-found")
	})
	for _, step := range []struct {
		name, class, template, note string
		want                        []string // in kubectl's output
		notWant                     string
	}{
		{name: "the first class", class: "overlap-a", template: "{listener}.{namespace}.overlap.test", want: []string{"created"}, notWant: "Warning"},
		{name: "a class whose names meet the first's", class: "overlap-b", template: "{namespace}.{listener}.overlap.test", want: []string{"created",
			`Warning: spec.hostname.template: ListenerClass "overlap-a" (template "{listener}.{namespace}.overlap.test") can give another Listener the same name`,
			`both get "`}},
		{name: "kept as it is", class: "overlap-b", template: "{namespace}.{listener}.overlap.test", note: "changed", want: []string{"configured"}, notWant: "Warning"},
		{name: "a class under another zone", class: "overlap-c", template: "{namespace}.{listener}.elsewhere.test", want: []string{"created"}, notWant: "Warning"},
		{name: "changed to meet both", class: "overlap-c", template: "{namespace}-x.{listener}.overlap.test", want: []string{"configured",
			`ListenerClass "overlap-a"`, `ListenerClass "overlap-b"`}},
	} {
		out, err := apply(step.class, step.template, step.note)
		if err != nil {
			t.Fatalf("%s: kubectl apply: %v: %s", step.name, err, out)
		}
		for _, w := range step.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: kubectl output:\n%s\nlacks: %s", step.name, out, w)
			}
		}
		if step.notWant != "" && strings.Contains(out, step.notWant) {
			t.Errorf("%s: kubectl output:\n%s\nhas %q", step.name, out, step.notWant)
		}
	}
}
