package core

import "encoding/json"

// Fact is a yes/no fact about a cluster or a load balancer that may not be known. Unknown is
// the zero value on purpose: a dialect that cannot tell must not be read as "no".
type Fact uint8

const (
	// Unknown means no input said either way.
	Unknown Fact = iota
	// Yes means the fact holds.
	Yes
	// No means the fact does not hold.
	No
)

// factOf converts a known boolean (dialect.FactOf for dialects).
func factOf(b bool) Fact {
	if b {
		return Yes
	}
	return No
}

// Known reports whether the fact is Yes or No.
func (f Fact) Known() bool { return f == Yes || f == No }

func (f Fact) String() string {
	switch f {
	case Yes:
		return "yes"
	case No:
		return "no"
	default:
		return "unknown"
	}
}

// MarshalJSON writes true, false or null.
func (f Fact) MarshalJSON() ([]byte, error) {
	switch f {
	case Yes:
		return []byte("true"), nil
	case No:
		return []byte("false"), nil
	default:
		return []byte("null"), nil
	}
}

// UnmarshalJSON reads true, false or null.
func (f *Fact) UnmarshalJSON(b []byte) error {
	var v *bool
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	if v == nil {
		*f = Unknown
	} else {
		*f = factOf(*v)
	}
	return nil
}
