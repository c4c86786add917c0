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
	Info  porcupine.LinearizationInfo
}
