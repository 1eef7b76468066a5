package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

const operatorNamespace = "listener-operator"

// options are the harness's flags.
type options struct {
	kubeconfig, kwok, stages, out, workDir string
	profiles                               string // directory for heap profiles; "" = none
	liveHeap                               bool   // force a collection before each measurement
	profileRate                            int    // bytes allocated per heap sample with -profiles; 0 = Go's default
	nodes, pods, smallPods, listeners      int
	claims, volumes, services, floor       int // the rest of the realistic mix (mix.go)
	namespaces                             int // ordinary namespaces, the mix's last step
	batch                                  int // listener pods created at a time in a phase; 0 = all at once
	gatewayClaims                          int // per-claim Listeners of a gateway class after the last phase
	settle                                 time.Duration
	wait                                   time.Duration
}

func main() {
	var o options
	flag.StringVar(&o.kubeconfig, "kubeconfig", ".work/cluster/kubeconfig", "Kubeconfig of the cluster (the project's, with the operator deployed).")
	flag.StringVar(&o.kwok, "kwok", "bin/tools/kwok", "The kwok binary.")
	flag.StringVar(&o.stages, "kwok-stages", "", "kwok's kustomize/stage directory (from its module).")
	flag.StringVar(&o.out, "out", "bin/scale.txt", "File the table is also written to.")
	flag.StringVar(&o.workDir, "work-dir", ".work/scale", "Directory for kwok's configuration and log.")
	flag.StringVar(&o.profiles, "profiles", "", "If set, turn on the controller's pprof endpoint and save each replica's heap profile there at every measurement.")
	flag.IntVar(&o.profileRate, "profile-rate", 0, "With -profiles, sample the controllers' heap once per this many bytes allocated (GODEBUG=memprofilerate; 0: Go's default of 512 KiB, too coarse to tell what a few hundred objects hold). Each sample costs memory, so the RSS of such a run is not as shipped.")
	flag.BoolVar(&o.liveHeap, "live-heap", false, "Force a collection in each controller replica just before each measurement (through the pprof endpoint, which this turns on without heap sampling unless -profiles), so that \"heap in use\" is what is live, not what the last cycle left.")
	flag.IntVar(&o.nodes, "nodes", 50, "Fake (kwok) nodes.")
	flag.IntVar(&o.pods, "pods", 10000, "Ordinary pods (no listener volume) at the large measurement.")
	flag.IntVar(&o.smallPods, "small-pods", 2000, "Ordinary pods at the small measurement (for the slope).")
	flag.IntVar(&o.listeners, "listeners", 1000, "Listener claims, half before the ordinary pods and half after; half per-claim, half naming shared Listeners.")
	flag.IntVar(&o.gatewayClaims, "gateway-claims", 0, "Listener pods of a gateway class (a TLSRoute each) created after the last phase; the harness accepts their routes as a Gateway controller would (0: none).")
	flag.IntVar(&o.batch, "batch", 0, "Create each phase's listener pods this many at a time, the next batch once the pods before it run (but a quarter of a batch); 0 creates them all at once.")
	flag.IntVar(&o.claims, "claims", 10000, "Ordinary claims (another storage class, kubectl's last-applied annotation), added after the ordinary pods.")
	flag.IntVar(&o.volumes, "volumes", 5000, "Static PersistentVolumes of another CSI driver, added after the claims.")
	flag.IntVar(&o.services, "services", 5000, "Ordinary Services (each selecting ordinary pods, so each has an EndpointSlice), added after the claims.")
	flag.IntVar(&o.namespaces, "namespaces", 2000, "Ordinary namespaces (labels, other tools' annotations, kubectl's last-applied annotation), added after the Services.")
	flag.IntVar(&o.floor, "floor", -1, "Pods without a listener volume created at once after the last phase, the floor of its time to Ready (default: as many as the last phase's claims).")
	flag.DurationVar(&o.settle, "settle", 60*time.Second, "How long to wait at each size before measuring (steady state; also the window for API requests per second).")
	flag.DurationVar(&o.wait, "wait", 15*time.Minute, "How long to wait for each phase's pods and Listeners (the 10x point needs hours on 2 cores).")
	flag.Parse()
	// The API server's warnings are logged through controller-runtime's
	// logger; the harness does not read them.
	log.SetLogger(logr.Discard())
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(1)
	}
}

func say(format string, args ...any) {
	fmt.Printf(">> [%s] %s\n", time.Now().UTC().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// run takes the harness's steps in order: a base reading, the first half
// of the listener workloads, the ordinary pods at two sizes, the rest of
// the realistic mix, the second half, the floors; then the report.
func run(ctx context.Context, o options) error {
	if o.smallPods > o.pods || o.listeners < 2 || o.nodes < 1 {
		return fmt.Errorf("want 1 <= nodes, small-pods <= pods and listeners >= 2")
	}
	m, stop, err := connect(ctx, o)
	if err != nil {
		return err
	}
	defer stop()
	if err := m.prepare(ctx, o); err != nil {
		return err
	}
	base, err := m.baseRow(ctx)
	if err != nil {
		return err
	}
	half := o.listeners / 2
	small, err := m.listenerPhase(ctx, "small", half)
	if err != nil {
		return err
	}
	rows, err := m.ordinaryPodSteps(ctx, o, half)
	if err != nil {
		return err
	}
	mix, err := m.mixSteps(ctx, o)
	if err != nil {
		return err
	}
	rows = append(rows, mix...)
	large, stages, last, err := m.lastPhase(ctx, o.listeners-half, o.listeners)
	if err != nil {
		return err
	}
	rows = append(rows, last)
	gw, err := m.gatewayStep(ctx, o.gatewayClaims, o.listeners) // gateway.go
	if err != nil {
		return err
	}
	if gw.added > 0 {
		rows = append(rows, gw)
	}
	floor, boundFloor, err := m.floors(ctx, o.floor, o.listeners-half)
	if err != nil {
		return err
	}
	var out strings.Builder
	report(&out, o, base, rows, small, large)
	reportMix(&out, rows, large, stages, floor, boundFloor)
	fmt.Print(out.String())
	return os.WriteFile(o.out, []byte(out.String()), 0o644)
}

// waitFor polls cond every two seconds until it holds or timeout passes.
func waitFor(ctx context.Context, timeout time.Duration, what string, cond func() (bool, string, error)) error {
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		ok, msg, err := cond()
		if err == nil && ok {
			return nil
		}
		if err != nil {
			msg = err.Error()
		}
		if msg != last {
			say("waiting for %s: %s", what, msg)
			last = msg
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not reached within %s: %s", what, timeout, msg)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
