package checker

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockchaos/lockchaos/history"
)

// A long history is checked in segments, never all in memory (issue 19):
//
//	file ──ReadSegments──> segments ──workers (GOMAXPROCS)──> parts ──merge, in order──> Outcome
//
// history.ReadSegments cuts the history where no acquisition is held, carrying the acquires still
// waiting into the next segment, where the checker approves (cuttable: the lock's state there is
// certain). Each worker checks one segment as CheckRun checks a history — exclusion, the porcupine
// checks from the state the previous segment ended in (cut.go), counts, the danger windows of the
// faults started so far — and the merger runs the sweeps that go through the whole run in order
// (illegal grants, lost updates, fences, stalls) from the state the previous segment left, and
// puts the violations in CheckRun's order. A segment's windows all end before the cut and the next
// one's start after it, so no overlap is split by a cut.
//
// What the segments cannot decide exactly as CheckRun stops them, and the history is read and
// checked whole as before: more than one lock, a cut whose waiters turn out not to fit, a grant or
// a lost update against the previous segment's last, an illegal grant only porcupine finds, a
// stuck run, a porcupine timeout, a fault that failed only when it healed after a cut.

var (
	// streamFrom is the size in bytes from which a history is checked in segments.
	streamFrom int64 = 64 << 20
	// segmentOps is the fewest operations of a segment.
	segmentOps = 20_000
)

// errUnclean stops a segmented check that cannot decide as CheckRun would.
var errUnclean = errors.New("checker: the history needs the whole check")

// CheckReader checks the history r of size bytes: a history under 64 MB is read whole and
// checked by CheckRun; a longer one is checked in segments as it is read, with the same result
// (and read again whole when the segments cannot decide as CheckRun would, see above). It
// returns the run the reports draw — the whole history, or for one checked in segments the
// segment of its first violation (else its first), with a warning that says so — and the outcome.
func CheckReader(r io.ReadSeeker, size int64, opts Options) (*history.Run, *Outcome, error) {
	if size >= streamFrom {
		h, out, err := checkSegments(r, opts, segmentOps)
		if !errors.Is(err, errUnclean) && !errors.Is(err, history.ErrUnsegmentable) {
			return h, out, err
		}
		if _, err := r.Seek(0, io.SeekStart); err != nil {
			return nil, nil, fmt.Errorf("history: %w", err)
		}
	}
	h, err := history.ReadRun(r, size)
	if err != nil {
		return nil, nil, err
	}
	return h, CheckRun(h, opts), nil
}

// segJob is one segment on its way through the workers.
type segJob struct {
	seg  *history.Segment
	prev *segJob
	exit chan segExit // the states at its cut, sent first
	done chan *segPart
}

type segExit struct {
	lock          lockExit
	value         int64
	lockOk, resOk bool
}

// segPart is what a worker found in one segment.
type segPart struct {
	r        *run
	unclean  string // why the segment cannot be judged on its own ("": it can)
	lock     string // the segment's lock name ("" if it has no acquire)
	res      Result // counts of the segment
	lat      []int64
	heldNs   int64
	writes   int
	granted  map[int]bool
	reach    map[int64]int64 // how far each fault's danger window reached here (run.reach)
	resOps   []porcupine.Operation
	stalls   []stallEvent
	overlaps []overlap
	lockCk   Check
	resCk    Check
	lockLin  *Linearization
	resLin   *Linearization
	ws       []window
}

func checkSegments(in io.Reader, opts Options, minOps int) (*history.Run, *Outcome, error) {
	began := time.Now()
	workers := runtime.GOMAXPROCS(0)
	jobs := make(chan *segJob)
	order := make(chan *segJob, workers) // bounds the segments in flight
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				p := checkSegment(j, opts, &stop)
				j.seg, j.prev = nil, nil // the next job holds this one: let its segment go
				j.done <- p
			}
		}()
	}
	m := newMerger(opts)
	merged := make(chan struct{})
	go func() {
		defer close(merged)
		for j := range order {
			p := <-j.done
			if !stop.Load() && !m.add(p) {
				stop.Store(true)
			}
		}
	}()
	var prev *segJob
	h, err := history.ReadSegments(in, minOps, cuttable(opts), func(seg *history.Segment) error {
		if stop.Load() {
			return errUnclean
		}
		j := &segJob{seg: seg, prev: prev, exit: make(chan segExit, 1), done: make(chan *segPart, 1)}
		prev = j
		order <- j
		jobs <- j
		return nil
	})
	close(jobs)
	close(order)
	<-merged
	wg.Wait()
	if err != nil {
		return nil, nil, err
	}
	if stop.Load() {
		return nil, nil, errUnclean
	}
	return m.finish(h, began)
}

// checkSegment checks one segment; the sweeps through the whole run are left to the merger.
func checkSegment(j *segJob, opts Options, stop *atomic.Bool) *segPart {
	seg := j.seg
	r := newRun(&history.Run{Meta: seg.Meta, Ops: seg.Ops, Faults: seg.Faults, End: seg.End, Wire: releaseWire(seg.Ops, seg.Wire)}, opts)
	seg.Wire = nil
	p := &segPart{r: r, granted: map[int]bool{}}
	// The states at the cut, which the next segment waits for: computed first, and without
	// waiting for the previous segment's unless this one has no resource operation.
	ex := segExit{}
	ex.lock, ex.lockOk = r.lockExit(seg.Cut)
	resOps := r.resourceOps()
	if len(resOps) > 0 {
		ex.value, ex.resOk = resourceExit(resOps, seg.Cut)
		j.exit <- ex
	}
	var from *segExit
	if j.prev != nil {
		f := <-j.prev.exit
		from = &f
		first := int64(0)
		if len(resOps) > 0 {
			first = resOps[0].Call
		}
		init := porcupine.Operation{Input: resInput{kind: resInit, v: f.value, read: -1, write: -1}, Call: first - 1, Return: first - 1}
		resOps = append([]porcupine.Operation{init}, resOps...)
	}
	if len(resOps) == 0 || (from != nil && len(resOps) == 1) {
		ex.value, ex.resOk = 0, true
		if from != nil {
			ex.value, ex.resOk = from.value, from.resOk
		}
		j.exit <- ex
	}

	// Why the segment cannot be judged on its own: its own operations (then nothing of it is
	// read here), or the state it starts from (then its overlapping holders, facts of its own
	// operations, are still counted by the live check).
	for i := range r.ops {
		o := &r.ops[i]
		if o.Acq != 0 {
			if _, ok := r.acquireOf(o); !ok && p.unclean == "" {
				p.unclean = fmt.Sprintf("operation %d refers to an acquire of another segment", o.ID)
			}
		}
		if o.Op == history.OpAcquire {
			if p.lock != "" && o.Lock != p.lock && p.unclean == "" {
				p.unclean = "it has acquires of more than one lock"
			}
			p.lock = o.Lock
		}
	}
	switch {
	case p.unclean != "":
	case len(r.warnings) > 0:
		p.unclean = r.warnings[0]
	case stop.Load():
		p.unclean = "the check was stopped"
	}
	if p.unclean != "" {
		return p
	}
	p.ws = r.windows()
	p.heldNs = heldNs(p.ws)
	p.overlaps = r.exclusion(p.ws)
	switch {
	case from != nil && !from.lockOk:
		p.unclean = "the lock's state at the cut before it is uncertain"
	case from != nil && !from.resOk:
		p.unclean = "the counter's value at the cut before it is uncertain (its last operation overlapped another)"
	case from != nil && !r.waitersFit(seg.Carried, from.lock):
		p.unclean = "an acquire carried over the cut before it does not fit the state there"
	}
	if p.unclean != "" {
		return p
	}
	if from != nil {
		r.lockFrom = &from.lock
	}
	verbose := j.prev == nil && !opts.SkipVisualization
	h, parts := r.lockHistory()
	r.lockOps, r.lockParts = h, parts
	p.lockCk, p.lockLin = r.linearize(lockModel(parts), h, func(in any) int { return in.(lockInput).part }, verbose)
	rh, rparts := segment(resOps)
	p.resCk, p.resLin = r.linearize(resourceModel(rparts), rh, func(in any) int { return in.(resInput).part }, verbose)
	if p.lockCk.Result == string(porcupine.Unknown) || p.resCk.Result == string(porcupine.Unknown) {
		p.unclean = "a linearizability check timed out" // the whole check says what it says
		return p
	}
	p.lat, p.writes = r.tally(&p.res)
	// The faults that started before the cut are known, and a time in the segment is before both
	// the cut and the end of any fault still going on there: the danger windows are exact for it.
	occ := r.occurrences()
	r.evidenceCounts(&p.res, inWindowOf(attacksOf(occ)), p.granted)
	p.reach = make(map[int64]int64, len(occ))
	for _, o := range occ {
		p.reach[o.span.ID] = o.danger
	}
	for i := range r.ops {
		if w := &r.ops[i]; w.Op == history.OpWrite && w.Ok() {
			if j, ok := r.acquireOf(w); ok && expiredWrite(&r.ops[j], w) {
				p.res.ExpiredWrites++
			}
		}
	}
	p.resOps = resOps
	p.stalls = r.stallEvents(seg.Start, seg.Waiting)
	return p
}
