package names

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
)

func TestServiceName(t *testing.T) {
	long := strings.Repeat("a", 70)
	tests := []struct {
		listener string
		want     string // empty: only check validity and stability
	}{
		{listener: "kafka-broker-0", want: "kafka-broker-0"},
		{listener: "a", want: "a"},
		{listener: "my.listener"},
		{listener: "0day"},
		{listener: long},
		{listener: long + "b"},
		{listener: strings.Repeat("x.", 120) + "y"},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		t.Run(tt.listener, func(t *testing.T) {
			got := ServiceName(tt.listener)
			if tt.want != "" && got != tt.want {
				t.Errorf("ServiceName(%q) = %q, want %q", tt.listener, got, tt.want)
			}
			if errs := validation.IsDNS1035Label(got); len(errs) > 0 {
				t.Errorf("ServiceName(%q) = %q is not a valid Service name: %v", tt.listener, got, errs)
			}
			if again := ServiceName(tt.listener); again != got {
				t.Errorf("ServiceName(%q) not stable: %q then %q", tt.listener, got, again)
			}
			if other, ok := seen[got]; ok {
				t.Errorf("ServiceName(%q) = ServiceName(%q) = %q", tt.listener, other, got)
			}
			seen[got] = tt.listener
		})
	}
}

func TestPodSelectorLabel(t *testing.T) {
	tests := []struct {
		listener string
		want     string // empty: only check validity
	}{
		{listener: "kafka-broker-0", want: "listener.stackable.tech/mnt.kafka-broker-0"},
		{listener: "my.listener", want: "listener.stackable.tech/mnt.my.listener"},
		{listener: strings.Repeat("a", 59), want: "listener.stackable.tech/mnt." + strings.Repeat("a", 59)},
		{listener: strings.Repeat("a", 60)},
		{listener: strings.Repeat("x.", 120) + "y"},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		key := PodSelectorLabel(tt.listener)
		if tt.want != "" && key != tt.want {
			t.Errorf("PodSelectorLabel(%q) = %q, want %q", tt.listener, key, tt.want)
		}
		if errs := validation.IsQualifiedName(key); len(errs) > 0 {
			t.Errorf("PodSelectorLabel(%q) = %q is not a valid label key: %v", tt.listener, key, errs)
		}
		if other, ok := seen[key]; ok {
			t.Errorf("PodSelectorLabel(%q) = PodSelectorLabel(%q) = %q", tt.listener, other, key)
		}
		seen[key] = tt.listener
	}
}

func TestPodListenersName(t *testing.T) {
	if got, want := PodListenersName(types.UID("0b5c1a9e")), "pod-0b5c1a9e"; got != want {
		t.Errorf("PodListenersName = %q, want %q", got, want)
	}
}

func FuzzServiceName(f *testing.F) {
	for _, s := range []string{"a", "kafka", "my.listener", "0", strings.Repeat("z", 300)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if got := ServiceName(name); len(validation.IsDNS1035Label(got)) > 0 {
			t.Fatalf("ServiceName(%q) = %q: %v", name, got, validation.IsDNS1035Label(got))
		}
		if got := PodSelectorLabel(name); len(validation.IsQualifiedName(got)) > 0 {
			t.Fatalf("PodSelectorLabel(%q) = %q: %v", name, got, validation.IsQualifiedName(got))
		}
	})
}
