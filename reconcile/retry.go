package reconcile

import "time"

// conflictRetry is how soon a reconcile of the claim, pod or certificate
// controller that lost an optimistic-concurrency race looks again. (The
// Listener controller says when to look again in its outcome, outcome.go.)
const conflictRetry = 50 * time.Millisecond
