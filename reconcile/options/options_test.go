package options

import (
	"flag"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestFlags(t *testing.T) {
	t.Setenv("KUBERNETES_CLUSTER_DOMAIN", "corp.example")
	nodeLoss := NodeLoss{Enabled: true, HandoverTimeout: 10 * time.Minute, MaxConcurrentReconciles: 2}
	provision := Provision{Enabled: true, MaxConcurrentReconciles: 4}
	tests := []struct {
		args    []string
		want    Options
		wantErr string
	}{
		{nil, Options{ClusterDomain: "corp.example", CreatePollInterval: time.Second, CreateWaitDuration: 20 * time.Second, Preset: PresetEphemeralNodes, MaxConcurrentReconciles: 8, PodRelabelInterval: 10 * time.Minute, GatewayAPI: true, NodeLoss: nodeLoss, Provision: provision}, ""},
		{[]string{"--cluster-domain=k8s.local", "--k8s-create-poll-interval=2s", "--k8s-create-wait-duration=1m", "--listener-class-preset=stable-nodes", "--pod-relabel-interval=1m", "--gateway-api=false"},
			Options{ClusterDomain: "k8s.local", CreatePollInterval: 2 * time.Second, CreateWaitDuration: time.Minute, Preset: PresetStableNodes, MaxConcurrentReconciles: 8, PodRelabelInterval: time.Minute, NodeLoss: nodeLoss, Provision: provision}, ""},
		{[]string{"--listener-class-preset=none"}, Options{ClusterDomain: "corp.example", CreatePollInterval: time.Second, CreateWaitDuration: 20 * time.Second, Preset: PresetNone, MaxConcurrentReconciles: 8, PodRelabelInterval: 10 * time.Minute, GatewayAPI: true, NodeLoss: nodeLoss, Provision: provision}, ""},
		{[]string{"--listener-class-preset=stable"}, Options{}, `unknown preset "stable"`},
	}
	for _, tt := range tests {
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var o Options
		o.BindFlags(fs)
		err := fs.Parse(tt.args)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%v: error %v, want %q", tt.args, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(o, tt.want) {
			t.Errorf("%v: options %+v (err %v), want %+v", tt.args, o, err, tt.want)
		}
		if err := o.Validate(); err != nil {
			t.Errorf("%v: validate: %v", tt.args, err)
		}
	}
	if err := (Options{ClusterDomain: "", CreatePollInterval: time.Second, Preset: PresetNone}).Validate(); err == nil {
		t.Error("empty cluster domain accepted")
	}
}
