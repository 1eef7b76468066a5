// Package certs gives the admission webhook server its TLS certificate.
//
// Three modes exist (see Mode):
//
//   - cert-manager: cert-manager issues the serving certificate into a Secret
//     that the Deployment mounts, and cainjector fills the caBundle of the
//     webhook configurations. This package only checks, with cert-manager's
//     own API types, that cert-manager is installed and the Certificate is
//     Ready, so a missing piece shows up as a clear message in the log and in
//     /readyz instead of a TLS error in the API server's log later.
//   - self-signed: for clusters without cert-manager. The leader keeps a CA and
//     a serving certificate in one Secret in the operator's namespace, writes
//     the CA into the caBundle of the webhook configurations (again whenever
//     someone clears it) and rotates the serving certificate at two thirds of
//     its lifetime without touching the CA. Every replica copies the Secret
//     into its certificate directory.
//   - files: serve whatever is mounted in the certificate directory.
//
// In every mode the server reads tls.crt and tls.key through
// controller-runtime's certificate watcher, so a renewed certificate is served
// without a restart. The generation and expiry decisions are plain functions
// (Generate*, Evaluate, RotationTime); the Kubernetes plumbing (Bootstrapper,
// SecretSync, Watcher, CertManagerCheck) sits at the edges.
package certs
