package reconcile

// Every owner reference the reconcilers write sets blockOwnerDeletion (so
// that foreground deletion waits for what they create): the Service of a
// Listener, the per-claim Listener of a claim, and the PodListeners of a
// pod. The OwnerReferencesPermissionEnforcement admission plugin
// (OpenShift, and any cluster that enables it) then requires update on the
// owner's finalizers subresource; without it the create fails with 403.

// +kubebuilder:rbac:groups=listeners.stackable.tech,resources=listeners/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=pods/finalizers,verbs=update
