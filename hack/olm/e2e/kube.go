package main

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// kube runs kubectl against the local cluster: the checks read what a user
// reads with it.
type kube struct{ kubectl, kubeconfig string }

func (k kube) cmd(args ...string) *exec.Cmd {
	return exec.Command(k.kubectl, append([]string{"--kubeconfig", k.kubeconfig}, args...)...)
}

// out runs kubectl and returns its standard output.
func (k kube) out(args ...string) (string, error) {
	var stdout bytes.Buffer
	cmd := k.cmd(args...)
	cmd.Stdout = &stdout
	err := run(cmd)
	return strings.TrimSpace(stdout.String()), err
}

// apply applies manifests server-side (OLM's chart and the CRDs are too
// large for the last-applied annotation).
func (k kube) apply(manifests string) error {
	cmd := k.cmd("apply", "--server-side", "--force-conflicts", "-f", "-")
	cmd.Stdin = strings.NewReader(manifests)
	return run(cmd)
}

// field is one jsonpath of one object, "" while it does not exist.
func (k kube) field(ns, obj, jsonpath string) string {
	args := []string{"get", obj, "--ignore-not-found", "-o", "jsonpath=" + jsonpath}
	if ns != "" {
		args = append([]string{"-n", ns}, args...)
	}
	v, _ := k.out(args...)
	return v
}

// gone says whether none of objs (kind/name) exists any more.
func (k kube) gone(ns string, objs ...string) (bool, string) {
	args := []string{"get", "--ignore-not-found", "-o", "name"}
	if ns != "" {
		args = append([]string{"-n", ns}, args...)
	}
	left, err := k.out(append(args, objs...)...)
	if err != nil {
		return false, err.Error()
	}
	return left == "", "still there: " + strings.ReplaceAll(left, "\n", ", ")
}

// wait polls cond every 2 s until it holds or timeout passes; the error
// carries cond's last word on what it saw, and dump shows the state.
func (k kube) wait(what string, timeout time.Duration, cond func() (bool, string)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, last := cond()
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not after %s (last: %s)", what, timeout, last)
		}
		time.Sleep(2 * time.Second)
	}
}

// equals is a condition: a field has the wanted value.
func (k kube) equals(ns, obj, jsonpath, want string) func() (bool, string) {
	return func() (bool, string) {
		v := k.field(ns, obj, jsonpath)
		return v == want, fmt.Sprintf("%s %s = %q", obj, jsonpath, v)
	}
}

// dump prints what explains a failure: OLM's objects, the pods and the
// recent events of the namespaces involved.
func (k kube) dump(namespaces ...string) string {
	var b strings.Builder
	for _, ns := range namespaces {
		for _, args := range [][]string{
			{"get", "catalogsources,subscriptions,installplans,csv,deployments,daemonsets,jobs,pods", "-o", "wide"},
			{"get", "events", "--sort-by=.lastTimestamp"},
		} {
			out, err := k.out(append([]string{"-n", ns}, args...)...)
			fmt.Fprintf(&b, "--- %s: kubectl %s\n%s%v\n", ns, strings.Join(args, " "), out, errOrEmpty(err))
		}
	}
	return b.String()
}

func errOrEmpty(err error) string {
	if err == nil {
		return ""
	}
	return "\n" + err.Error()
}
