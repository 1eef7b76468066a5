//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// admissionProbe keeps several clients asking the API server to admit
// server-side dry-run creates while a test disturbs the webhooks (a
// rollout, a CA change) and counts the answers. A test waits for a number
// of answers after the disturbance (waitAnswers) rather than sleeping for a
// while: that some requests were made after it is what shows that none
// failed.
type admissionProbe struct {
	mu       sync.Mutex
	answers  int
	admitted int
	failed   []string
	stop     chan struct{}
	wg       sync.WaitGroup
}

// startAdmissionProbe starts clients goroutines, each creating obj(client,
// i) (a dry run) every interval until stop. An AlreadyExists answer counts as
// admitted (the webhooks let it through); an error once ctx is done is not
// an answer.
func startAdmissionProbe(ctx context.Context, clients int, interval time.Duration, obj func(c, i int) client.Object) *admissionProbe {
	p := &admissionProbe{stop: make(chan struct{})}
	for c := range clients {
		p.wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-p.stop:
					return
				case <-time.After(interval):
				}
				err := k8s.client.Create(ctx, obj(c, i), client.DryRunAll)
				if ctx.Err() != nil {
					return
				}
				p.mu.Lock()
				p.answers++
				if err == nil || apierrors.IsAlreadyExists(err) {
					p.admitted++
				} else {
					p.failed = append(p.failed, err.Error())
				}
				p.mu.Unlock()
			}
		})
	}
	return p
}

// counts is what the probe saw so far.
func (p *admissionProbe) counts() (answers, admitted int, failed []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.answers, p.admitted, append([]string(nil), p.failed...)
}

// waitAnswers waits until the API server has answered n more requests
// than when it was called.
func (p *admissionProbe) waitAnswers(t *testing.T, ctx context.Context, n int, what string) {
	t.Helper()
	from, _, _ := p.counts()
	eventually(t, ctx, 2*time.Minute, fmt.Sprintf("%d more answers %s", n, what), func(context.Context) (bool, string) {
		answers, _, _ := p.counts()
		return answers-from >= n, fmt.Sprintf("%d answers", answers-from)
	})
}

// Stop stops the clients and waits for them; the counts stay.
func (p *admissionProbe) Stop() {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	p.wg.Wait()
}
