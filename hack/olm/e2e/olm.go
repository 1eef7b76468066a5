package main

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// OLM's namespaces as its chart names them.
const (
	olmNS       = "operator-lifecycle-manager"
	operatorsNS = "operators"
)

// renderOLM renders the Helm chart in OLM v0.38.0's module (deploy/chart,
// what OLM's own release manifests are made from) with its CRDs, pointed
// at the images just pushed. It returns the CRDs and the rest apart: the
// rest has objects of those CRDs' kinds.
func renderOLM(helm, chart string, r refs) (crds, rest string, err error) {
	var out bytes.Buffer
	cmd := exec.Command(helm, "template", "olm", chart, "--include-crds",
		"--set", "olm.image.ref="+r.olm,
		"--set", "catalog.image.ref="+r.olm,
		"--set", "package.image.ref="+r.olm,
		"--set", "olm.image.pullPolicy=IfNotPresent",
		"--set", "catalog.image.pullPolicy=IfNotPresent",
		"--set", "package.image.pullPolicy=IfNotPresent",
		"--set", "catalog.opmImageArgs=--opmImage="+r.opm,
		// ConfigMap-backed catalogs are not used here; the flag must name
		// an image that exists all the same.
		"--set", "catalog.commandArgs=--configmapServerImage="+r.opm,
		// Two package servers are for availability; one is enough on a
		// two-core machine.
		"--set", "package.replicaCount=1")
	cmd.Stdout = &out
	if err := run(cmd); err != nil {
		return "", "", err
	}
	var c, o []string
	for _, doc := range strings.Split(out.String(), "\n---") {
		var meta struct {
			Kind     string
			Metadata struct{ Name string }
		}
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			return "", "", fmt.Errorf("OLM chart: %w", err)
		}
		switch {
		case meta.Kind == "":
		case meta.Kind == "CustomResourceDefinition":
			c = append(c, doc)
		// The chart's operatorhub.io catalog names a quay.io image: no
		// internet here, and nothing in this install needs it.
		case meta.Kind == "CatalogSource":
		default:
			o = append(o, doc)
		}
	}
	return strings.Join(c, "\n---"), strings.Join(o, "\n---"), nil
}

// installOLM applies the CRDs, waits until they are served, applies the
// rest and waits for OLM's two operators and for the packageserver CSV,
// which the olm operator installs itself: once it is Succeeded, OLM has
// installed an operator from a CSV on this cluster.
func installOLM(k kube, crds, rest string) error {
	if err := k.apply(crds); err != nil {
		return err
	}
	if _, err := k.out("wait", "--for=condition=Established", "--timeout=60s", "crd",
		"catalogsources.operators.coreos.com", "clusterserviceversions.operators.coreos.com",
		"installplans.operators.coreos.com", "olmconfigs.operators.coreos.com",
		"operatorgroups.operators.coreos.com", "subscriptions.operators.coreos.com"); err != nil {
		return err
	}
	if err := k.apply(rest); err != nil {
		return err
	}
	for _, d := range []string{"olm-operator", "catalog-operator"} {
		if _, err := k.out("-n", olmNS, "rollout", "status", "deployment/"+d, "--timeout=180s"); err != nil {
			return err
		}
	}
	return k.wait("the packageserver CSV", 4*time.Minute,
		k.equals(olmNS, "csv/packageserver", "{.status.phase}", "Succeeded"))
}
