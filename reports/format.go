package reports

import (
	"fmt"
	"math"
	"time"
)

// fmtDur prints a nanosecond span for people: three significant digits, the unit that fits.
func fmtDur(ns int64) string {
	if ns == math.MaxInt64 {
		return "never"
	}
	neg := ""
	if ns < 0 {
		neg, ns = "-", -ns
	}
	d := time.Duration(ns)
	switch {
	case d >= time.Minute:
		m := int64(d / time.Minute)
		s := float64(d%time.Minute) / float64(time.Second)
		return fmt.Sprintf("%s%dm%04.1fs", neg, m, s)
	case d >= time.Second:
		return neg + trim3(float64(d)/float64(time.Second)) + " s"
	case d >= time.Millisecond:
		return neg + trim3(float64(d)/float64(time.Millisecond)) + " ms"
	case d >= time.Microsecond:
		return neg + trim3(float64(d)/float64(time.Microsecond)) + " µs"
	}
	return fmt.Sprintf("%s%d ns", neg, ns)
}

// fmtMs prints milliseconds as a duration.
func fmtMs(ms float64) string { return fmtDur(int64(ms * float64(time.Millisecond))) }

func trim3(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// f1 prints an SVG coordinate: one decimal is below a pixel and keeps big pages small.
func f1(v float64) string { return fmt.Sprintf("%.1f", v) }
