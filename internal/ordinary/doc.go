// Package ordinary makes the objects of an ordinary cluster, ones that have
// nothing to do with listeners: pods, claims of another storage class,
// static volumes of another driver, Services with their EndpointSlices and
// nodes, each shaped like a production one (kubectl's last-applied
// annotation, env vars, probes, node images).
//
// The cache benchmarks (caches/) and `make scale` (hack/scale) both build
// their unrelated objects here, so that a figure from one can be set next
// to a figure from the other: they measure the same objects.
package ordinary
