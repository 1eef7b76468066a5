package main

import (
	"bufio"
	"context"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/listener-operator/listener-operator/internal/metricsscrape"
)

// sample is one line of the Prometheus text format: a metric name, its
// labels as written, and a value.
type sample struct {
	name, labels string
	value        float64
}

// samples is a scrape of one endpoint.
type samples []sample

// parseSamples reads the Prometheus text format, skipping comments and
// lines it cannot read (the harness needs a few counters and histograms).
func parseSamples(r io.Reader) samples {
	var out samples
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		sp := strings.LastIndexByte(line, ' ')
		if sp < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[sp+1:], 64)
		if err != nil {
			continue
		}
		head := line[:sp]
		name, labels := head, ""
		if i := strings.IndexByte(head, '{'); i >= 0 {
			name, labels = head[:i], head[i:]
		}
		out = append(out, sample{name: name, labels: labels, value: v})
	}
	return out
}

// sum adds the samples of name whose labels contain every one of want.
func (s samples) sum(name string, want ...string) float64 {
	total := 0.0
	for _, x := range s {
		if x.name == name && containsAll(x.labels, want) {
			total += x.value
		}
	}
	return total
}

// buckets are a histogram's cumulative counts by upper bound, summed over
// the series whose labels contain every one of want.
func (s samples) buckets(name string, want ...string) map[float64]float64 {
	out := map[float64]float64{}
	for _, x := range s {
		if x.name != name+"_bucket" || !containsAll(x.labels, want) {
			continue
		}
		i := strings.Index(x.labels, `le="`)
		if i < 0 {
			continue
		}
		rest := x.labels[i+4:]
		le, err := strconv.ParseFloat(rest[:strings.IndexByte(rest, '"')], 64)
		if err != nil {
			continue
		}
		out[le] += x.value
	}
	return out
}

func containsAll(labels string, want []string) bool {
	for _, w := range want {
		if !strings.Contains(labels, w) {
			return false
		}
	}
	return true
}

// histogramQuantile estimates quantile q of the observations between two
// scrapes of a histogram (after minus before), interpolating linearly in
// the bucket it falls in, as Prometheus does. It returns NaN without
// observations.
func histogramQuantile(q float64, before, after map[float64]float64) float64 {
	bounds := make([]float64, 0, len(after))
	for le := range after {
		bounds = append(bounds, le)
	}
	sort.Float64s(bounds)
	if len(bounds) == 0 {
		return math.NaN()
	}
	total := after[math.Inf(1)] - before[math.Inf(1)]
	if total <= 0 {
		return math.NaN()
	}
	rank := q * total
	prevBound, prevCount := 0.0, 0.0
	for _, le := range bounds {
		count := after[le] - before[le]
		if count >= rank {
			if math.IsInf(le, 1) {
				return prevBound
			}
			if count == prevCount {
				return le
			}
			return prevBound + (le-prevBound)*(rank-prevCount)/(count-prevCount)
		}
		prevBound, prevCount = le, count
	}
	return prevBound
}

// scrape reads a component's /metrics as Prometheus does (HTTPS, a token
// bound to the metrics-reader role).
func scrape(ctx context.Context, s *metricsscrape.Scraper, podIP string) (samples, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	body, err := s.Get(ctx, podIP)
	if err != nil {
		return nil, err
	}
	return parseSamples(strings.NewReader(body)), nil
}

// percentile is the p-th percentile (0..1) of values, nearest rank.
func percentile(values []float64, p float64) float64 {
	if len(values) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), values...)
	sort.Float64s(s)
	i := int(math.Ceil(p*float64(len(s)))) - 1
	if i < 0 {
		i = 0
	}
	return s[i]
}
