package checker

import "github.com/anishathalye/porcupine"

// Outcome is everything a check produced: the result.json object, and porcupine's models and
// linearization info for the visualization (nil when that check did not run).
type Outcome struct {
	Result   Result
	Analysis Analysis
	Lock     *Linearization
	Resource *Linearization
}

// Linearization is what porcupine.Visualize needs for one check.
type Linearization struct {
	Model porcupine.Model
	// Info covers the whole check, or on a long history the part Check.Visualized names (zero
	// when visualization was skipped).
	Info porcupine.LinearizationInfo

	ops    []porcupine.Operation // what was checked, for visualize
	partOf func(any) int
	window [2]int   // ops[window[0]:window[1]] are in Info, when visualize made it
	span   [2]int64 // their first and last calls
}
