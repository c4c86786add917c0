package explore

import (
	"context"
	"time"

	"github.com/lockchaos/lockchaos/checker"
)

// shrinkAll shrinks every pair that broke and has a size to shrink, in survey order, while the
// budget lasts.
func (x *explorer) shrinkAll(ctx context.Context) error {
	for _, e := range x.rep.Experiments {
		if e.Status != StatusExplored || !e.Run.broke() || e.Param == "" {
			continue
		}
		if err := x.shrink(ctx, e); err != nil {
			return err
		}
	}
	return nil
}

// resolution is where a shrink stops: 2% of the TTL, at least 2 ms.
func (x *explorer) resolution() time.Duration {
	return max(2*time.Millisecond, x.o.TTL/50)
}

// shrink binary-searches the smallest fault size that still breaks the pair. The survey's size is
// known to break it; 0 (no fault) is assumed not to, and a lock that breaks with no fault at all
// converges near 0, which says so. A size breaks if any of Runs runs is unsafe or stuck: a failure
// depends on scheduling, and one bad run proves it possible. Only the survey's failure counts (same
// verdict and class).
func (x *explorer) shrink(ctx context.Context, e *Experiment) error {
	sh := &Shrink{Hi: e.Tried, Resolution: d(x.resolution())}
	e.Shrink = sh
	best := e.Run
	lo, hi := time.Duration(0), e.Tried.D()
	for hi-lo > x.resolution() {
		mid := (lo + hi) / 2
		mid = mid.Round(time.Millisecond)
		p := Probe{Param: d(mid)}
		var broke *Attempt
		for i := 1; i <= x.o.Runs && broke == nil; i++ {
			if x.spent(ctx) {
				sh.Stopped = "budget spent"
				break
			}
			r, err := x.run(ctx, e, mid, i)
			if err != nil {
				return err
			}
			p.Runs = append(p.Runs, *r)
			if r.same(e.Run) {
				broke = r
			}
		}
		if sh.Stopped != "" {
			if len(p.Runs) > 0 {
				sh.Probes = append(sh.Probes, p)
			}
			break
		}
		p.Broke = broke != nil
		sh.Probes = append(sh.Probes, p)
		if p.Broke {
			hi, best = mid, *broke
		} else {
			lo = mid
		}
	}
	sh.Lo, sh.Hi = d(lo), d(hi)
	sh.Converged = sh.Stopped == ""
	sh.MinRun = best
	e.Min = &sh.Hi
	return nil
}

// broke reports whether the run showed a failure worth shrinking.
func (r Attempt) broke() bool { return r.Verdict == checker.Unsafe || r.Verdict == checker.Stuck }

// same reports whether r shows the failure of the survey's run s: the same verdict and class. A
// smaller fault that breaks the lock another way is another failure, not a smaller one.
func (r Attempt) same(s Attempt) bool {
	return r.broke() && r.Verdict == s.Verdict && r.Class == s.Class
}
