package csi

import (
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// BenchmarkNodePublishVolume measures what kubelet waits for when a pod
// starts: one NodePublishVolume over the driver's Unix socket, with warm
// caches (the driver reads Pod, Listener, ListenerClass and Node from its
// informers) and the atomic write of the tree. It reports the median and
// 99th percentile latency per call next to the mean.
func BenchmarkNodePublishVolume(b *testing.B) {
	f := newFixture(b)
	d := f.startDriver(Options{NodeName: f.node})
	ports := map[string]int32{"kafka": 9092, "metrics": 9606, "jmx": 9999}
	f.listener("cluster", f.clusterIP, v1alpha1.ListenerStatus{IngressAddresses: []v1alpha1.ListenerIngress{
		{Address: "cluster." + f.ns + ".svc.cluster.local", AddressType: v1alpha1.AddressTypeHostname, Ports: ports},
	}})
	f.listener("nodeport", f.nodePort, v1alpha1.ListenerStatus{NodePorts: map[string]int32{"kafka": 30092, "metrics": 30606, "jmx": 30999}})
	for _, name := range []string{"cluster", "nodeport"} {
		// first: a pod starts (a fresh target, the tree written from
		// scratch). again: kubelet republishes an unchanged volume.
		for _, mode := range []string{"first", "again"} {
			b.Run(name+"/"+mode, func(b *testing.B) {
				dir := b.TempDir()
				req := &csi.NodePublishVolumeRequest{
					VolumeId:         "pvc-" + name,
					TargetPath:       filepath.Join(dir, "mount"),
					VolumeCapability: mountCap(),
					VolumeContext:    f.volumeContext(name, name),
				}
				ctx := context.Background()
				if _, err := d.node.NodePublishVolume(ctx, req); err != nil {
					b.Fatal(err)
				}
				var took []time.Duration
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					if mode == "first" {
						req.TargetPath = filepath.Join(dir, strconv.Itoa(i))
					}
					start := time.Now()
					if _, err := d.node.NodePublishVolume(ctx, req); err != nil {
						b.Fatal(err)
					}
					took = append(took, time.Since(start))
				}
				slices.Sort(took)
				b.ReportMetric(float64(percentile(took, 50).Microseconds()), "p50-µs")
				b.ReportMetric(float64(percentile(took, 99).Microseconds()), "p99-µs")
			})
		}
	}
}

func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[(len(sorted)-1)*p/100]
}
