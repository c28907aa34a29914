package core

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Error kinds callers branch on with errors.Is. Concrete errors below carry the details and
// match their kind; cloud SDK errors stay reachable through errors.As on the chain.
var (
	// ErrInvalid: bad input (a malformed annotation, an unknown mode, a YAML typo).
	ErrInvalid = errors.New("invalid input")
	// ErrNotAllowlisted: the account lacks a capability that needs a support ticket.
	ErrNotAllowlisted = errors.New("capability not allowlisted")
	// ErrUnsupported: this cloud, cluster or object cannot do what was asked.
	ErrUnsupported = errors.New("unsupported")
	// ErrImmutable: the change needs a new object.
	ErrImmutable = errors.New("immutable")
	// ErrPrecondition: a component is too old, or a required fact is unknown.
	ErrPrecondition = errors.New("precondition failed")
	// ErrConflict: someone else changed the object; re-read and retry.
	ErrConflict = errors.New("conflict")
	// ErrUnauthenticated: the cloud refused the credentials (a wrong key, a clock too far off,
	// an expired token) or the permission for an action. The message says what to check.
	ErrUnauthenticated = errors.New("unauthenticated")
	// ErrRetryLater: an operation is still in progress; retry after a delay.
	ErrRetryLater = errors.New("retry later")
	// ErrNotExposed: the object is not a load-balancer exposure this dialect handles (a
	// ClusterIP Service, an Ingress of another class). Not a failure.
	ErrNotExposed = errors.New("not a load-balancer exposure")
)

// InvalidError reports bad input on an object, with the field paths at fault.
type InvalidError struct {
	Object ObjectRef
	Errs   field.ErrorList
}

// invalid builds an InvalidError; it returns nil when errs is empty (dialect.Invalid for
// dialects).
func invalid(obj ObjectRef, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return &InvalidError{Object: obj, Errs: errs}
}

func (e *InvalidError) Error() string {
	msgs := make([]string, len(e.Errs))
	for i, fe := range e.Errs {
		msgs[i] = fe.Error()
	}
	return e.Object.String() + ": " + strings.Join(msgs, "; ")
}

// Is makes errors.Is(err, ErrInvalid) true.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

// AllowlistError says which capability is missing and what to ask support for.
type AllowlistError struct {
	Object     ObjectRef
	Capability Capability
	// Ask is what to request in the support ticket, in the cloud's words.
	Ask string
	// Err is the cloud's error, when the cloud said so.
	Err error
}

func (e *AllowlistError) Error() string {
	s := fmt.Sprintf("%s: capability %s is not enabled for this account: ask support to enable %q", e.Object, e.Capability, e.Ask)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Is makes errors.Is(err, ErrNotAllowlisted) true.
func (e *AllowlistError) Is(target error) bool { return target == ErrNotAllowlisted }

// Unwrap exposes the cloud error.
func (e *AllowlistError) Unwrap() error { return e.Err }

// PreconditionError says which component falls short, what it is and what is needed.
type PreconditionError struct {
	Object ObjectRef
	// Component is what falls short ("kube-proxy", "tke-ingress-controller", "Kubernetes").
	Component string
	// Have is the current version or value ("" when unknown).
	Have string
	// Need is what is required.
	Need   string
	Reason Reason
}

func (e *PreconditionError) Error() string {
	have := e.Have
	if have == "" {
		have = "unknown"
	}
	return fmt.Sprintf("%s: %s is %s, need %s (%s; %s)", e.Object, e.Component, have, e.Need, e.Reason.Code, e.Reason.Message)
}

// Is makes errors.Is(err, ErrPrecondition) true.
func (e *PreconditionError) Is(target error) bool { return target == ErrPrecondition }

// KindError wraps an error with one of the kinds above and a message.
type KindError struct {
	Kind   error
	Object ObjectRef
	Msg    string
	// Reason is the rule behind the error, when one is; its code is data, not part of Msg.
	Reason Reason
	Err    error
}

func (e *KindError) Error() string {
	s := e.Object.String() + ": " + e.Msg
	if e.Reason.Code != "" {
		s += " (" + string(e.Reason.Code) + ")"
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Is matches the kind.
func (e *KindError) Is(target error) bool { return target == e.Kind }

// Unwrap exposes the cause (often the cloud's error).
func (e *KindError) Unwrap() error { return e.Err }

// RetryError says an operation is in progress and when to look again, like
// cloud-provider's RetryError. It matches ErrRetryLater.
type RetryError struct {
	After time.Duration
	Msg   string
	Err   error
}

func (e *RetryError) Error() string {
	s := fmt.Sprintf("%s (retry in %s)", e.Msg, e.After)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Is matches ErrRetryLater.
func (e *RetryError) Is(target error) bool { return target == ErrRetryLater }

// Unwrap exposes the cause.
func (e *RetryError) Unwrap() error { return e.Err }
