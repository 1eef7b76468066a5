package names

// ServiceDNSNames are the names a Service answers to inside the cluster,
// shortest first: <service> and <service>.<namespace> (through a pod's DNS
// search list), <service>.<namespace>.svc (what the API server verifies
// when it calls a webhook Service) and the fully qualified name in the
// cluster's domain (ServiceFQDN). Certificates for a Service cover them all.
func ServiceDNSNames(service, namespace, clusterDomain string) []string {
	return []string{
		service,
		service + "." + namespace,
		service + "." + namespace + ".svc",
		ServiceFQDN(service, namespace, clusterDomain),
	}
}

// ServiceFQDN is a Service's fully qualified in-cluster DNS name,
// <service>.<namespace>.svc.<clusterDomain>: what a ClusterIP Listener
// publishes when it publishes a hostname.
func ServiceFQDN(service, namespace, clusterDomain string) string {
	return service + "." + namespace + ".svc." + clusterDomain
}
