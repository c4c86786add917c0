package reports

import (
	"fmt"
)

// f1 prints an SVG coordinate: one decimal is below a pixel and keeps big pages small.
func f1(v float64) string { return fmt.Sprintf("%.1f", v) }
