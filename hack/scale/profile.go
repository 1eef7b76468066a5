package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// pprofPort is where the controller serves Go's profiles when the harness
// turns them on (--pprof-bind-address; off as shipped).
const pprofPort = 6060

// enableProfiles adds --pprof-bind-address to the controller's Deployment
// and waits for the rollout. It is the one change the harness makes to the
// shipped manifests, and only when asked (-profiles, -live-heap): serving
// profiles costs nothing until one is taken. Without heapSamples the
// endpoint does not sample the heap (--pprof-heap-samples=false): it only
// forces collections, and the replicas' memory is as shipped (the sampling
// table costs each 1.5 MB). A rate above zero samples the heap once per
// that many bytes allocated (GODEBUG=memprofilerate, which the controller
// keeps), in place of Go's 512 KiB.
func enableProfiles(ctx context.Context, c client.Client, heapSamples bool, rate int) error {
	var deps appsv1.DeploymentList
	if err := c.List(ctx, &deps, client.InNamespace(operatorNamespace), client.MatchingLabels{"app.kubernetes.io/component": "controller"}); err != nil {
		return err
	}
	if len(deps.Items) != 1 {
		return fmt.Errorf("want one controller Deployment in %s, found %d", operatorNamespace, len(deps.Items))
	}
	d := &deps.Items[0]
	want := []string{fmt.Sprintf("--pprof-bind-address=:%d", pprofPort), fmt.Sprintf("--pprof-heap-samples=%t", heapSamples)}
	args := d.Spec.Template.Spec.Containers[0].Args
	changed := false
	for _, arg := range want {
		if !slices.Contains(args, arg) {
			args, changed = append(args, arg), true
		}
	}
	if heapSamples && rate > 0 {
		env := d.Spec.Template.Spec.Containers[0].Env
		changed = setGODEBUG(env, fmt.Sprintf("memprofilerate=%d", rate)) || changed
	}
	if changed {
		d.Spec.Template.Spec.Containers[0].Args = args
		if err := c.Update(ctx, d); err != nil {
			return fmt.Errorf("turn on the controller's profiles: %w", err)
		}
	}
	key := client.ObjectKeyFromObject(d)
	return waitFor(ctx, 5*time.Minute, "controller rollout with profiles", func() (bool, string, error) {
		if err := c.Get(ctx, key, d); err != nil {
			return false, "", err
		}
		s := d.Status
		want := *d.Spec.Replicas
		done := s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == want && s.AvailableReplicas == want && s.Replicas == want
		return done, fmt.Sprintf("%d/%d updated, %d available, %d total", s.UpdatedReplicas, want, s.AvailableReplicas, s.Replicas), nil
	})
}

// setGODEBUG sets setting (name=value) in the GODEBUG variable of env,
// replacing that name's value if GODEBUG has one, and reports whether it
// changed anything. The manifests always set GODEBUG (memprofilerate=0).
func setGODEBUG(env []corev1.EnvVar, setting string) bool {
	name, _, _ := strings.Cut(setting, "=")
	for i := range env {
		if env[i].Name != "GODEBUG" {
			continue
		}
		var kept []string
		for _, s := range strings.Split(env[i].Value, ",") {
			if n, _, _ := strings.Cut(s, "="); s != "" && n != name {
				kept = append(kept, s)
			}
		}
		v := strings.Join(append(kept, setting), ",")
		if v == env[i].Value {
			return false
		}
		env[i].Value = v
		return true
	}
	return false
}

// saveHeapProfiles writes each controller replica's heap profile to dir,
// named after the measurement and the replica's role.
func saveHeapProfiles(ctx context.Context, comps []component, dir, label string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, comp := range comps {
		if !strings.HasPrefix(comp.name, "controller") {
			continue
		}
		name := strings.NewReplacer(" ", "-", ",", "", "(", "", ")", "").Replace(label + " " + comp.name)
		if err := fetchTo(ctx, fmt.Sprintf("http://%s:%d/debug/pprof/heap", comp.ip, pprofPort), filepath.Join(dir, name+".pb.gz")); err != nil {
			return fmt.Errorf("heap profile of %s: %w", comp.name, err)
		}
	}
	return nil
}

// forceCollections makes each controller replica run a full collection
// (a heap profile with gc=1 runs one first) and discards the profile: the
// heap in use read next is what is live.
func forceCollections(ctx context.Context, comps []component) error {
	for _, comp := range comps {
		if !strings.HasPrefix(comp.name, "controller") {
			continue
		}
		if err := fetchTo(ctx, fmt.Sprintf("http://%s:%d/debug/pprof/heap?gc=1", comp.ip, pprofPort), os.DevNull); err != nil {
			return fmt.Errorf("force a collection in %s: %w", comp.name, err)
		}
	}
	return nil
}

func fetchTo(ctx context.Context, url, path string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
