// Command scale is the scale harness behind `make scale`: on the project's
// cluster with the operator deployed as shipped, it starts kwok with fake
// nodes, creates listener workloads and thousands of ordinary pods on them,
// and prints the memory, restarts and API traffic of each component of the
// operator, the pod webhook's latency and how long Listeners take to be
// Ready, at two cluster sizes (docs/benchmarks.md, "Scale (kwok)").
package main
