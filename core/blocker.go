package core

import (
	"errors"
	"math"
)

// Blocker says, as data, why a plan cannot be applied as it is: what a CLI prints, a
// Terraform diagnostic shows and an Event carries, with Err for Go callers who branch with
// errors.Is and errors.As.
type Blocker struct {
	// Kind is not-allowlisted, unauthenticated, precondition, immutable, unsupported, invalid,
	// conflict, retry-later, not-exposed or error: the error kinds of this package by name
	// (BlockerOf(err).Kind).
	Kind string `json:"kind"`
	// Code is the reason code of the rule that blocks, when one does.
	Code Code `json:"code,omitempty"`
	// Message is one line for people.
	Message string `json:"message"`
	// Capability and Ask (not-allowlisted): the allowlist and what to ask support for.
	Capability Capability `json:"capability,omitempty"`
	Ask        string     `json:"ask,omitempty"`
	// Component, Have and Need (precondition): what falls short, what it is, what is needed.
	Component string `json:"component,omitempty"`
	Have      string `json:"have,omitempty"`
	Need      string `json:"need,omitempty"`
	// RetryAfterSeconds (retry-later): when to look again.
	RetryAfterSeconds float64 `json:"retryAfterSeconds,omitempty"`

	err error
}

// BlockerOf describes err as a Blocker; nil for a nil error.
func BlockerOf(err error) *Blocker {
	if err == nil {
		return nil
	}
	b := &Blocker{Kind: kindName(err), Code: codeOf(err), Message: err.Error(), err: err}
	var allow *AllowlistError
	if errors.As(err, &allow) {
		b.Capability, b.Ask = allow.Capability, allow.Ask
	}
	var pre *PreconditionError
	if errors.As(err, &pre) {
		b.Component, b.Have, b.Need = pre.Component, pre.Have, pre.Need
	}
	var retry *RetryError
	if errors.As(err, &retry) {
		b.RetryAfterSeconds = math.Round(retry.After.Seconds()*1000) / 1000
	}
	return b
}

// Err returns the error the Blocker describes, so errors.Is(b.Err(), ErrNotAllowlisted) and
// errors.As work; nil for a nil Blocker. A Blocker decoded from JSON has lost the Go error and
// returns a *KindError of its kind.
func (b *Blocker) Err() error {
	if b == nil {
		return nil
	}
	if b.err != nil {
		return b.err
	}
	for _, k := range errorKinds {
		if k.name == b.Kind {
			return &KindError{Kind: k.err, Msg: b.Message, Reason: Reason{Code: b.Code}}
		}
	}
	return errors.New(b.Message)
}

func (b *Blocker) String() string { return b.Kind + ": " + b.Message }

// errorKinds names the kinds, most specific first.
var errorKinds = []struct {
	err  error
	name string
}{
	{ErrNotAllowlisted, "not-allowlisted"},
	{ErrUnauthenticated, "unauthenticated"},
	{ErrPrecondition, "precondition"},
	{ErrImmutable, "immutable"},
	{ErrUnsupported, "unsupported"},
	{ErrInvalid, "invalid"},
	{ErrConflict, "conflict"},
	{ErrRetryLater, "retry-later"},
	{ErrNotExposed, "not-exposed"},
}

// kindName names the kind of err ("not-allowlisted", "precondition", ...), or "error" when it
// has none of this package's kinds.
func kindName(err error) string {
	for _, k := range errorKinds {
		if errors.Is(err, k.err) {
			return k.name
		}
	}
	return "error"
}

// codeOf returns the reason code an error of this package carries (KindError.Reason,
// PreconditionError.Reason), or "". Hosts read it as Blocker.Code.
func codeOf(err error) Code {
	var ke *KindError
	if errors.As(err, &ke) && ke.Reason.Code != "" {
		return ke.Reason.Code
	}
	var pre *PreconditionError
	if errors.As(err, &pre) {
		return pre.Reason.Code
	}
	return ""
}
