package main

import (
	"math"
	"strings"
	"testing"
)

const scrapeText = `# HELP x a histogram
# TYPE x histogram
x_bucket{webhook="/mutate-v1-pod",le="0.005"} 10
x_bucket{webhook="/mutate-v1-pod",le="0.01"} 30
x_bucket{webhook="/mutate-v1-pod",le="0.1"} 40
x_bucket{webhook="/mutate-v1-pod",le="+Inf"} 40
x_bucket{webhook="/validate",le="0.005"} 1000
x_bucket{webhook="/validate",le="+Inf"} 1000
rest_client_requests_total{code="200",method="GET"} 7
rest_client_requests_total{code="201",method="POST"} 3
process_resident_memory_bytes 5.5e+07
`

func TestSamples(t *testing.T) {
	s := parseSamples(strings.NewReader(scrapeText))
	if got := s.sum("rest_client_requests_total"); got != 10 {
		t.Errorf("requests = %v, want 10", got)
	}
	if got := s.sum("process_resident_memory_bytes"); got != 55e6 {
		t.Errorf("rss = %v", got)
	}
	b := s.buckets("x", `webhook="/mutate-v1-pod"`)
	if len(b) != 4 || b[math.Inf(1)] != 40 || b[0.01] != 30 {
		t.Errorf("buckets = %v", b)
	}
}

func TestHistogramQuantile(t *testing.T) {
	before := map[float64]float64{0.005: 0, 0.01: 0, 0.1: 0, math.Inf(1): 0}
	after := map[float64]float64{0.005: 10, 0.01: 30, 0.1: 40, math.Inf(1): 40}
	for _, tc := range []struct{ q, want float64 }{
		{0.25, 0.005},  // the 10th of 40 is the top of the first bucket
		{0.5, 0.0075},  // the 20th: halfway through the second
		{0.875, 0.055}, // the 35th: halfway through the third
	} {
		if got := histogramQuantile(tc.q, before, after); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("q%v = %v, want %v", tc.q, got, tc.want)
		}
	}
	// Only what happened between the scrapes counts.
	if got := histogramQuantile(0.5, after, after); !math.IsNaN(got) {
		t.Errorf("no observations: %v, want NaN", got)
	}
}

func TestPercentile(t *testing.T) {
	v := []float64{5, 1, 4, 2, 3}
	for _, tc := range []struct{ p, want float64 }{{0.5, 3}, {0.99, 5}, {1, 5}, {0.2, 1}} {
		if got := percentile(v, tc.p); got != tc.want {
			t.Errorf("p%v = %v, want %v", tc.p, got, tc.want)
		}
	}
	if !math.IsNaN(percentile(nil, 0.5)) {
		t.Error("percentile of nothing is not NaN")
	}
}
