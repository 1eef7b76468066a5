package names

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

func TestServiceName(t *testing.T) {
	long := strings.Repeat("a", 70)
	tests := []struct {
		listener string
		want     string // empty: only check validity (hashed names are pinned in golden_test.go)
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

// TestPodClaimNames: the claims a pod's volumes use, as the reconcilers
// look pods up by them.
func TestPodClaimNames(t *testing.T) {
	vols := []corev1.Volume{
		{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-web-0"}}},
		{Name: "listener", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}},
		{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}},
	}
	tests := []struct {
		name string
		pod  *corev1.Pod
		want []string
	}{
		{"named claim and ephemeral volume", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0"}, Spec: corev1.PodSpec{Volumes: vols}}, []string{"data-web-0", "web-0-listener"}},
		{"no name yet (generateName at admission): the ephemeral claim is unknown", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "web-"}, Spec: corev1.PodSpec{Volumes: vols}}, []string{"data-web-0"}},
		{"no claims", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{Volumes: vols[2:]}}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := PodClaimNames(tc.pod); !slices.Equal(got, tc.want) {
				t.Fatalf("PodClaimNames = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestSelectsPodByName: the pod needs no label only when it is the pod the
// Listener names and carries the StatefulSet controller's label.
func TestSelectsPodByName(t *testing.T) {
	const podName = "statefulset.kubernetes.io/pod-name"
	for _, tc := range []struct {
		name, listenerPod, pod string
		labels                 map[string]string
		want                   bool
	}{
		{"the replica", "web-0", "web-0", map[string]string{podName: "web-0"}, true},
		{"Listener selects by label", "", "web-0", map[string]string{podName: "web-0"}, false},
		{"another pod", "web-0", "web-1", map[string]string{podName: "web-1"}, false},
		{"a pod the StatefulSet controller did not make", "web-0", "web-0", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := SelectsPodByName(tc.listenerPod, tc.pod, tc.labels); got != tc.want {
				t.Errorf("SelectsPodByName(%q, %q, %v) = %v, want %v", tc.listenerPod, tc.pod, tc.labels, got, tc.want)
			}
		})
	}
}

// TestEphemeralClaimSources: every pod volume whose ephemeral claim has a
// name is among the sources of that name, and every source names it back.
func TestEphemeralClaimSources(t *testing.T) {
	for _, tc := range []struct {
		claim string
		want  []PodVolume
	}{
		{"web-0-listener", []PodVolume{{"web", "0-listener"}, {"web-0", "listener"}}},
		{"a-b", []PodVolume{{"a", "b"}}},
		{"nodash", nil},
		{"-lead", nil},
		{"trail-", nil},
		{"a--b", []PodVolume{{"a", "-b"}, {"a-", "b"}}},
		{"", nil},
	} {
		got := EphemeralClaimSources(tc.claim)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("EphemeralClaimSources(%q) = %v, want %v", tc.claim, got, tc.want)
		}
		for _, src := range got {
			if back := EphemeralClaimName(src.Pod, src.Volume); back != tc.claim {
				t.Errorf("source %v of %q names claim %q", src, tc.claim, back)
			}
		}
	}
}

// TestServiceDNSNames: the names of a Service in the cluster's domain, the
// same for a Listener's certificate, the webhook's serving certificate and
// a ClusterIP Listener's hostname.
func TestServiceDNSNames(t *testing.T) {
	for _, tc := range []struct {
		domain string
		want   []string
	}{
		{"cluster.local", []string{"web", "web.kafka", "web.kafka.svc", "web.kafka.svc.cluster.local"}},
		{"example.test", []string{"web", "web.kafka", "web.kafka.svc", "web.kafka.svc.example.test"}},
	} {
		if got := ServiceDNSNames("web", "kafka", tc.domain); !slices.Equal(got, tc.want) {
			t.Errorf("ServiceDNSNames(web, kafka, %s) = %v, want %v", tc.domain, got, tc.want)
		}
		if got := ServiceFQDN("web", "kafka", tc.domain); got != tc.want[3] {
			t.Errorf("ServiceFQDN(web, kafka, %s) = %q, want %q", tc.domain, got, tc.want[3])
		}
	}
}

// TestPlainLabelName: a name plainLabelName passes is one IsQualifiedName
// passes in a pod selector label, so that PodSelectorLabel skips the
// regular expression only when it would say so.
func TestPlainLabelName(t *testing.T) {
	for _, name := range []string{
		"web", "kafka-broker-0", "a.b", "0", strings.Repeat("a", 59), strings.Repeat("a", 60),
		"", "-", "a-", "a.", "A", "a_b", "a/b", "é", "a b", strings.Repeat("x.", 30) + "y",
	} {
		if plainLabelName("mnt.", name) && len(validation.IsQualifiedName(v1alpha1.PodSelectorLabelPrefix+name)) > 0 {
			t.Errorf("plainLabelName passes %q, which is not a valid label key in %q", name, v1alpha1.PodSelectorLabelPrefix+name)
		}
	}
	for _, name := range []string{"web", "kafka-broker-0", "a.b", strings.Repeat("a", 59)} {
		if !plainLabelName("mnt.", name) {
			t.Errorf("plainLabelName refuses %q: the common names must skip the regular expression", name)
		}
	}
}
