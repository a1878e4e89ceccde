package idpool

import (
	"errors"
	"fmt"
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
)

// UnavailableError: every attempt failed (network errors, timeouts, 5xx) or the
// deadline came first. Attempts holds each failure in order; Unwrap gives the last.
type UnavailableError struct {
	Reason   string
	Attempts []error
}

func (e *UnavailableError) Error() string {
	var b strings.Builder
	b.WriteString("idpool unavailable: ")
	b.WriteString(e.Reason)
	if last := e.Unwrap(); last != nil {
		b.WriteString("; last error: ")
		b.WriteString(last.Error())
	}
	return b.String()
}

// Unwrap is the last attempt's error.
func (e *UnavailableError) Unwrap() error {
	if len(e.Attempts) == 0 {
		return nil
	}
	return e.Attempts[len(e.Attempts)-1]
}
