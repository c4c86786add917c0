package reports

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/history"
)

// Geometry of a timeline, in SVG user units (the SVG scales to the page width).
const (
	tlWidth    = 1160.0
	tlLeft     = 78.0 // room for the lane labels
	tlRight    = 14.0
	laneH      = 28.0
	labelRowH  = 15.0
	maxLabRows = 4
	axisH      = 22.0
	barH       = 12.0
	charW      = 6.1 // average width of a character at the label font size, for packing labels

	// A browser draws a few thousand SVG elements instantly and 100k slowly; these budgets keep a
	// 10-minute run's report opening in well under a second.
	detailBudget   = 1500 // operations drawn one by one in a detail view
	overviewBudget = 1500 // above this the overview aggregates holding windows per pixel column
	densityColW    = 2.0  // width of one aggregation column
	maxFaultBands  = 300  // above this, fault bands that touch on screen are merged
)

// svgRect, svgLine and svgText are the shapes a timeline is drawn with; the template turns them
// into elements, escaping every string.
type svgRect struct {
	X, Y, W, H float64
	Class      string
	Title      string
	Opacity    float64 // 0 means unset
}

type svgLine struct {
	X1, Y1, X2, Y2 float64
	Class          string
	Title          string
}

type svgText struct {
	X, Y   float64
	Text   string
	Class  string
	Anchor string // "start", "middle" or "end"
}

// timelineView is one drawn timeline: lanes of clients over [From, To].
type timelineView struct {
	ID            string
	Title         string
	Note          string
	Width, Height float64
	From, To      int64
	Aggregated    bool

	LaneBG      []svgRect
	Danger      []svgRect // the danger windows of the faults (docs/design.md#evidence)
	LaneLabels  []svgText
	Grid        []svgLine
	AxisLabels  []svgText
	Faults      []svgRect
	FaultLabels []svgText
	Density     []svgRect
	Attempts    []svgLine
	Holds       []svgRect
	Leases      []svgRect // each lease as the lock check assumed it, under its holding window
	Illegal     []svgLine // grants the lock service made while another lease was valid
	Expired     []svgRect
	Ticks       []svgLine
	Releases    []svgLine
	Violation   *violationView
}

// violationView marks the first violation: the two windows outlined, their overlap shaded, a line
// at the moment it happened. Marker is true in the one view that carries id="first-violation".
type violationView struct {
	Marker   bool
	Outlines []svgRect
	Overlap  *svgRect
	Line     svgLine
	Label    svgText
	Desc     string
}

// elements counts the SVG elements a view draws; tests hold the budgets to it.
func (v *timelineView) elements() int {
	n := len(v.LaneBG) + len(v.LaneLabels) + len(v.Grid) + len(v.AxisLabels) + len(v.Faults) +
		len(v.FaultLabels) + len(v.Density) + len(v.Attempts) + len(v.Holds) + len(v.Expired) +
		len(v.Ticks) + len(v.Releases) + len(v.Danger) + len(v.Leases) + len(v.Illegal)
	if v.Violation != nil {
		n += len(v.Violation.Outlines) + 3
	}
	return n
}

// violationSpan is the first violation resolved against the history.
type violationSpan struct {
	v      *checker.Violation
	a, b   *window // nil when the history does not have them
	at     int64
	f0, f1 int64 // what a detail view must show
}

func resolveViolation(m *runModel, r *checker.Result) *violationSpan {
	if r == nil || r.FirstViolation == nil {
		return nil
	}
	v := r.FirstViolation
	s := &violationSpan{v: v, at: int64(v.AtMs * float64(time.Millisecond))}
	find := func(ref checker.OpRef) *window {
		id := ref.Acq
		if id == 0 {
			id = m.acqOf(ref.ID)
		}
		if j, ok := m.byAcq[id]; ok {
			return &m.windows[j]
		}
		return nil
	}
	s.a, s.b = find(v.A), find(v.B)
	if s.a == s.b {
		s.b = nil
	}
	s.f0, s.f1 = s.at, s.at
	for _, w := range []*window{s.a, s.b} {
		if w == nil {
			continue
		}
		if s.f0 == 0 && s.f1 == 0 || w.call < s.f0 {
			s.f0 = w.call
		}
		if w.end > s.f1 {
			s.f1 = m.clip(w.end)
		}
	}
	if s.a == nil && s.b == nil {
		ttl := m.meta.TTLNs
		if ttl <= 0 {
			ttl = int64(time.Second)
		}
		s.f0, s.f1 = max(0, s.at-ttl), s.at+ttl
	}
	if s.at == 0 && s.b != nil {
		s.at = s.b.grant
	}
	return s
}

// scale maps run time to x over [from, to].
type scale struct {
	from, to int64
	x0, w    float64
}

func (s scale) x(t int64) float64 {
	if t <= s.from {
		return s.x0
	}
	if t >= s.to {
		return s.x0 + s.w
	}
	return s.x0 + float64(t-s.from)/float64(s.to-s.from)*s.w
}

func (s scale) in(a, b int64) bool { return b >= s.from && a <= s.to }

// buildTimeline draws the clients of m over [from, to]. Operations are drawn one by one unless
// aggregate is set, when holding windows become per-column density.
func buildTimeline(m *runModel, vs *violationSpan, id, title string, from, to int64, aggregate, marker bool) *timelineView {
	if to <= from {
		to = from + int64(time.Millisecond)
	}
	v := &timelineView{ID: id, Title: title, Width: tlWidth, From: from, To: to, Aggregated: aggregate}
	sc := scale{from: from, to: to, x0: tlLeft, w: tlWidth - tlLeft - tlRight}
	lane := make(map[int]int, len(m.clients))
	for i, c := range m.clients {
		lane[c] = i
	}

	// Fault labels sit in rows above the lanes; pack them first to know where the lanes start.
	bands, labels, rows := faultShapes(m, sc)
	top := 4 + float64(rows)*labelRowH
	lanesH := float64(len(m.clients)) * laneH
	v.Height = top + lanesH + axisH
	laneTop := func(c int) float64 { return top + float64(lane[c])*laneH }
	mid := func(c int) float64 { return laneTop(c) + laneH/2 }

	for i, c := range m.clients {
		cls := "lane"
		if i%2 == 1 {
			cls = "lane alt"
		}
		v.LaneBG = append(v.LaneBG, svgRect{X: tlLeft, Y: top + float64(i)*laneH, W: sc.w, H: laneH, Class: cls})
		v.LaneLabels = append(v.LaneLabels, svgText{X: tlLeft - 8, Y: top + float64(i)*laneH + laneH/2 + 4,
			Text: "client " + strconv.Itoa(c), Class: "lane-label", Anchor: "end"})
	}
	for _, d := range m.danger {
		if !sc.in(d[0], d[1]) {
			continue
		}
		x0, x1 := sc.x(d[0]), sc.x(d[1])
		v.Danger = append(v.Danger, svgRect{X: x0, Y: top, W: max(x1-x0, 1), H: lanesH, Class: "danger",
			Title: fmt.Sprintf("danger window %s → %s: from the fault until one lease after it healed; writes and grants here are what the fault put at risk",
				history.FormatNs(d[0]), history.FormatNs(d[1]))})
	}
	for _, t := range axisTicks(from, to) {
		x := sc.x(t)
		v.Grid = append(v.Grid, svgLine{X1: x, Y1: top, X2: x, Y2: top + lanesH + 4, Class: "grid"})
		v.AxisLabels = append(v.AxisLabels, svgText{X: x, Y: top + lanesH + 16, Text: history.FormatNs(t), Class: "axis", Anchor: "middle"})
	}
	for _, b := range bands {
		if b.client != 0 {
			if _, ok := lane[b.client]; ok {
				b.r.Y, b.r.H = laneTop(b.client), laneH
				v.Faults = append(v.Faults, b.r)
				continue
			}
		}
		b.r.Y, b.r.H = top, lanesH
		v.Faults = append(v.Faults, b.r)
	}
	for _, l := range labels {
		l.Y = 4 + l.Y*labelRowH + 11
		v.FaultLabels = append(v.FaultLabels, l)
	}

	if aggregate {
		v.Density = density(m, sc, func(c int) float64 { return mid(c) - barH/2 })
		v.Note = fmt.Sprintf("%d holding windows aggregated: shade = share of each %.0f-pixel column a client held the lock.",
			len(m.windows), densityColW)
	} else {
		drawDetail(m, vs, v, sc, mid)
	}
	if vs != nil {
		v.Violation = violationShapes(m, vs, sc, mid, top, lanesH, marker)
	}
	return v
}

// drawDetail draws every operation in range, within the detail budget: when there are more,
// the ticks of windows other than the violating ones go first, then whatever is left over.
func drawDetail(m *runModel, vs *violationSpan, v *timelineView, sc scale, mid func(int) float64) {
	budget := detailBudget
	for _, a := range m.attempts {
		if !sc.in(a.call, a.end) || budget <= 0 {
			continue
		}
		budget--
		v.Attempts = append(v.Attempts, svgLine{X1: sc.x(a.call), Y1: mid(a.client), X2: max(sc.x(a.end), sc.x(a.call)+0.5),
			Y2: mid(a.client), Class: "attempt " + string(a.status),
			Title: fmt.Sprintf("client %d acquire %s → %s (%s)", a.client, history.FormatNs(a.call), history.FormatNs(a.end), a.status)})
	}
	for _, w := range m.windows {
		end := m.clip(w.end)
		if !sc.in(w.grant, end) || budget <= 0 {
			continue
		}
		budget--
		x0, x1 := sc.x(w.grant), sc.x(end)
		title := fmt.Sprintf("client %d held the lock %s → %s (%s)", w.client, history.FormatNs(w.grant), history.FormatNs(end), history.FormatNs(end-w.grant))
		if w.fence != 0 {
			title += fmt.Sprintf(", fence %d", w.fence)
		}
		y := mid(w.client) - barH/2
		v.Holds = append(v.Holds, svgRect{X: x0, Y: y, W: max(x1-x0, 1), H: barH, Class: "hold", Title: title})
		if m.illegal[w.acq] {
			x := sc.x(w.grant)
			v.Illegal = append(v.Illegal, svgLine{X1: x, Y1: y - 5, X2: x, Y2: y + barH + 5, Class: "illegal-grant",
				Title: fmt.Sprintf("client %d was granted the lock at %s while another client's lease was still valid (a service violation)", w.client, history.FormatNs(w.grant))})
		}
		if w.expiry > 0 && w.expiry < end {
			xe := sc.x(max(w.expiry, w.grant))
			v.Expired = append(v.Expired, svgRect{X: xe, Y: y, W: max(x1-xe, 1), H: barH, Class: "expired",
				Title: fmt.Sprintf("client %d still using the lock %s after its lease expired at %s", w.client, history.FormatNs(end-w.expiry), history.FormatNs(w.expiry))})
		}
	}
	keep := func(acq int64) bool {
		return vs != nil && (vs.a != nil && vs.a.acq == acq || vs.b != nil && vs.b.acq == acq)
	}
	for _, l := range m.leases {
		end := m.clip(l.End)
		if !sc.in(l.Start, end) || (budget <= 0 && !keep(l.Acq)) {
			continue
		}
		budget--
		x0, x1 := sc.x(l.Start), sc.x(end)
		how := "could first have expired"
		if l.Released {
			how = "its holder began releasing it"
		}
		if l.End == history.Never {
			how = "never expires"
		}
		v.Leases = append(v.Leases, svgRect{X: x0, Y: mid(l.Client) + barH/2 + 1, W: max(x1-x0, 1), H: 3, Class: "lease",
			Title: fmt.Sprintf("client %d's lease (acq %d) as the service enforces it: from its winning attempt at %s until %s at %s",
				l.Client, l.Acq, history.FormatNs(l.Start), how, history.FormatNs(end))})
	}
	for _, a := range m.accesses {
		if !sc.in(a.call, a.end) || (budget <= 0 && !keep(a.acq)) {
			continue
		}
		budget--
		x := sc.x(a.call)
		c := mid(a.client)
		cls, y1, y2 := "tick read", c-barH/2-4, c-barH/2+3
		if a.op == history.OpWrite {
			cls, y1, y2 = "tick write", c-barH/2-3, c+barH/2+3
		}
		cls += " " + string(a.status)
		title := fmt.Sprintf("client %d %s at %s", a.client, a.op, history.FormatNs(a.call))
		if a.value != nil {
			title += fmt.Sprintf(" value %d", *a.value)
		}
		title += " (" + string(a.status) + ")"
		if a.err != "" {
			title += ": " + a.err
		}
		v.Ticks = append(v.Ticks, svgLine{X1: x, Y1: y1, X2: x, Y2: y2, Class: cls, Title: title})
	}
	for _, r := range m.releases {
		if !sc.in(r.call, r.end) || budget <= 0 {
			continue
		}
		budget--
		c := mid(r.client)
		x0, x1 := sc.x(r.call), sc.x(r.end)
		v.Releases = append(v.Releases, svgLine{X1: x0, Y1: c, X2: max(x1, x0+1.5), Y2: c, Class: "release " + string(r.status),
			Title: fmt.Sprintf("client %d release %s → %s (%s)", r.client, history.FormatNs(r.call), history.FormatNs(r.end), r.status)})
	}
	if budget < 0 {
		v.Note = "Too many operations to draw here: some are left out; the violating windows are complete."
	}
}

// density aggregates holding windows into columns per lane: the share of each column's time a
// client held the lock, in ten steps, with runs of equal steps merged into one rectangle.
func density(m *runModel, sc scale, top func(int) float64) []svgRect {
	cols := int(math.Ceil(sc.w / densityColW))
	per := float64(sc.to-sc.from) / float64(cols) // ns per column
	held := make(map[int][]float64, len(m.clients))
	for _, c := range m.clients {
		held[c] = make([]float64, cols)
	}
	for _, w := range m.windows {
		a, b := max(w.grant, sc.from), min(m.clip(w.end), sc.to)
		h := held[w.client]
		if b < a || h == nil {
			continue
		}
		c0, c1 := float64(a-sc.from)/per, float64(b-sc.from)/per
		for i := int(c0); i < cols && float64(i) < c1; i++ {
			lo, hi := max(c0, float64(i)), min(c1, float64(i+1))
			h[i] += hi - lo
		}
		if b == a && int(c0) < cols { // an instant still shows
			h[int(c0)] += 0.01
		}
	}
	var out []svgRect
	for _, c := range m.clients {
		h := held[c]
		for i := 0; i < cols; {
			lvl := quantize(h[i])
			j := i + 1
			for j < cols && quantize(h[j]) == lvl {
				j++
			}
			if lvl > 0 {
				out = append(out, svgRect{X: sc.x0 + float64(i)*densityColW, Y: top(c), W: float64(j-i) * densityColW, H: barH,
					Class: "density", Opacity: 0.2 + 0.8*float64(lvl)/10})
			}
			i = j
		}
	}
	return out
}

func quantize(f float64) int {
	if f <= 0 {
		return 0
	}
	return max(1, min(10, int(math.Round(f*10))))
}

// faultBand is a fault's shaded interval; client is the lane it hits, 0 for all lanes.
type faultBand struct {
	r      svgRect
	client int
}

// faultShapes places fault bands on the scale and packs their labels into at most maxLabRows
// rows (svgText.Y holds the row index); a label that fits no row is left to the band's tooltip.
func faultShapes(m *runModel, sc scale) (bands []faultBand, labels []svgText, rows int) {
	var rowEnd [maxLabRows]float64
	for _, f := range m.faults {
		end := m.clip(f.End)
		if !sc.in(f.Start, end) {
			continue
		}
		x0, x1 := sc.x(f.Start), sc.x(end)
		cls := "fault"
		if f.End == history.Never {
			cls += " open"
		}
		if f.Error != "" {
			cls += " failed"
		}
		name := f.Name
		if f.Target != "" {
			name += " → " + f.Target
		}
		title := fmt.Sprintf("fault %d: %s, %s → %s", f.ID, name, history.FormatNs(f.Start), history.FormatNs(f.End))
		if f.Point != "" {
			title += " at " + f.Point
		}
		if f.Detail != "" {
			title += " (" + f.Detail + ")"
		}
		if f.Error != "" {
			title += "; error: " + f.Error
		}
		bands = append(bands, faultBand{r: svgRect{X: x0, W: max(x1-x0, 2), Class: cls, Title: title}, client: faultLane(&f)})
		if len(m.faults) > maxFaultBands {
			continue
		}
		text := name
		if len([]rune(text)) > 40 {
			text = string([]rune(text)[:39]) + "…"
		}
		w := float64(len([]rune(text)))*charW + 6
		// A label near the right edge is pulled left so it is not cut off.
		lx := min(x0, tlWidth-w)
		for r := 0; r < maxLabRows; r++ {
			if lx >= rowEnd[r] {
				rowEnd[r] = lx + w
				labels = append(labels, svgText{X: lx + 2, Y: float64(r), Text: text, Class: "fault-label", Anchor: "start"})
				rows = max(rows, r+1)
				break
			}
		}
	}
	if len(bands) > maxFaultBands {
		bands = mergeBands(bands)
	}
	return bands, labels, rows
}

// mergeBands merges bands of the same lane that touch on screen, so a schedule of thousands of
// short faults costs a bounded number of elements.
func mergeBands(bands []faultBand) []faultBand {
	sort.SliceStable(bands, func(i, j int) bool {
		if bands[i].client != bands[j].client {
			return bands[i].client < bands[j].client
		}
		return bands[i].r.X < bands[j].r.X
	})
	var out []faultBand
	n := 0
	for _, b := range bands {
		if k := len(out) - 1; k >= 0 && out[k].client == b.client && b.r.X <= out[k].r.X+out[k].r.W+1 {
			out[k].r.W = max(out[k].r.W, b.r.X+b.r.W-out[k].r.X)
			n++
			out[k].r.Title = fmt.Sprintf("%d faults", n)
			continue
		}
		n = 1
		out = append(out, b)
	}
	return out
}

// faultLane returns the client whose lane fault f is drawn in: the one client it targeted when
// it targeted nothing else (a pause, a crash), else 0 (every lane).
func faultLane(f *history.FaultSpan) int {
	if len(f.TargetClients) != 1 || len(f.TargetNodes) > 0 || f.TargetClients[0] <= 0 {
		return 0
	}
	return f.TargetClients[0]
}

func violationShapes(m *runModel, vs *violationSpan, sc scale, mid func(int) float64, top, lanesH float64, marker bool) *violationView {
	vv := &violationView{Marker: marker}
	for _, w := range []*window{vs.a, vs.b} {
		if w == nil {
			continue
		}
		x0, x1 := sc.x(w.grant), sc.x(m.clip(w.end))
		vv.Outlines = append(vv.Outlines, svgRect{X: x0 - 1.5, Y: mid(w.client) - barH/2 - 3, W: max(x1-x0, 1) + 3, H: barH + 6, Class: "violation-outline",
			Title: fmt.Sprintf("client %d's window %s → %s", w.client, history.FormatNs(w.grant), history.FormatNs(m.clip(w.end)))})
	}
	if vs.a != nil && vs.b != nil {
		o0, o1 := max(vs.a.grant, vs.b.grant), min(m.clip(vs.a.end), m.clip(vs.b.end))
		if o1 > o0 {
			x0, x1 := sc.x(o0), sc.x(o1)
			y0 := min(mid(vs.a.client), mid(vs.b.client)) - barH/2 - 3
			y1 := max(mid(vs.a.client), mid(vs.b.client)) + barH/2 + 3
			vv.Overlap = &svgRect{X: x0, Y: y0, W: max(x1-x0, 2), H: y1 - y0, Class: "overlap",
				Title: "both held the lock for " + history.FormatNs(o1-o0)}
			vv.Desc = fmt.Sprintf("client %d and client %d both held the lock for %s, from %s",
				vs.a.client, vs.b.client, history.FormatNs(o1-o0), history.FormatNs(o0))
		}
	}
	if vv.Desc == "" {
		// No overlap of length to show (an illegal grant to a client that had not yet touched
		// the resource, a lost update): the report's Cause line says what the checker found.
		if vs.v.Cause == "" {
			vv.Desc = fmt.Sprintf("%s at %s", vs.v.Kind, history.FormatNs(vs.at))
		}
	}
	x := sc.x(vs.at)
	vv.Line = svgLine{X1: x, Y1: top - 2, X2: x, Y2: top + lanesH + 2, Class: "violation-line"}
	anchor, lx := "start", x+4
	if x > sc.x0+sc.w*0.7 {
		anchor, lx = "end", x-4
	}
	vv.Label = svgText{X: lx, Y: top + lanesH - 4, Text: "first violation", Class: "violation-label", Anchor: anchor}
	return vv
}

// axisTicks returns round times between from and to, about ten of them. Steps above a second
// are whole seconds and minutes, as people read run times.
func axisTicks(from, to int64) []int64 {
	raw := float64(to-from) / 10
	var st int64
	if raw > float64(time.Second) {
		st = int64(time.Second)
		for _, s := range []time.Duration{2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second,
			30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute, time.Hour} {
			if float64(st) >= raw {
				break
			}
			st = int64(s)
		}
	} else {
		step := math.Pow(10, math.Floor(math.Log10(max(raw, 1))))
		for _, k := range []float64{1, 2, 5, 10} {
			if step*k >= raw {
				step *= k
				break
			}
		}
		st = int64(max(step, 1))
	}
	var ts []int64
	for t := (from + st - 1) / st * st; t <= to; t += st {
		ts = append(ts, t)
	}
	return ts
}
