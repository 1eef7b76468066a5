package csi

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// staleMountSweepInterval is how often the node plugin looks for sealed
// volumes whose pod is gone.
const staleMountSweepInterval = 2 * time.Minute

// staleMounts picks, from the sealed volumes in the mount table, those to
// unmount now: their pod is not among the node's pods (live) in this
// sweep nor in the previous one (suspects, the returned next), so that a
// pod scheduled a moment ago (kubelet may publish before the plugin's
// cache has seen it) is never taken for gone.
func staleMounts(mounts []sealedMount, live, suspects sets.Set[string]) (stale []sealedMount, next sets.Set[string]) {
	next = sets.New[string]()
	for _, m := range mounts {
		if live.Has(m.PodUID) {
			continue
		}
		if suspects.Has(m.PodUID) {
			stale = append(stale, m)
			continue
		}
		next.Insert(m.PodUID)
	}
	return stale, next
}

// RunStaleMountSweeper unmounts sealed volumes left behind, until ctx
// ends: kubelet unpublishes every volume of a pod that goes, retrying
// while the plugin is down, but a pod directory it gave up on (a node
// plugin uninstalled and installed again, a pod directory removed by
// hand) would otherwise keep its tmpfs mounted, and its memory, until the
// node reboots. A mount is stale once its pod is not on this node in two
// sweeps in a row. It looks only under the kubelet pods directories that
// publish targets were in, and does nothing for a server without sealed
// volumes.
func (s *Server) RunStaleMountSweeper(ctx context.Context) error {
	if s.node == nil || !s.node.seal {
		return nil
	}
	log := s.opts.Log.WithName("stale-mounts")
	suspects := sets.New[string]()
	t := time.NewTicker(staleMountSweepInterval)
	defer t.Stop()
	for {
		next := sets.New[string]()
		for _, dir := range s.node.podsDirs.list() {
			found, err := s.node.sweepStaleMounts(ctx, log, dir, suspects)
			if err != nil {
				log.Error(err, "look for stale sealed volumes", "podsDir", dir)
			}
			next = next.Union(found)
		}
		suspects = next
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// sweepStaleMounts is one sweep of the sealed volumes under the directory
// under: read the mount table and this node's pods, unmount and remove
// what staleMounts picks.
func (s *nodeServer) sweepStaleMounts(ctx context.Context, log logr.Logger, under string, suspects sets.Set[string]) (sets.Set[string], error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return suspects, fmt.Errorf("open the mount table: %w", err)
	}
	mounts, err := sealedMounts(f, under)
	f.Close()
	if err != nil || len(mounts) == 0 {
		return sets.New[string](), err
	}
	pods := &corev1.PodList{}
	if err := s.reader.List(ctx, pods); err != nil {
		return suspects, fmt.Errorf("list the pods of node %s: %w", s.nodeName, err)
	}
	live := sets.New[string]()
	for i := range pods.Items {
		if pods.Items[i].Spec.NodeName == s.nodeName {
			live.Insert(string(pods.Items[i].UID))
		}
	}
	stale, next := staleMounts(mounts, live, suspects)
	var errs []error
	for _, m := range stale {
		unlock := s.lock(m.Target)
		err := removeTarget(m.Target)
		unlock()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		log.Info("unmounted a sealed volume whose pod is gone", "targetPath", m.Target, "podUID", m.PodUID)
	}
	return next, errors.Join(errs...)
}

// maxPodsDirs bounds the pods directories remembered: a node has one
// kubelet, so more than one only comes from tests or a moved kubelet root.
const maxPodsDirs = 4

// podsDirs is the set of kubelet pods directories seen, safe for
// concurrent use.
type podsDirs struct {
	mu   sync.Mutex
	dirs []string
}

func (p *podsDirs) add(dir string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if slices.Contains(p.dirs, dir) || len(p.dirs) >= maxPodsDirs {
		return
	}
	p.dirs = append(p.dirs, dir)
}

func (p *podsDirs) list() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.dirs)
}
