package idpool

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Error codes the service answers with (the JSON error.code; docs/design.md "HTTP API").
const (
	CodeInvalidRequest  = "invalid_request"
	CodeUnauthorized    = "unauthorized"
	CodeNotFound        = "not_found"
	CodeConflict        = "conflict"
	CodePayloadTooLarge = "payload_too_large"
	CodeRateLimited     = "rate_limited"
	CodePoolExhausted   = "pool_exhausted"
	CodePeriodExhausted = "period_exhausted"
	CodeEntityHeld      = "entity_held"
	CodeLedgerBehind    = "gapless_ledger_behind"
	CodeUnavailable     = "unavailable"
	CodeInternal        = "internal"
)

// HTTPError is an error answer of the service: its status, its stable Code, and
// RetryAfter (from Retry-After, capped; negative when the answer had none).
// Match a kind with errors.Is(err, idpool.ErrNotFound) and friends, or read Code.
type HTTPError struct {
	Status     int
	Code       string
	Message    string
	Endpoint   string
	RetryAfter int64 // ms
}

func (e *HTTPError) Error() string {
	return fmt.Sprintf("%s: %d %s: %s", e.Endpoint, e.Status, e.Code, e.Message)
}

// Is matches the sentinel of the error's status (400, 401, 404, 409, 429).
func (e *HTTPError) Is(target error) bool {
	switch target {
	case ErrInvalidRequest:
		return e.Status == 400
	case ErrUnauthorized:
		return e.Status == 401
	case ErrNotFound:
		return e.Status == 404
	case ErrConflict:
		return e.Status == 409
	case ErrRateLimited:
		return e.Status == 429
	}
	return false
}

var (
	// ErrInvalidRequest: 400, a malformed request (bad count, key or size).
	ErrInvalidRequest = errors.New("idpool: invalid request")
	// ErrUnauthorized: 401, the entity's secret is wrong (or was rotated).
	ErrUnauthorized = errors.New("idpool: unauthorized")
	// ErrNotFound: 404, no such entity.
	ErrNotFound = errors.New("idpool: not found")
	// ErrConflict: 409, e.g. a lease asked of a monotonic entity.
	ErrConflict = errors.New("idpool: conflict")
	// ErrRateLimited: 429, the entity's ids-per-second limit; HTTPError.RetryAfter says when to try again. Not retried.
	ErrRateLimited = errors.New("idpool: rate limited")
	// ErrLeaseNotReady: both leased segments are used up and the next lease did not come within LeaseWait.
	ErrLeaseNotReady = errors.New("idpool: no leased ids ready")
	// ErrClosed: the client or its leased ids were closed.
	ErrClosed = errors.New("idpool: closed")
	// ErrBusinessNumbers: Take met an entity that issues business numbers (*BusinessNumberError holds them).
	ErrBusinessNumbers = errors.New("idpool: business numbers, not int64 ids")
)

// UnavailableError: every attempt failed (network errors, timeouts, 5xx) or the
// deadline came first, or (Refused) the service refused the entity alone, alike
// on every instance (503 period_exhausted, entity_held): asked once, no
// endpoint marked down. Attempts holds each failure in order. LastAnswer is the
// last answer a service gave (status, code, message), which the message leads
// with and Unwrap returns (so errors.As finds its *HTTPError): an endpoint that
// answered 503 says more than another one that refused connections after it.
type UnavailableError struct {
	Reason   string
	Attempts []error
	Refused  bool
}

func (e *UnavailableError) Error() string {
	var b strings.Builder
	b.WriteString("idpool unavailable: ")
	if answer := e.LastAnswer(); e.Refused && answer != nil {
		b.WriteString(answer.Error())
		b.WriteString(" (the same on every instance: not asked again)")
		return b.String()
	}
	b.WriteString(e.Reason)
	answer := e.LastAnswer()
	if answer != nil {
		b.WriteString("; last answer: ")
		b.WriteString(answer.Error())
	}
	if last := e.LastError(); last != nil && last != error(answer) {
		b.WriteString("; last error: ")
		b.WriteString(last.Error())
	}
	return b.String()
}

// LastError is the last attempt's error, nil when no attempt was made.
func (e *UnavailableError) LastError() error {
	if len(e.Attempts) == 0 {
		return nil
	}
	return e.Attempts[len(e.Attempts)-1]
}

// LastAnswer is the last error answer of a service among the attempts, nil when none answered.
func (e *UnavailableError) LastAnswer() *HTTPError {
	for i := len(e.Attempts) - 1; i >= 0; i-- {
		if h, ok := e.Attempts[i].(*HTTPError); ok {
			return h
		}
	}
	return nil
}

// Unwrap is the last answer of a service, else the last attempt's error.
func (e *UnavailableError) Unwrap() error {
	if answer := e.LastAnswer(); answer != nil {
		return answer
	}
	return e.LastError()
}

// BusinessNumberError: Take (int64 ids) was answered with ids that are not
// 64-bit integers: the entity issues business numbers (registered with a
// format, e.g. INV20261129-000304). The service has handed them out, so they
// are here, in Numbers, for the caller to use or record; take them with
// TakeNumbers from now on. errors.Is(err, ErrBusinessNumbers) matches it.
type BusinessNumberError struct {
	Entity  string
	Numbers []string
}

func (e *BusinessNumberError) Error() string {
	first := "no ids"
	if len(e.Numbers) > 0 {
		first = strconv.Quote(e.Numbers[0])
	}
	return fmt.Sprintf("idpool: entity %q answered %s, not a 64-bit integer id: it issues business numbers; "+
		"take them with TakeNumbers(ctx, %q, count) (the %d taken are in Numbers)", e.Entity, first, e.Entity, len(e.Numbers))
}

// Is matches ErrBusinessNumbers.
func (e *BusinessNumberError) Is(target error) bool { return target == ErrBusinessNumbers }
