package caches

import (
	"context"
	"os"
	"runtime"
	"runtime/pprof"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/internal/testenv"
)

func TestZZProfile(t *testing.T) {
	if os.Getenv("ZZPROF") == "" {
		t.Skip()
	}
	e := testenv.Require(t, env)
	ctx := context.Background()
	if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: listenerNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	const n = 3000
	for _, k := range listenerKinds {
		if err := ensureObjects(ctx, e.Client, 0, n, k.make, k.create...); err != nil {
			t.Fatal(err)
		}
	}
	runtime.MemProfileRate = 1
	start := func(opts cache.Options, types []client.Object) cache.Cache {
		opts.Scheme = env.Scheme
		c, err := cache.New(env.Config, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, ty := range types {
			if _, err := c.GetInformer(ctx, ty); err != nil {
				t.Fatal(err)
			}
		}
		go func() { _ = c.Start(ctx) }()
		if !c.WaitForCacheSync(ctx) {
			t.Fatal("no sync")
		}
		return c
	}
	w := start(Webhooks(), webhookTypes)
	r := start(Reconcilers(), reconcilerTypes)
	settledHeap()
	f, _ := os.Create("/tmp/zzheap.pprof")
	pprof.Lookup("heap").WriteTo(f, 0)
	f.Close()
	runtime.KeepAlive(w)
	runtime.KeepAlive(r)
}
