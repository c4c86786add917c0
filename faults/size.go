package faults

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Size is how long a fault lasts or how much it moves (For, AtLeast, Amount): a fixed duration
// plus multiples of the lease of the lock under test and of its background renewal period,
// resolved when the fault fires against the lease the lock really holds (Env.Lease, Env.Renews;
// docs/design.md#faults-sized-to-the-lease). A scenario file writes it as a sum: "900ms" (fixed), "lease+400ms",
// "1.5lease", "2lease+renewal+300ms". A fault sized in leases fits any lock: a pause of
// lease+400ms outlasts a 1 s lease as it does the catalogue's 500 ms one.
type Size struct {
	// Fixed is the absolute part; once resolved (Spec.Sized) it is the whole size.
	Fixed time.Duration
	// Leases and Renewals are the multiples of the lease and of its renewal period.
	Leases, Renewals float64
}

// Fixed returns the absolute size d.
func Fixed(d time.Duration) Size { return Size{Fixed: d} }

// Leases returns n leases plus d: Leases(1, 400*time.Millisecond) is "lease+400ms".
func Leases(n float64, d time.Duration) Size { return Size{Fixed: d, Leases: n} }

// D returns the fixed part: the whole size of a resolved one (Spec.Sized), and of one written
// without leases.
func (z Size) D() time.Duration { return z.Fixed }

// Resolve returns the size for a lock whose lease is lease, renewed every renews (0: not renewed
// in the background).
func (z Size) Resolve(lease, renews time.Duration) time.Duration {
	return z.Fixed + time.Duration(math.Round(z.Leases*float64(lease))) + time.Duration(math.Round(z.Renewals*float64(renews)))
}

// Relative reports whether z depends on the lock's lease or renewal period.
func (z Size) Relative() bool { return z.Leases != 0 || z.Renewals != 0 }

// IsZero reports whether z is unset (omitted from YAML and JSON).
func (z Size) IsZero() bool { return z == Size{} }

// positive reports whether z is more than nothing at any lease.
func (z Size) positive() bool {
	return z.Fixed >= 0 && z.Leases >= 0 && z.Renewals >= 0 && !z.IsZero()
}

// negative reports whether any part of z is negative.
func (z Size) negative() bool { return z.Fixed < 0 || z.Leases < 0 || z.Renewals < 0 }

// noLonger reports whether z is at most o at every lease and renewal period.
func (z Size) noLonger(o Size) bool {
	return z.Fixed <= o.Fixed && z.Leases <= o.Leases && z.Renewals <= o.Renewals
}

// String writes z as a scenario file does: "lease+400ms", "1.5lease", "900ms".
func (z Size) String() string {
	var parts []string
	term := func(n float64, unit string) {
		switch n {
		case 0:
		case 1:
			parts = append(parts, unit)
		default:
			parts = append(parts, strconv.FormatFloat(n, 'f', -1, 64)+unit)
		}
	}
	term(z.Leases, "lease")
	term(z.Renewals, "renewal")
	if z.Fixed != 0 || len(parts) == 0 {
		parts = append(parts, z.Fixed.String())
	}
	return strings.ReplaceAll(strings.Join(parts, "+"), "+-", "-")
}

// ParseSize reads a size: a Go duration, "lease" or "renewal" with an optional factor, or a sum
// of them ("2lease+300ms"); a leading "-" negates the whole (a clock running behind).
func ParseSize(s string) (Size, error) {
	t := strings.ReplaceAll(strings.TrimSpace(s), " ", "")
	neg := strings.HasPrefix(t, "-")
	t = strings.TrimPrefix(t, "-")
	var z Size
	bad := func() (Size, error) {
		return Size{}, fmt.Errorf("bad size %q (write a duration like 500ms, or in leases of the lock: lease+400ms, 1.5lease, 2lease+renewal)", s)
	}
	if t == "" {
		return bad()
	}
	for _, p := range strings.Split(t, "+") {
		unit := ""
		for _, u := range []string{"leases", "lease", "renewals", "renewal"} {
			if strings.HasSuffix(p, u) {
				unit = strings.TrimSuffix(u, "s")
				p = strings.TrimSuffix(p, u)
				break
			}
		}
		if unit == "" {
			d, err := time.ParseDuration(p)
			if err != nil {
				return bad()
			}
			z.Fixed += d
			continue
		}
		n := 1.0
		if p = strings.TrimSuffix(p, "*"); p != "" {
			f, err := strconv.ParseFloat(p, 64)
			if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
				return bad()
			}
			n = f
		}
		if unit == "lease" {
			z.Leases += n
		} else {
			z.Renewals += n
		}
	}
	if neg {
		z = Size{Fixed: -z.Fixed, Leases: -z.Leases, Renewals: -z.Renewals}
	}
	return z, nil
}

// MarshalText writes the size as String does.
func (z Size) MarshalText() ([]byte, error) { return []byte(z.String()), nil }

// UnmarshalText reads a size as ParseSize does.
func (z *Size) UnmarshalText(b []byte) error {
	v, err := ParseSize(string(b))
	if err != nil {
		return err
	}
	*z = v
	return nil
}

// MarshalJSON writes the size as a string.
func (z Size) MarshalJSON() ([]byte, error) { return json.Marshal(z.String()) }

// UnmarshalJSON reads a size string.
func (z *Size) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("bad size %s (write it as a string like \"500ms\" or \"lease+400ms\")", b)
	}
	return z.UnmarshalText([]byte(s))
}

// Sized returns s with its sizes resolved for a lock whose lease is lease, renewed every renews:
// what an occurrence that fires now lasts and moves.
func (s Spec) Sized(lease, renews time.Duration) Spec {
	for _, z := range []*Size{&s.For, &s.AtLeast, &s.Amount} {
		*z = Fixed(z.Resolve(lease, renews))
	}
	return s
}

// outlasts reports whether the fault is sized to outlast the lock's lease: its length (For, or
// with Until its AtLeast) is written as at least one lease, or in renewal periods. An
// occurrence of it that turns out shorter than the lease the lock held proves nothing, and says
// so (history.Event.OutlastNs).
func (s Spec) outlasts() bool {
	z := s.For
	if s.Until != "" || (s.Wire != nil && s.Wire.Until != "") {
		z = s.AtLeast
	}
	return z.Leases >= 1 || z.Renewals > 0
}
