package history

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// FormatNs prints a span of nanoseconds for people, as every page and line of lockchaos does:
// at most three significant digits in the unit that fits (1.71 s, 420 ms, 50 ms, 80.5 µs,
// 2m03.0s), "never" for
// Never.
func FormatNs(ns int64) string {
	if ns == Never {
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

// FormatMs is FormatNs of a span in milliseconds (result.json's unit).
func FormatMs(ms float64) string { return FormatNs(int64(ms * float64(time.Millisecond))) }

// trim3 prints v (< 1000) with at most three significant digits and no trailing zeros: 420,
// 50.4, 50, 1.71, 4.
func trim3(v float64) string {
	prec := 2
	switch {
	case v >= 99.95:
		prec = 0
	case v >= 9.995:
		prec = 1
	}
	s := strconv.FormatFloat(v, 'f', prec, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}
