package pod

import (
	"context"
	"fmt"
	"time"

	"github.com/listener-operator/listener-operator/reconcile/internal/foreign"
	"github.com/listener-operator/listener-operator/reconcile/internal/labelpatch"
	"github.com/listener-operator/listener-operator/reconcile/internal/metrics"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listener-operator/listener-operator/api/claims"
	"github.com/listener-operator/listener-operator/api/podstate"
	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// controllerRelabel names the pod relabel scan in metrics and logs.
const controllerRelabel = "pod-relabel"

// relabelPageSize is how many pods one page of the scan holds: the scan
// reads whole pods, and a page is the most it keeps at once.
const relabelPageSize = 250

// podRelabeler finds pods that mount listener volumes but lack the
// listener-volume label and labels them. The controller caches only pods
// with that label, which the pod webhook sets; a pod admitted while the
// webhook was unavailable (it fails open) or before this version lacks it,
// and would otherwise never be seen. It runs on the leader: once when
// elected (which follows any outage of the operator), then every interval,
// reading the API server page by page so that the cluster's pods are never
// all in memory.
type podRelabeler struct {
	live   client.Reader // paged lists of the API server
	client client.Client // claims from the cache; label patches
	// synced waits for the cache the client reads to start and sync.
	synced   func(context.Context) bool
	interval time.Duration
}

// NeedLeaderElection makes the scan run on the leader only.
func (*podRelabeler) NeedLeaderElection() bool { return true }

// relabelRetry is how soon a failed scan is tried again.
const relabelRetry = 10 * time.Second

// Start scans once the cache is ready and then every interval (a failed
// scan sooner) until ctx ends.
func (r *podRelabeler) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName(controllerRelabel)
	if !r.synced(ctx) {
		return nil // ctx ended first
	}
	for {
		next := r.interval
		// Claims first: a pod's listener claim marked now is one the pod
		// scan finds in the cache.
		start := time.Now()
		scanned, marked, err := markClaims(ctx, r.live, r.client)
		if err != nil {
			log.Error(err, "scan for unmarked listener claims", "scanned", scanned, "marked", marked)
			next = min(next, relabelRetry)
		} else {
			log.V(1).Info("scanned claims for unmarked listener claims", "scanned", scanned, "marked", marked, "took", time.Since(start).Round(time.Millisecond))
		}
		start = time.Now()
		scanned, labelled, err := r.scan(ctx)
		if err != nil {
			log.Error(err, "scan for unlabelled pods with listener volumes", "scanned", scanned, "labelled", labelled)
			next = min(next, relabelRetry)
		} else {
			log.V(1).Info("scanned pods for listener volumes", "scanned", scanned, "labelled", labelled, "took", time.Since(start).Round(time.Millisecond))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(next):
		}
	}
}

// scan labels every pod that lacks the listener-volume label and mounts (or
// waits for a claim that may be) a listener volume, or carries another
// operator's listener label (foreign.ListenerPod).
func (r *podRelabeler) scan(ctx context.Context) (scanned, labelled int, err error) {
	defer metrics.ObserveReconcile(controllerRelabel, time.Now())
	sel, err := unmarked()
	if err != nil {
		return 0, 0, err
	}
	opts := &client.ListOptions{LabelSelector: sel, Limit: relabelPageSize}
	// The cache holds only listener claims; the others of the namespace
	// being scanned are listed from the API server.
	claimReader := &namespaceClaims{cache: r.client, live: r.live}
	for {
		var pods corev1.PodList
		if err := r.live.List(ctx, &pods, opts); err != nil {
			return scanned, labelled, fmt.Errorf("list pods: %w", err)
		}
		for i := range pods.Items {
			pod := &pods.Items[i]
			scanned++
			missing, err := labelsFor(ctx, claimReader, pod)
			if err != nil {
				return scanned, labelled, err
			}
			if len(missing) == 0 && foreign.ListenerPod(pod) {
				// Into the cache, for the takeover controller (reconcile/takeover).
				missing = map[string]string{v1alpha1.LabelListenerVolume: "true"}
			}
			if len(missing) == 0 {
				continue
			}
			if err := labelpatch.AddPodLabels(ctx, r.client, controllerRelabel, pod, missing); err != nil {
				return scanned, labelled, err
			}
			labelled++
		}
		if pods.Continue == "" {
			return scanned, labelled, nil
		}
		opts.Continue = pods.Continue
	}
}

// labelsFor is what a pod the webhook did not label needs, reading claims
// from c: nothing when it
// mounts no listener volume (or is finished or going), else the
// listener-volume label and its Listeners' selector labels. A claim that
// does not exist yet may become a listener claim, as the pod webhook also
// assumes; an ephemeral volume says by its template.
func labelsFor(ctx context.Context, c client.Reader, pod *corev1.Pod) (map[string]string, error) {
	if !podstate.Running(pod) {
		return nil, nil
	}
	maybe := false
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.PersistentVolumeClaim != nil:
			maybe = true
		case v.Ephemeral != nil && v.Ephemeral.VolumeClaimTemplate != nil:
			t := v.Ephemeral.VolumeClaimTemplate
			maybe = maybe || claims.Requested(t.Annotations, t.Spec.StorageClassName)
		}
	}
	if !maybe {
		return nil, nil
	}
	_, missing, err := podLabelsLacking(ctx, c, pod)
	return missing, err
}
