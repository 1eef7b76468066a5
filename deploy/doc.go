// Package deploy holds the tests of the installable manifests: the
// kustomize overlays under config/ (default: cert-manager; selfsigned) and
// the Helm chart under deploy/helm/listener-operator. They render both with
// the pinned tools (make deploy-tools), check that the objects a working
// install needs are there and consistent, that kustomize and Helm agree,
// and that a real API server accepts everything (server-side dry run).
package deploy
