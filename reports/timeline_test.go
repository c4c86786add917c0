package reports

import (
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/history"
)

func TestTimelineSmallUnsafe(t *testing.T) {
	h, out := pauseRun()
	m := buildModel(h.Run(), &out.Analysis)
	if got := m.clients; len(got) != 3 || got[0] != 1 || got[2] != 3 {
		t.Fatalf("clients = %v, want [1 2 3]", got)
	}
	vs := resolveViolation(m, &out.Result)
	if vs == nil || vs.a == nil || vs.b == nil {
		t.Fatalf("violation not resolved: %+v", vs)
	}
	if vs.a.client != 1 || vs.b.client != 2 {
		t.Fatalf("violation windows: clients %d and %d, want 1 and 2", vs.a.client, vs.b.client)
	}
	if vs.a.end != 1301*ms {
		t.Errorf("client 1's window ends at %s, want its late write's return (1.301 s)", history.FormatNs(vs.a.end))
	}
	tls := buildTimelines(m, vs)
	// The violation spans most of this short run, so the overview alone shows it, marker and all.
	if len(tls) != 1 {
		t.Fatalf("got %d timelines, want just the overview", len(tls))
	}
	detail, over := tls[0], tls[0]
	if over.Aggregated {
		t.Errorf("a 40-operation run must not be aggregated")
	}
	markers := 0
	for _, tl := range tls {
		if tl.Violation != nil && tl.Violation.Marker {
			markers++
		}
	}
	if markers != 1 || detail.Violation == nil || !detail.Violation.Marker {
		t.Fatalf("want exactly one marker; got %d", markers)
	}
	vv := detail.Violation
	if len(vv.Outlines) != 2 || vv.Overlap == nil {
		t.Fatalf("want two outlines and an overlap, got %+v", vv)
	}
	if !strings.Contains(vv.Desc, "client 1 and client 2 both held the lock for 23 ms, from 1.06 s") {
		t.Errorf("description = %q", vv.Desc)
	}
	if detail.From > 20*ms || detail.To < 1301*ms {
		t.Errorf("detail window %s..%s does not cover both windows", history.FormatNs(detail.From), history.FormatNs(detail.To))
	}
	// Client 1 used its lease after it expired at 1.02 s: an expired segment on its lane.
	if len(detail.Expired) == 0 {
		t.Errorf("no expired-lease segment drawn")
	}
	// The client-pause fault hits only client 1's lane; the node latency fault spans all lanes.
	var lane1, all bool
	for _, f := range over.Faults {
		if strings.Contains(f.Title, "client-pause") && f.H == laneH {
			lane1 = true
		}
		if strings.Contains(f.Title, "latency") && f.H == 3*laneH {
			all = true
		}
	}
	if !lane1 || !all {
		t.Errorf("fault bands: on client lane %v, across lanes %v; bands %+v", lane1, all, over.Faults)
	}
	if len(over.FaultLabels) != 2 {
		t.Errorf("fault labels = %d, want 2", len(over.FaultLabels))
	}
	if len(over.Ticks) == 0 || len(over.Releases) == 0 || len(over.Attempts) == 0 || len(over.Holds) != 12 {
		t.Errorf("overview: %d ticks, %d releases, %d attempts, %d holds (want 12)", len(over.Ticks), len(over.Releases), len(over.Attempts), len(over.Holds))
	}
}

func TestTimelineSafeHasNoMarker(t *testing.T) {
	h, out := safeRun()
	m := buildModel(h.Run(), &out.Analysis)
	tls := buildTimelines(m, resolveViolation(m, &out.Result))
	if len(tls) != 1 {
		t.Fatalf("a small safe run without faults needs only the overview, got %d views", len(tls))
	}
	if tls[0].Violation != nil {
		t.Fatalf("safe run has a violation view")
	}
}

func TestTimelineLargeStaysWithinBudget(t *testing.T) {
	h, out := bigRun(1, 5, 10*time.Minute, 100_000)
	m := buildModel(h.Run(), &out.Analysis)
	vs := resolveViolation(m, &out.Result)
	if vs == nil || vs.a == nil || vs.b == nil {
		t.Fatalf("violation not resolved in the big run")
	}
	tls := buildTimelines(m, vs)
	if len(tls) != 2 {
		t.Fatalf("want detail + overview, got %d", len(tls))
	}
	detail, over := tls[0], tls[1]
	if !over.Aggregated {
		t.Errorf("overview of 100k operations is not aggregated")
	}
	if len(over.Density) == 0 {
		t.Errorf("aggregated overview draws no density")
	}
	for _, tl := range tls {
		if n := tl.elements(); n > 3000 {
			t.Errorf("%s view draws %d elements, want at most 3000", tl.ID, n)
		}
	}
	if detail.Violation == nil || !detail.Violation.Marker || len(detail.Violation.Outlines) != 2 {
		t.Errorf("detail view lacks the violation")
	}
	if detail.To-detail.From > int64(10*time.Second) {
		t.Errorf("detail window is %s wide", history.FormatNs(detail.To-detail.From))
	}
}

func TestAxisTicks(t *testing.T) {
	for _, c := range []struct {
		from, to int64
		step     int64
	}{
		{0, int64(10 * time.Minute), int64(time.Minute)},
		{0, 1900 * ms, 200 * ms},
		{1000 * ms, 1010 * ms, ms},
	} {
		ts := axisTicks(c.from, c.to)
		if len(ts) < 4 || len(ts) > 12 {
			t.Errorf("%d..%d: %d ticks", c.from, c.to, len(ts))
			continue
		}
		if ts[1]-ts[0] != c.step {
			t.Errorf("%d..%d: step %d, want %d", c.from, c.to, ts[1]-ts[0], c.step)
		}
	}
}

// A fault is drawn in the lane of the one client it targeted, by its line's target clients and
// nodes; lines written before they carried them, by what their target said.
func TestFaultLane(t *testing.T) {
	for _, tc := range []struct {
		e    history.Event
		want int
	}{
		{history.Event{Name: "client-pause", Target: "client-3"}, 3},
		{history.Event{Name: "partition", Target: "client-3 → redis-1"}, 0},
		{history.Event{Name: "partition", Target: "client-1,client-3"}, 0},
		{history.Event{Name: "kill", Target: "node-1"}, 0},
		{history.Event{Name: "client-crash", Target: ""}, 0},
		{history.Event{Name: "nap", Target: "someone", FaultMeaning: history.FaultMeaning{ActsOn: history.ActsOnProcess, TargetClients: []int{12}}}, 12},
		{history.Event{Name: "nap", Target: "client-12", FaultMeaning: history.FaultMeaning{ActsOn: history.ActsOnProcess, TargetClients: []int{12}, TargetNodes: []string{"redis-1"}}}, 0},
	} {
		f := history.FaultSpan{Name: tc.e.Name, Target: tc.e.Target, FaultMeaning: tc.e.Meaning()}
		if got := faultLane(&f); got != tc.want {
			t.Errorf("%s on %q %+v: lane %d, want %d", tc.e.Name, tc.e.Target, tc.e.FaultMeaning, got, tc.want)
		}
	}
}

func TestDensityBounded(t *testing.T) {
	h, out := bigRun(2, 20, time.Minute, 40_000)
	m := buildModel(h.Run(), &out.Analysis)
	sc := scale{from: 0, to: m.end, x0: tlLeft, w: tlWidth - tlLeft - tlRight}
	rects := density(m, sc, func(int) float64 { return 0 })
	if max := 20 * int((tlWidth-tlLeft-tlRight)/densityColW+1); len(rects) > max {
		t.Errorf("%d density rects, more than one per column and lane (%d)", len(rects), max)
	}
	for _, r := range rects {
		if r.Opacity <= 0 || r.Opacity > 1 {
			t.Fatalf("opacity %v out of range", r.Opacity)
		}
	}
}

func TestHistogram(t *testing.T) {
	h, out := pauseRun()
	hv := buildHistogram(buildModel(h.Run(), &out.Analysis), out.Result.AcquireLatencyMs.P50, out.Result.AcquireLatencyMs.P99)
	if hv.Empty || hv.Count != 12 || len(hv.Bars) == 0 || len(hv.Bars) > histBins {
		t.Fatalf("histogram: empty %v, count %d, %d bars", hv.Empty, hv.Count, len(hv.Bars))
	}
	if len(hv.Marks) != 2 {
		t.Errorf("want p50 and p99 marks, got %d", len(hv.Marks))
	}
}
