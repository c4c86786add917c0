package checker

import (
	"fmt"
	"io"
	"sync/atomic"

	"github.com/lockchaos/lockchaos/history"
)

// Progress is what a history watched as it is written has shown so far (Watch).
type Progress struct {
	// Ops is how many operations were checked, AtMs how far into the run they go.
	Ops  int     `json:"ops"`
	AtMs float64 `json:"at_ms"`
	// Segments were checked; Unjudged of them the live check left to the whole check (a
	// violation against the previous segment's last holder, counted once in Violations, a
	// porcupine timeout, ...).
	Segments int `json:"segments"`
	Unjudged int `json:"unjudged"`
	// UnjudgedWhy says why the first unjudged segment could not be judged on its own.
	UnjudgedWhy string `json:"unjudged_why,omitempty"`
	// Violations counts the overlapping holders and illegal grants the segments showed;
	// FirstViolationMs is the earliest (-1 while there is none).
	Violations       int     `json:"violations"`
	FirstViolationMs float64 `json:"first_violation_ms"`
	// FaultsFired counts the fault occurrences started so far.
	FaultsFired int `json:"faults_fired"`
}

// Watch checks a history as it is written: r is read until it ends (io.EOF), cut where no
// acquisition is held as CheckReader cuts a long history, and each segment is checked from the
// state the previous one ended in, the sweeps through the run carried from segment to segment.
// seen hears the progress after each segment. It is the live view of a long run (lockchaos
// soak): memory holds one segment, and a violation shows a segment after it happened. The verdict
// is CheckReader's, of the whole history: where a segment cannot be judged on its own here, Watch
// counts it Unjudged and carries on from the next one afresh.
func Watch(r io.Reader, opts Options, minOps int, seen func(Progress)) error {
	opts.SkipVisualization = true
	pr := Progress{FirstViolationMs: -1}
	m := newMerger(opts)
	found := 0 // violations of the mergers before m
	var prev *segJob
	var lastFault int64
	var never atomic.Bool
	_, err := history.ReadSegments(r, minOps, cuttable(opts), func(seg *history.Segment) error {
		j := &segJob{seg: seg, prev: prev, exit: make(chan segExit, 1), done: make(chan *segPart, 1)}
		p := checkSegment(j, opts, &never)
		j.seg, j.prev = nil, nil
		prev = j
		pr.Segments++
		pr.Ops += len(seg.Ops) // the carried acquires were not in the previous segment
		pr.AtMs = ms(seg.End)
		for _, f := range seg.Faults {
			// A fault lasting into the next segment is in both; the harness's own stalls are
			// numbered apart (from 2^40) and an arming line is no occurrence: neither may move
			// the mark, or every fault after the first stall went uncounted.
			if f.Arm || f.ActsOn == history.ActsOnHarness || f.ID <= lastFault {
				continue
			}
			pr.FaultsFired++
			lastFault = f.ID
		}
		if !m.add(p) {
			pr.Unjudged++
			if pr.UnjudgedWhy == "" {
				pr.UnjudgedWhy = fmt.Sprintf("segment %d (%s to %s): %s", pr.Segments, history.FormatMs(ms(seg.Start)), history.FormatMs(pr.AtMs), m.why)
			}
			found += m.found
			// What the segment shows on its own: the whole check will name those and more.
			found += m.left
			if m.left > 0 && (pr.FirstViolationMs < 0 || m.leftAtMs < pr.FirstViolationMs) {
				pr.FirstViolationMs = m.leftAtMs
			}
			m = newMerger(opts)
		}
		pr.Violations = found + m.found
		for _, f := range m.firstOf {
			if pr.FirstViolationMs < 0 || f[0] < pr.FirstViolationMs {
				pr.FirstViolationMs = f[0]
			}
		}
		seen(pr)
		return nil
	})
	return err
}
