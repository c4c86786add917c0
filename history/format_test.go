package history

import (
	"testing"
	"time"
)

func TestFormatNs(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{50 * time.Millisecond, "50 ms"},
		{50400 * time.Microsecond, "50.4 ms"},
		{1710 * time.Millisecond, "1.71 s"},
		{1700 * time.Millisecond, "1.7 s"},
		{4 * time.Millisecond, "4 ms"},
		{999960 * time.Microsecond, "1000 ms"},
		{420 * time.Millisecond, "420 ms"},
		{80500 * time.Nanosecond, "80.5 µs"},
		{0, "0 ns"},
		{12, "12 ns"},
		{-3 * time.Second, "-3 s"},
		{123 * time.Second, "2m03.0s"},
		{time.Duration(Never), "never"},
	} {
		if got := FormatNs(int64(c.d)); got != c.want {
			t.Errorf("FormatNs(%v) = %q, want %q", c.d, got, c.want)
		}
	}
}
