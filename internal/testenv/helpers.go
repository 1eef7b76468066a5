package testenv

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// WaitFor is how long a test waits for the controllers to converge.
const WaitFor = 30 * time.Second

// Converges retries check until it returns nil or WaitFor passes, then
// fails the test with what and the last error.
func Converges(t testing.TB, what string, check func() error) {
	t.Helper()
	Eventually(t, WaitFor, what, check)
}

// Create creates objs in order and fails the test at the first error.
func Create(t testing.TB, ctx context.Context, c client.Client, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
}

// Namespace creates a namespace named prefix followed by random characters
// for one test and returns its name.
func (e *Env) Namespace(t testing.TB, ctx context.Context, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}
	if err := e.Client.Create(ctx, ns); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	return ns.Name
}
