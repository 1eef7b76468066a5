package csi

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listener-operator/listener-operator/api/v1alpha1"
)

// TestPodAddressesHostname: a NodePort pod's volume holds its class's DNS
// name first (with the node ports), then its node's address, as its
// PodListeners entry does.
func TestPodAddressesHostname(t *testing.T) {
	np := map[string]int32{"kafka": 31092}
	l := &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "broker-0"},
		Spec: v1alpha1.ListenerSpec{Ports: []v1alpha1.ListenerPort{{Name: "kafka", Port: 9092}}}, Status: v1alpha1.ListenerStatus{NodePorts: np}}
	class := &v1alpha1.ListenerClass{Spec: v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeNodePort,
		Hostname: &v1alpha1.HostnamePolicy{Template: "{listener}.{namespace}.kafka.example.com"}}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}}}}
	got, err := readyAddresses(l, class, node)
	if err != nil {
		t.Fatal(err)
	}
	want := []v1alpha1.ListenerIngress{
		{Address: "broker-0.team-a.kafka.example.com", AddressType: v1alpha1.AddressTypeHostname, Ports: np},
		{Address: "10.0.0.1", AddressType: v1alpha1.AddressTypeIP, Ports: np},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("podAddresses = %+v, want %+v", got, want)
	}
}

// TestPodAddressesHostnameConflict: a Listener whose name another Listener
// publishes (HostnamePublished False, HostnameConflict) gives its pods' volumes
// only the node's address, as its status and PodListeners.
func TestPodAddressesHostnameConflict(t *testing.T) {
	np := map[string]int32{"kafka": 31092}
	l := &v1alpha1.Listener{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-v"},
		Spec: v1alpha1.ListenerSpec{Ports: []v1alpha1.ListenerPort{{Name: "kafka", Port: 9092}}}, Status: v1alpha1.ListenerStatus{NodePorts: np,
			Conditions: []metav1.Condition{{Type: v1alpha1.ConditionHostnamePublished, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonHostnameConflict}}}}
	class := &v1alpha1.ListenerClass{Spec: v1alpha1.ListenerClassSpec{ServiceType: v1alpha1.ServiceTypeNodePort,
		Hostname: &v1alpha1.HostnamePolicy{Template: "{listener}-{namespace}.example.test", AllowAmbiguous: new(true)}}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}}}}
	got, err := readyAddresses(l, class, node)
	if err != nil {
		t.Fatal(err)
	}
	want := []v1alpha1.ListenerIngress{{Address: "10.0.0.1", AddressType: v1alpha1.AddressTypeIP, Ports: np}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("podAddresses = %+v, want %+v", got, want)
	}
}
