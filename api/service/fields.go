package service

import "strings"

// Owner says who decides a field of a Listener's Service.
type Owner string

const (
	// Exposure fields decide who can reach the pods, or on which address:
	// always what the class (and, for the selector, the operator) made,
	// whatever a Listener's objectOverrides say.
	Exposure Owner = "exposure"
	// Operator fields identify the Service or are set by the API server;
	// the operator sets them and no override changes them.
	Operator Owner = "operator"
	// Open fields follow the precedence of the Stackable operator: class
	// serviceAnnotations < class serviceOverrides < Listener objectOverrides.
	// A class locks more of them with spec.lockedServiceFields.
	Open Owner = "open"
)

// SpecFields classifies every field of corev1.ServiceSpec by its JSON name.
// TestEveryServiceFieldIsClassified fails when Kubernetes adds one that is
// not listed, so that no new field slips through unclassified.
var SpecFields = map[string]Owner{
	"type":                          Exposure, // ClusterIP → NodePort/LoadBalancer reaches outside the cluster
	"selector":                      Exposure, // which pods are behind the address (the operator's)
	"clusterIP":                     Exposure, // picks an address, or None (headless: pod IPs in DNS)
	"clusterIPs":                    Exposure,
	"externalIPs":                   Exposure, // intercepts traffic to any address (CVE-2020-8554)
	"externalName":                  Exposure, // ExternalName redirect
	"loadBalancerIP":                Exposure, // picks a (possibly public) address
	"loadBalancerSourceRanges":      Exposure, // who may connect through the load balancer
	"loadBalancerClass":             Exposure, // which implementation (public or internal) serves it
	"allocateLoadBalancerNodePorts": Exposure, // node ports open on every node
	"healthCheckNodePort":           Exposure, // a port opened on every node
	"externalTrafficPolicy":         Exposure, // Cluster forwards from every node
	"ipFamilies":                    Exposure, // adds an IPv6 (or IPv4) address reachable from another network
	"ipFamilyPolicy":                Exposure,
	"ports":                         Open, // the Listener's own ports; ports[].nodePort is Exposure (see checkPorts)
	"publishNotReadyAddresses":      Open, // a Listener field of its own
	"sessionAffinity":               Open,
	"sessionAffinityConfig":         Open,
	"internalTrafficPolicy":         Open, // Local only narrows which endpoints serve
	"trafficDistribution":           Open, // prefers close endpoints among the same ones
}

// MetadataFields classifies every field of metav1.ObjectMeta by its JSON
// name. Annotations and labels are open except the exposure keys
// (ExposureAnnotations, ExposureLabelPrefixes) and the keys a class locks.
var MetadataFields = map[string]Owner{
	"name":                       Operator,
	"generateName":               Operator,
	"namespace":                  Operator,
	"selfLink":                   Operator,
	"uid":                        Operator,
	"resourceVersion":            Operator,
	"generation":                 Operator,
	"creationTimestamp":          Operator,
	"deletionTimestamp":          Operator,
	"deletionGracePeriodSeconds": Operator,
	"ownerReferences":            Operator, // garbage collection and the foreign-Service check rely on it
	"finalizers":                 Operator, // a finalizer would hold the Service after its Listener is gone
	"managedFields":              Operator,
	"labels":                     Open,
	"annotations":                Open,
}

// ExposureAnnotations are the Service annotations that choose a load
// balancer's scheme, network or address pool, for the cloud providers and
// load-balancer implementations the operator knows. They are exposure: a
// Listener's overrides never change them, and a class that sets one decides
// it for all its Listeners. A class locks other keys with
// spec.lockedServiceFields.
var ExposureAnnotations = []string{
	// AWS (in-tree and aws-load-balancer-controller)
	"service.beta.kubernetes.io/aws-load-balancer-internal",
	"service.beta.kubernetes.io/aws-load-balancer-scheme",
	"service.beta.kubernetes.io/aws-load-balancer-type",
	"service.beta.kubernetes.io/aws-load-balancer-subnets",
	"service.beta.kubernetes.io/aws-load-balancer-eip-allocations",
	"service.beta.kubernetes.io/aws-load-balancer-private-ipv4-addresses",
	"service.beta.kubernetes.io/aws-load-balancer-ip-address-type",
	"service.beta.kubernetes.io/aws-load-balancer-security-groups",
	"service.beta.kubernetes.io/aws-load-balancer-extra-security-groups",
	"service.beta.kubernetes.io/load-balancer-source-ranges",
	// Azure
	"service.beta.kubernetes.io/azure-load-balancer-internal",
	"service.beta.kubernetes.io/azure-load-balancer-internal-subnet",
	"service.beta.kubernetes.io/azure-load-balancer-ipv4",
	"service.beta.kubernetes.io/azure-load-balancer-ipv6",
	"service.beta.kubernetes.io/azure-pip-name",
	"service.beta.kubernetes.io/azure-allowed-service-tags",
	"service.beta.kubernetes.io/azure-allowed-ip-ranges",
	// Google (GKE)
	"networking.gke.io/load-balancer-type",
	"cloud.google.com/load-balancer-type",
	"networking.gke.io/internal-load-balancer-allow-global-access",
	"networking.gke.io/internal-load-balancer-subnet",
	"networking.gke.io/load-balancer-ip-addresses",
	// Oracle (OCI load balancers and network load balancers)
	"service.beta.kubernetes.io/oci-load-balancer-internal",
	"service.beta.kubernetes.io/oci-load-balancer-subnet1",
	"service.beta.kubernetes.io/oci-load-balancer-subnet2",
	"oci.oraclecloud.com/load-balancer-type", // lb or nlb
	"oci.oraclecloud.com/oci-network-security-groups",
	"oci-network-load-balancer.oraclecloud.com/internal",
	"oci-network-load-balancer.oraclecloud.com/subnet",
	"oci-network-load-balancer.oraclecloud.com/oci-network-security-groups",
	// DigitalOcean
	"service.beta.kubernetes.io/do-loadbalancer-type",
	"service.beta.kubernetes.io/do-loadbalancer-network", // INTERNAL or EXTERNAL
	// Hetzner Cloud
	"load-balancer.hetzner.cloud/disable-public-network",
	"load-balancer.hetzner.cloud/disable-private-ingress",
	"load-balancer.hetzner.cloud/use-private-ip",
	"load-balancer.hetzner.cloud/network-zone",
	"load-balancer.hetzner.cloud/ipv6-disabled",
	// Other clouds
	"service.beta.kubernetes.io/openstack-internal-load-balancer",
	"service.kubernetes.io/ibm-load-balancer-cloud-provider-ip-type",
	// MetalLB
	"metallb.universe.tf/address-pool",
	"metallb.universe.tf/loadBalancerIPs",
	"metallb.universe.tf/allow-shared-ip",
	"metallb.io/address-pool",
	"metallb.io/loadBalancerIPs",
	"metallb.io/allow-shared-ip",
	// Cilium (LB IPAM, cluster mesh)
	"io.cilium/lb-ipam-ips",
	"io.cilium/lb-ipam-sharing-key",
	"lbipam.cilium.io/ips",
	"lbipam.cilium.io/sharing-key",
	"lbipam.cilium.io/sharing-cross-namespace",
	"service.cilium.io/global",
	"io.cilium/global-service",
	"service.cilium.io/shared",
	// kube-vip
	"kube-vip.io/loadbalancerIPs",
	// external-dns: a DNS name (or the address it points at) is who clients
	// reach; a tenant could claim any name in a shared zone. A class's
	// spec.hostname template sets the hostname annotation itself.
	"external-dns.alpha.kubernetes.io/hostname",
	"external-dns.alpha.kubernetes.io/internal-hostname",
	"external-dns.alpha.kubernetes.io/target",
	"external-dns.alpha.kubernetes.io/access",
}

// ExposureLabelPrefixes are Service label key prefixes that make a
// load-balancer implementation pick the Service up or choose its pool
// (Cilium's LB IPAM selects pools and its BGP control plane selects
// Services by label). A label key with one of these prefixes is exposure.
var ExposureLabelPrefixes = []string{
	"io.cilium/",
	"lbipam.cilium.io/",
	"service.cilium.io/",
	"service.kubernetes.io/", // service-proxy-name, headless: who serves it
}

// IsExposureAnnotation reports whether a Service annotation key is exposure.
func IsExposureAnnotation(key string) bool {
	for _, k := range ExposureAnnotations {
		if k == key {
			return true
		}
	}
	return false
}

// IsExposureLabel reports whether a Service label key is exposure.
func IsExposureLabel(key string) bool {
	for _, p := range ExposureLabelPrefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}
