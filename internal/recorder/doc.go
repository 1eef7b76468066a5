// Package recorder records Kubernetes events (events.k8s.io/v1) with
// memory that does not grow with the events recorded.
//
// controller-runtime's recorder (client-go's tools/events broadcaster)
// keeps a copy of every event it sent, about 1 KB each, for six to twelve
// minutes, to fold repeats into a series: a burst of 10,000 Listeners holds
// 20 to 30 MB on the leader for that long (docs/benchmarks.md). Here a
// bounded queue (events beyond it are dropped and counted, as client-go
// drops them when its queue is full) feeds one sender, and the series of
// the most recent distinct events are remembered by a hash of what makes
// two events the same (type, reason, action, the reporting controller and
// instance, the regarding and related objects), with the event's name and
// count: a repeat within six minutes patches the series of the event
// already sent, as client-go does, and older ones are forgotten first.
//
// Events are best effort: one the API server refuses, or that cannot be
// sent, is logged and dropped.
package recorder
