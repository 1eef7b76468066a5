// Package names derives the names and labels of the objects the operator
// creates (Services, PodListeners, pod selector labels) from the objects they
// belong to. The webhooks, the reconciler and the CSI driver all call it, so a
// name is computed one way everywhere.
package names
