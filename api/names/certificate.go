package names

// CertificateName is the name of the cert-manager Certificate (and of its
// Secret) that the operator keeps for the Listener named listenerName when
// its class asks for one: the Service's name (a DNS-1035 label of at most
// 63 characters, distinct per Listener) with a suffix that keeps it apart
// from the user's own Certificates and Secrets.
func CertificateName(listenerName string) string {
	return ServiceName(listenerName) + "-listener-tls"
}
