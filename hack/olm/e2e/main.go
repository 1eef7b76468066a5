// Command e2e installs the operator through OLM on the local cluster of
// hack/cluster and checks what a user sees (`make olm-e2e`, not in CI;
// docs/install.md, "Through OLM"):
//
//  0. the cluster has no DNS server: this command answers Services' DNS
//     names while it runs (OLM dials catalogs by Service name);
//  1. an in-process registry (go-containerregistry) on loopback, which node
//     1's containerd pulls from, holding the operator's and sidecars'
//     images (the tarballs `cluster.sh images` wrote), OLM's image, an opm
//     image, the bundle image and the catalog image; every manifest names
//     them by digest;
//  2. the bundle: hack/bundle run on the cluster's rendered install with
//     the images by digest; the catalog: opm render of the bundle image;
//  3. OLM v0.38.0 from the chart in its module, rendered with helm;
//  4. a CatalogSource, an AllNamespaces OperatorGroup and a Subscription;
//     the CSV Succeeded, the olm-deployer's objects, the Helm test's
//     listener check, and deleting the CSV removing them.
//
// The cluster must be up (hack/cluster/cluster.sh up); the registry stops
// when this command exits, so the images stay only in containerd.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

type options struct {
	root, kubeconfig, kubectl, tools, busybox, images, rendered, work, version, chart string
	dns, clusterDomain                                                                string
}

func main() {
	var o options
	flag.StringVar(&o.root, "root", "../..", "repository root")
	flag.StringVar(&o.kubeconfig, "kubeconfig", "", "the local cluster's kubeconfig")
	flag.StringVar(&o.kubectl, "kubectl", "kubectl", "kubectl binary")
	flag.StringVar(&o.tools, "tools", "", "directory of helm and `make olm-tools`' binaries (bin/tools)")
	flag.StringVar(&o.busybox, "busybox", "/usr/bin/busybox", "static busybox (Debian busybox-static), for cp in OLM's image")
	flag.StringVar(&o.images, "images", "", "directory of the image tarballs `cluster.sh images` wrote")
	flag.StringVar(&o.rendered, "rendered", "", "the cluster's rendered install (`cluster.sh render`)")
	flag.StringVar(&o.work, "work", "", "directory for the bundle and catalog this run builds")
	flag.StringVar(&o.version, "version", "0.1.0", "bundle version")
	flag.StringVar(&o.chart, "chart", "", "OLM's Helm chart (deploy/chart of its module)")
	flag.StringVar(&o.dns, "dns", "10.88.0.1:53", "where to answer Services' DNS names: the nameserver kubelet gives pods (hack/cluster's CLUSTER_DNS)")
	flag.StringVar(&o.clusterDomain, "cluster-domain", "cluster.local", "the cluster's DNS domain")
	flag.Parse()
	start := time.Now()
	if err := e2e(o); err != nil {
		fmt.Fprintf(os.Stderr, "olm-e2e: FAIL after %s: %v\n", since(start), err)
		os.Exit(1)
	}
	fmt.Printf("olm-e2e: PASS in %s\n", since(start))
}

func since(t time.Time) time.Duration { return time.Since(t).Round(time.Second) }

// e2e runs the steps in order and times each; on a failure it prints the
// state of OLM's and the operator's namespaces.
func e2e(o options) error {
	r, err := startRegistry()
	if err != nil {
		return err
	}
	defer r.stop()
	fmt.Printf("registry: http://%s (in process)\n", r.host)
	k := kube{kubectl: o.kubectl, kubeconfig: o.kubeconfig}
	dns, err := startDNS(o.dns, o.clusterDomain, k)
	if err != nil {
		return fmt.Errorf("cluster DNS: %w", err)
	}
	defer dns.stop()
	fmt.Printf("DNS of Services: %s (in process)\n", o.dns)
	csv := "listener-operator.v" + o.version
	var refs refs
	var addr string
	steps := []struct {
		name      string
		onCluster bool
		fn        func() error
	}{
		{"push the operator's images", false, func() (err error) { refs.operator, err = pushOperatorImages(r, o.images); return }},
		{"bundle with images by digest, bundle image", false, func() error { return bundle(o, r, &refs) }},
		{"catalog, OLM, opm and catalog images", false, func() error {
			dir := filepath.Join(o.work, "catalog")
			if err := writeCatalog(filepath.Join(o.tools, "opm"), refs.bundle, o.version, dir); err != nil {
				return err
			}
			return pushOLMImages(r, o.tools, o.busybox, dir, &refs)
		}},
		{"install OLM v0.38.0", true, func() error {
			crds, rest, err := renderOLM(filepath.Join(o.tools, "helm"), o.chart, refs)
			if err != nil {
				return err
			}
			return installOLM(k, crds, rest)
		}},
		{"subscribe", true, func() error { return subscribe(k, refs.catalog) }},
		{"wait for the CSV and the olm-deployer's objects", true, func() error { return waitInstalled(k, csv) }},
		{"listener check", true, func() (err error) { addr, err = checkListener(k, refs.operator[operatorImage]); return }},
		{"delete the CSV", true, func() error { return uninstall(k, csv) }},
	}
	for _, s := range steps {
		t := time.Now()
		if err := s.fn(); err != nil {
			if s.onCluster {
				fmt.Fprint(os.Stderr, k.dump(olmNS, installNS, checkNS))
			}
			return fmt.Errorf("%s: %w", s.name, err)
		}
		fmt.Printf("%-50s %6s\n", s.name, since(t))
		if s.name == "listener check" {
			fmt.Printf("  the listener-check pod connected to its own Listener at %s\n", addr)
		}
	}
	return nil
}

// operatorImage is the operator's image as hack/cluster tags it.
const operatorImage = "index.docker.io/library/listener-operator:dev"

// bundle writes the bundle of the cluster's install with every image by
// digest, and pushes it as the bundle image.
func bundle(o options, r *reg, refs *refs) error {
	rendered, err := os.ReadFile(o.rendered)
	if err != nil {
		return err
	}
	manifests, err := byDigest(string(rendered), refs.operator)
	if err != nil {
		return err
	}
	dir := filepath.Join(o.work, "bundle")
	if err := writeBundle(o.root, manifests, dir, o.version); err != nil {
		return err
	}
	return pushBundleImage(r, dir, o.version, refs)
}
