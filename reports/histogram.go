package reports

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/lockchaos/lockchaos/history"
)

// histogramView is the acquire-latency histogram, drawn on the server as SVG: log-spaced bins,
// since lock latencies span from tens of microseconds to seconds in one run.
type histogramView struct {
	Width, Height float64
	Bars          []svgRect
	Labels        []svgText
	Marks         []svgLine
	MarkLabels    []svgText
	Count         int
	Empty         bool
}

const (
	histW      = 560.0
	histH      = 200.0
	histLeft   = 44.0
	histBottom = 34.0
	histTop    = 18.0
	histBins   = 30
)

// buildHistogram bins the latencies of granted acquires; p50 and p99 (from result.json, in ms)
// are marked when given.
func buildHistogram(m *runModel, p50, p99 float64) *histogramView {
	lat := make([]float64, 0, len(m.windows))
	for _, w := range m.windows {
		if d := w.grant - w.call; d >= 0 {
			lat = append(lat, float64(max(d, 1)))
		}
	}
	hv := &histogramView{Width: histW, Height: histH, Count: len(lat)}
	if len(lat) == 0 {
		hv.Empty = true
		return hv
	}
	sort.Float64s(lat)
	lo, hi := math.Log10(lat[0]), math.Log10(lat[len(lat)-1])
	// At least a factor of ten on the axis, so one narrow spike does not fill the chart.
	if hi-lo < 1 {
		c := (hi + lo) / 2
		lo, hi = c-0.5, c+0.5
	}
	counts := make([]int, histBins)
	bw := (hi - lo) / histBins
	for _, v := range lat {
		i := min(histBins-1, max(0, int((math.Log10(v)-lo)/bw)))
		counts[i]++
	}
	peak := 0
	for _, c := range counts {
		peak = max(peak, c)
	}
	plotW, plotH := histW-histLeft-28, histH-histTop-histBottom // room on the right for the last axis label
	x := func(logv float64) float64 { return histLeft + (logv-lo)/(hi-lo)*plotW }
	for i, c := range counts {
		if c == 0 {
			continue
		}
		h := float64(c) / float64(peak) * plotH
		x0 := x(lo + float64(i)*bw)
		hv.Bars = append(hv.Bars, svgRect{X: x0 + 0.5, Y: histTop + plotH - h, W: plotW/histBins - 1, H: h, Class: "hist-bar",
			Title: fmt.Sprintf("%d acquires between %s and %s", c,
				history.FormatNs(int64(math.Pow(10, lo+float64(i)*bw))), history.FormatNs(int64(math.Pow(10, lo+float64(i+1)*bw))))})
	}
	// Axis labels at powers of ten (and the ends), in time units.
	for e := math.Ceil(lo); e <= hi; e++ {
		hv.Labels = append(hv.Labels, svgText{X: x(e), Y: histH - histBottom + 14, Text: history.FormatNs(int64(math.Pow(10, e))), Class: "axis", Anchor: "middle"})
	}
	hv.Labels = append(hv.Labels,
		svgText{X: histLeft - 6, Y: histTop + 8, Text: fmt.Sprint(peak), Class: "axis", Anchor: "end"},
		svgText{X: histLeft - 6, Y: histTop + plotH, Text: "0", Class: "axis", Anchor: "end"},
		svgText{X: histLeft + plotW/2, Y: histH - 4, Text: "acquire latency (log scale)", Class: "axis-title", Anchor: "middle"})
	for _, p := range []struct {
		name string
		ms   float64
	}{{"p50", p50}, {"p99", p99}} {
		if p.ms <= 0 {
			continue
		}
		lv := math.Log10(p.ms * float64(time.Millisecond))
		if lv < lo || lv > hi {
			continue
		}
		xx := x(lv)
		hv.Marks = append(hv.Marks, svgLine{X1: xx, Y1: histTop - 4, X2: xx, Y2: histTop + plotH, Class: "hist-mark"})
		// Each label goes on the side of its line with room for it; p99 sits one row lower so
		// close percentiles never print over each other.
		text := p.name + " " + history.FormatMs(p.ms)
		w := float64(len(text)) * charW
		lx, anchor, y := xx+3, "start", histTop-6
		if xx+3+w > histW {
			lx, anchor = xx-3, "end"
		}
		if p.name == "p99" {
			y = histTop + 6
		}
		hv.MarkLabels = append(hv.MarkLabels, svgText{X: lx, Y: y, Text: text, Class: "hist-mark-label", Anchor: anchor})
	}
	return hv
}
