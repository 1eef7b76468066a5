// Package certificate is the certificate controller: it keeps one
// cert-manager Certificate per Listener whose class has spec.certificate,
// naming exactly the Listener's current addresses and its Service's
// in-cluster DNS names, and says how that goes in the Listener's
// CertificateManaged condition.
//
// Contract:
//   - watches Listeners whose class asks for a certificate (or that
//     published one) and ListenerClasses; reads Certificates live (they are
//     not cached), and notices cert-manager installed or removed without a
//     restart;
//   - writes Certificates it controls (create, update, delete when the
//     class stops asking) under the operator's field manager
//     (v1alpha1.FieldManager), and the CertificateManaged condition alone
//     under its own field manager (reconcile/conditions; api/v1alpha1's
//     status ownership table);
//   - never takes over a Certificate it does not control, never writes
//     Secrets (the issuer does), and never touches the Listener controller's
//     status fields.
//
// Reconcile (certificate.go, with the controller's setup and watches) reads
// the Listener, its class and its Certificate, asks decide (decide.go) what
// to do, and carries it out.
package certificate
