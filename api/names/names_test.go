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

func TestPodSelectorLabelIsValidKey(t *testing.T) {
	key := PodSelectorLabel(types.UID("0b5c1a9e-8f6e-4c55-a0a4-7d5b2d9d9c11"))
	if errs := validation.IsQualifiedName(key); len(errs) > 0 {
		t.Fatalf("PodSelectorLabel = %q is not a valid label key: %v", key, errs)
	}
	if want := "listener.stackable.tech/mnt.0b5c1a9e-8f6e-4c55-a0a4-7d5b2d9d9c11"; key != want {
		t.Fatalf("PodSelectorLabel = %q, want %q", key, want)
	}
}

func FuzzServiceName(f *testing.F) {
	for _, s := range []string{"a", "kafka", "my.listener", "0", strings.Repeat("z", 300)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		got := ServiceName(name)
		if errs := validation.IsDNS1035Label(got); len(errs) > 0 {
			t.Fatalf("ServiceName(%q) = %q: %v", name, got, errs)
		}
	})
}
