// Package deploy holds the tests of the installable manifests: the
// kustomize overlays under config/ (default: cert-manager; selfsigned) and
// the Helm chart under deploy/helm/listener-operator. They render both with
// the pinned tools (make deploy-tools), check that the objects a working
// install needs are there and consistent, that kustomize and Helm agree,
// and that a real API server accepts everything (server-side dry run).
// They also render the existing (Stackable) chart's own values files
// (testdata/README.md) and check where each key lands, check the `helm
// test` pod, and run the chart's alert rules through `promtool test rules`
// (make monitoring-tools installs promtool).
package deploy
