package main

import (
	"fmt"
	"io"
	"math"
	"text/tabwriter"
	"time"
)

// report writes the harness's table.
func report(w io.Writer, o options, base row, rows []row, small, large phase) {
	reportHeader(w, o)
	reportRows(w, base, rows)
	if len(rows) >= 2 {
		fmt.Fprintf(w, "\nslope per ordinary pod between %d and %d pods:\n", o.smallPods, o.pods)
		d := float64(o.pods - o.smallPods)
		eachComponent(rows[1], rows[0], func(a, b component) {
			fmt.Fprintf(w, "  %-26s RSS %7.0f B/pod   heap %7.0f B/pod\n", a.name, (a.rss-b.rss)/d, (a.heap-b.heap)/d)
		})
	}
	if len(rows) > 0 && len(base.components) > 0 {
		reportPerClaim(w, o, base, rows[len(rows)-1])
	}
	fmt.Fprintln(w)
	reportPhases(w, o, small, large)
}

// reportHeader says what was run and how the heap was read.
func reportHeader(w io.Writer, o options) {
	fmt.Fprintf(w, "\nScale run %s: %d kwok nodes, ordinary pods %d and %d, %d listener claims\n\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"), o.nodes, o.smallPods, o.pods, o.listeners)
	if o.liveHeap {
		fmt.Fprint(w, "The controllers' heap in use is read just after a forced collection (-live-heap): what is live.")
		if o.profiles != "" {
			fmt.Fprint(w, " Their pprof endpoint samples the heap (-profiles): about 1.5 MB of RSS more than as shipped.")
		} else {
			fmt.Fprint(w, " Their pprof endpoint only forces the collections (--pprof-heap-samples=false): RSS as shipped.")
		}
		fmt.Fprint(w, "\n\n")
	}
}

// reportRows writes each component of each measurement (the base first,
// when there is one).
func reportRows(w io.Writer, base row, rows []row) {
	mb := func(b float64) string { return fmt.Sprintf("%.1f", b/1e6) }
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "cluster\tcomponent\tRSS MB\t(anon\tfile)\theap in use MB\t(objects)\trestarts\tAPI req/s\tCPU ms/s")
	all := rows
	if len(base.components) > 0 {
		all = append([]row{base}, rows...)
	}
	for _, r := range all {
		for _, c := range r.components {
			anon, file := "-", "-"
			if c.split {
				anon, file = mb(c.anon), mb(c.file)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%.2f\t%.1f\n", r.label, c.name, mb(c.rss), anon, file, mb(c.heap), mb(c.live), c.restarts, r.reqPerSec[c.name], r.cpuPerSec[c.name]*1000)
		}
	}
	tw.Flush()
}

// reportPhases writes the admission and time to Ready of the two listener
// phases.
func reportPhases(w io.Writer, o options, small, large phase) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "listener claims created\tcreate p50\tcreate p99\tpod webhook p50\tpod webhook p99\tListener Ready p50\tp99\tmax\tleader CPU")
	ms := func(s float64) string {
		if math.IsNaN(s) {
			return "-"
		}
		return fmt.Sprintf("%.1f ms", s*1000)
	}
	for _, p := range []struct {
		what string
		p    phase
	}{{fmt.Sprintf("%d with 0 ordinary pods", small.claims), small}, {fmt.Sprintf("%d with %d ordinary pods", large.claims, o.pods), large}} {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.1f s\n", p.what,
			p.p.createP50.Round(100*time.Microsecond), p.p.createP99.Round(100*time.Microsecond),
			ms(p.p.webhookP50), ms(p.p.webhookP99), p.p.readyP50, p.p.readyP99, p.p.readyMx, p.p.leaderCPU)
	}
	tw.Flush()
}

// rssTarget is issue 23's budget of each controller replica.
const rssTarget = 64e6

// reportPerClaim writes, for each component, what it grew by from no
// listener claims to the last row (all of them, with the ordinary objects,
// which cost next to nothing), per listener claim, next to what the RSS
// budget leaves each claim above the base.
func reportPerClaim(w io.Writer, o options, base, last row) {
	fmt.Fprintf(w, "\nper listener claim, from no claims to %d in the whole mix (RSS / heap in use / its objects), and what ≤ %.0f MB RSS leaves each claim above the base:\n", o.listeners, rssTarget/1e6)
	n := float64(o.listeners)
	eachComponent(last, base, func(a, b component) {
		fmt.Fprintf(w, "  %-26s RSS %7.0f B   heap %7.0f B   objects %7.0f B   budget %7.0f B\n", a.name, (a.rss-b.rss)/n, (a.heap-b.heap)/n, (a.live-b.live)/n, (rssTarget-b.rss)/n)
	})
}

// eachComponent calls fn with each component of later and the same
// component (by name) in earlier.
func eachComponent(later, earlier row, fn func(a, b component)) {
	for _, a := range later.components {
		for _, b := range earlier.components {
			if a.name == b.name {
				fn(a, b)
			}
		}
	}
}

// reportMix writes the realistic mix's part of the table: the cost per
// object of each kind added (between a row and the one before it), per
// listener claim, and the last phase's time to Ready against its floor,
// stage by stage.
func reportMix(w io.Writer, rows []row, large phase, stages []stage, floor, boundFloor []float64) {
	fmt.Fprintln(w, "\nslope per object added (RSS / heap in use / its objects, bytes per object; the row before as base):")
	for i := 1; i < len(rows); i++ {
		if rows[i].added == 0 {
			continue
		}
		d := float64(rows[i].added)
		eachComponent(rows[i], rows[i-1], func(a, b component) {
			fmt.Fprintf(w, "  %-22s %-26s RSS %7.0f B   heap %7.0f B   objects %7.0f B\n", rows[i].kind, a.name, (a.rss-b.rss)/d, (a.heap-b.heap)/d, (a.live-b.live)/d)
		})
	}
	sec := func(ds []float64, p float64) string {
		v := percentile(ds, p)
		if math.IsNaN(v) {
			return "-"
		}
		return (time.Duration(v * float64(time.Second))).Round(100 * time.Millisecond).String()
	}
	fmt.Fprintf(w, "\ntime to Ready, burst of %d listener claims against the floor (%d pods without a listener volume, same run):\n", large.claims, len(floor))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  from pod creation to\tn\tp50\tp99\tmax")
	for _, s := range stages {
		fmt.Fprintf(tw, "  %s (per-claim)\t%d\t%s\t%s\t%s\n", s.name, len(s.ds), sec(s.ds, 0.5), sec(s.ds, 0.99), sec(s.ds, 1))
	}
	fmt.Fprintf(tw, "  floor: pod Ready, no listener volume\t%d\t%s\t%s\t%s\n", len(floor), sec(floor, 0.5), sec(floor, 0.99), sec(floor, 1))
	if len(boundFloor) > 0 {
		fmt.Fprintf(tw, "  bound-volume floor: pod Ready, a static volume Kubernetes binds\t%d\t%s\t%s\t%s\n", len(boundFloor), sec(boundFloor, 0.5), sec(boundFloor, 0.99), sec(boundFloor, 1))
	}
	tw.Flush()
	fmt.Fprintf(w, "  Listener created → Ready (all Listeners of the burst): p50 %s, p99 %s; pod webhook p50 %.1f ms, p99 %.1f ms\n",
		large.readyP50, large.readyP99, large.webhookP50*1000, large.webhookP99*1000)
	if p := percentile(floor, 0.99); !math.IsNaN(p) && p > 0 {
		for _, s := range stages {
			if s.name == "Listener Ready" && len(s.ds) > 0 {
				fmt.Fprintf(w, "  Listener Ready p99 / floor p99 = %.2f\n", percentile(s.ds, 0.99)/p)
				if b := percentile(boundFloor, 0.99); !math.IsNaN(b) && b > 0 {
					fmt.Fprintf(w, "  Listener Ready p99 / bound-volume floor p99 = %.2f\n", percentile(s.ds, 0.99)/b)
				}
			}
		}
	}
}
