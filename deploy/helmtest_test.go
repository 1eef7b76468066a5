package deploy

import (
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestHelmTestPod: `helm test` runs check-listener in a pod with a
// listener volume of tests.listenerClass, in a namespace of its own
// (which the webhooks do not skip), all of it Helm test hooks.
func TestHelmTestPod(t *testing.T) {
	out, err := helmRender(namespace, "--set", "tests.listenerClass=external-unstable", "--set", "tests.timeout=30s", "--set", "fullnameOverride=lo",
		"--set", "image.repository=mirror/lo", "--set", "image.name=lo", "--set", "image.tag=v1") // a renamed image: image.name keeps it a whole path
	if err != nil {
		t.Fatal(err)
	}
	o := parse(t, out)
	ns := o.get(t, "Namespace", "", "lo-test")
	sa := o.get(t, "ServiceAccount", "lo-test", "listener-check")
	pod := o.get(t, "Pod", "lo-test", "listener-check")
	c := slice(t, pod.Object, "spec", "containers")[0].(map[string]any)
	class, _, _ := unstructured.NestedString(slice(t, pod.Object, "spec", "volumes")[0].(map[string]any), "ephemeral", "volumeClaimTemplate", "metadata", "annotations", "listeners.stackable.tech/listener-class")
	weight := func(u *unstructured.Unstructured) string { return u.GetAnnotations()["helm.sh/hook-weight"] }
	checks := []check{
		{"test hook on every object", []string{ns.GetAnnotations()["helm.sh/hook"], sa.GetAnnotations()["helm.sh/hook"], pod.GetAnnotations()["helm.sh/hook"]}, []string{"test", "test", "test"}},
		{"namespace before service account before pod", weight(ns) < weight(sa) && weight(pod) == "", true},
		{"kept when it fails", strings.Contains(pod.GetAnnotations()["helm.sh/hook-delete-policy"], "hook-succeeded"), true},
		{"image", c["image"], "mirror/lo:v1"},
		{"args", args(t, c), []string{"check-listener", "--dir=/stackable/listener", "--serve=check=8080", "--timeout=30s"}},
		{"class", class, "external-unstable"},
		{"named port for the Listener", slice(t, c, "ports")[0].(map[string]any)["name"], "check"},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %#v, want %#v", c.what, c.got, c.want)
		}
	}
	if ns.GetName() == namespace {
		t.Error("the test runs in the release namespace, which every webhook skips")
	}
	out, err = helmRender(namespace, "--set", "tests.enabled=false")
	if err != nil {
		t.Fatal(err)
	}
	for k := range parse(t, out) {
		if strings.Contains(k, "-test") || strings.HasPrefix(k, "Pod/") {
			t.Errorf("tests.enabled=false still renders %s", k)
		}
	}
}
