package caches

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/internal/testenv"
)

// TestAddIndexes: controller-runtime's cache finds objects through the
// indexes AddIndexes registers, in a namespace and across namespaces.
func TestAddIndexes(t *testing.T) {
	e := testenv.Require(t, env)
	ctx := t.Context()
	for _, ns := range []string{"index-a", "index-b"} {
		if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"kafka-0", "kafka-1"} {
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"claim": "listener-" + name, "node": "node-1"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}},
			}
			if err := e.Client.Create(ctx, pod); err != nil {
				t.Fatal(err)
			}
		}
	}
	c, err := cache.New(e.Config, cache.Options{Scheme: e.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	label := func(k string) client.IndexerFunc {
		return func(o client.Object) []string { return []string{o.GetLabels()[k]} }
	}
	if err := AddIndexes(ctx, c,
		Index{Object: &corev1.Pod{}, Field: "test.claim", Values: label("claim")},
		Index{Object: &corev1.Pod{}, Field: "test.node", Values: label("node")},
	); err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("cache did not sync")
	}
	list := func(opts ...client.ListOption) []string {
		t.Helper()
		var pods corev1.PodList
		if err := c.List(ctx, &pods, opts...); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range pods.Items {
			out = append(out, p.Namespace+"/"+p.Name)
		}
		slices.Sort(out)
		return out
	}
	for _, tc := range []struct {
		name string
		opts []client.ListOption
		want []string
	}{
		{"in a namespace", []client.ListOption{client.InNamespace("index-b"), client.MatchingFields{"test.claim": "listener-kafka-1"}}, []string{"index-b/kafka-1"}},
		{"across namespaces", []client.ListOption{client.MatchingFields{"test.node": "node-1"}}, []string{"index-a/kafka-0", "index-a/kafka-1", "index-b/kafka-0", "index-b/kafka-1"}},
		{"one value across namespaces", []client.ListOption{client.MatchingFields{"test.claim": "listener-kafka-1"}}, []string{"index-a/kafka-1", "index-b/kafka-1"}},
		{"in a namespace by a value of several", []client.ListOption{client.InNamespace("index-a"), client.MatchingFields{"test.node": "node-1"}}, []string{"index-a/kafka-0", "index-a/kafka-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testenv.Eventually(t, 10*time.Second, tc.name, func() error {
				if got := list(tc.opts...); !slices.Equal(got, tc.want) {
					return fmt.Errorf("got %v, want %v", got, tc.want)
				}
				return nil
			})
		})
	}
}
