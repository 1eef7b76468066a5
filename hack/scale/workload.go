package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
	"github.com/listener-operator/listener-operator/internal/ordinary"
)

// namespaces is how many namespaces the pods are spread over.
const namespaces = 10

func namespaceName(i int) string { return fmt.Sprintf("scale-%d", i%namespaces) }

// ordinaryPod is pod i of the cluster (internal/ordinary), on the
// fake nodes.
func ordinaryPod(i int) *corev1.Pod {
	p := ordinary.Pod(i, namespaceName(i))
	kwokPlacement(&p.Spec)
	return p
}

// claimsPerShared is how many claims name each shared Listener.
const claimsPerShared = 5

// classFor alternates the preset ClusterIP and NodePort classes.
func classFor(i int) string {
	if i%2 == 0 {
		return "cluster-internal"
	}
	return "external-unstable"
}

// sharedListener is shared Listener k of a phase.
func sharedListener(phase string, k int) *v1alpha1.Listener {
	return &v1alpha1.Listener{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("shared-%s-%03d", phase, k), Namespace: namespaceName(k)},
		Spec: v1alpha1.ListenerSpec{
			ClassName: ptr.To(classFor(k)),
			Ports:     []v1alpha1.ListenerPort{{Name: "http", Port: 8080, Protocol: corev1.ProtocolTCP}},
		},
	}
}

// listenerPod is listener workload i of a phase: a pod on a fake node with
// a generic ephemeral listener volume. Even i ask for a class (a
// per-claim Listener), odd i name a shared Listener.
func listenerPod(phase string, i int) *corev1.Pod {
	ann := map[string]string{}
	ns := namespaceName(i)
	if i%2 == 0 {
		ann[v1alpha1.AnnotationListenerClass] = classFor(i / 2)
	} else {
		k := (i / 2) / claimsPerShared
		ann[v1alpha1.AnnotationListenerName] = sharedListener(phase, k).Name
		ns = namespaceName(k)
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("listener-%s-%04d", phase, i), Namespace: ns},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "app", Image: "registry.example/kafka:1.0",
				Ports:        []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
				VolumeMounts: []corev1.VolumeMount{{Name: "listener", MountPath: v1alpha1.MountPath}},
			}},
			Volumes: []corev1.Volume{{Name: "listener", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
				VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
					ObjectMeta: metav1.ObjectMeta{Annotations: ann},
					Spec: corev1.PersistentVolumeClaimSpec{
						StorageClassName: ptr.To(v1alpha1.StorageClassName),
						AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
						Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1")}},
					},
				},
			}}}},
		},
	}
	kwokPlacement(&p.Spec)
	return p
}

// createAll creates objects make(i) for i in [from, to) with workers in
// parallel and returns how long each create took.
func createAll(ctx context.Context, c client.Client, from, to, workers int, make func(int) client.Object) ([]time.Duration, error) {
	var (
		mu    sync.Mutex
		took  []time.Duration
		first error
		wg    sync.WaitGroup
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := from + w; i < to; i += workers {
				obj := make(i)
				start := time.Now()
				err := c.Create(ctx, obj)
				d := time.Since(start)
				mu.Lock()
				if err != nil && !apierrors.IsAlreadyExists(err) {
					if first == nil {
						first = fmt.Errorf("create %T %s/%s: %w", obj, obj.GetNamespace(), obj.GetName(), err)
					}
					mu.Unlock()
					return
				}
				took = append(took, d)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return took, first
}

// ensureNamespaces creates the harness's namespaces.
func ensureNamespaces(ctx context.Context, c client.Client) error {
	for i := range namespaces {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespaceName(i)}}
		if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create namespace %s: %w", ns.Name, err)
		}
	}
	return nil
}

// podsNotRunning counts the pods on fake nodes that kwok has not reported
// Running yet (metadata only, filtered by the API server).
func podsNotRunning(ctx context.Context, c client.Client) (int, error) {
	n := 0
	for i := range namespaces {
		var list metav1.PartialObjectMetadataList
		list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
		if err := c.List(ctx, &list, client.InNamespace(namespaceName(i)), client.MatchingFields{"status.phase": "Pending"}); err != nil {
			return 0, err
		}
		n += len(list.Items)
	}
	return n, nil
}
