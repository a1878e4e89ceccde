package idpool

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// maxBackoff: a dead endpoint costs one connection attempt per 8 s.
const maxBackoff = 8 * time.Second

type endpoint struct {
	url       string
	notBefore time.Time // not asked again before: from Retry-After, or backing off
	streak    int       // failures in a row
}

// transport sends one logical request with failover, as the TypeScript SDK:
// network errors, timeouts and 5xx move on to the next endpoint (one that said
// Retry-After is not asked again before then; one failing without is skipped
// for DownFor, doubling up to 8 s); 4xx, 429 included, go straight back (unless
// WaitOnRateLimit makes a 429 wait its Retry-After within the deadline). A 503
// about one entity never marks an endpoint down: period_exhausted and
// entity_held end the call at once (*UnavailableError, Refused), pool_exhausted
// waits its Retry-After for this request only. Every attempt of one POST
// carries the same Idempotency-Key.
type transport struct {
	o         Options
	http      *http.Client
	mu        sync.Mutex
	endpoints []*endpoint
	current   int
}

func newTransport(o Options) *transport {
	t := &transport{o: o, http: &http.Client{}}
	for _, u := range o.Endpoints {
		t.endpoints = append(t.endpoints, &endpoint{url: strings.TrimRight(u, "/")})
	}
	return t
}

func newIdempotencyKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// send returns the 2xx answer's body decoded into out; waitOn429 waits a 429
// out as WaitOnRateLimit does for every request. Every attempt of a POST
// carries key (the caller's Idempotency-Key), or one made for the call when "".
func (t *transport) send(ctx context.Context, method, path, secret string, body []byte, key string, waitOn429 bool, out interface{}) error {
	deadline := time.Now().Add(t.o.Deadline)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if body != nil && key == "" {
		key = newIdempotencyKey()
	}
	var failures []error
	for attempt := 0; attempt < t.o.MaxAttempts; attempt++ {
		t.mu.Lock()
		index := t.pick()
		ep := t.endpoints[index]
		wait := time.Until(ep.notBefore)
		t.mu.Unlock()
		if wait > 0 {
			if time.Now().Add(wait).After(deadline) {
				return &UnavailableError{Reason: fmt.Sprintf("no endpoint may be asked again within the %v deadline", t.o.Deadline), Attempts: failures}
			}
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		if left > t.o.Timeout {
			left = t.o.Timeout
		}
		err := t.attempt(ctx, ep, method, path, secret, body, key, left, out)
		t.mu.Lock()
		if err == nil {
			ep.notBefore, ep.streak, t.current = time.Time{}, 0, index
			t.mu.Unlock()
			return nil
		}
		var retryAfter time.Duration = -1
		if h, ok := err.(*HTTPError); ok {
			wait := time.Duration(h.RetryAfter) * time.Millisecond
			if h.Status == 429 && (waitOn429 || t.o.WaitOnRateLimit) && h.RetryAfter >= 0 && time.Now().Add(wait).Before(deadline) {
				// Opted in: the entity's limit holds on every instance, so wait it out here and ask again.
				t.mu.Unlock()
				failures = append(failures, err)
				select {
				case <-time.After(wait):
				case <-ctx.Done():
					return ctx.Err()
				}
				continue
			}
			if h.Status < 500 {
				t.mu.Unlock()
				return err
			}
			if h.Status == 503 && entityRefusal(h.Code) {
				// About this entity alone and the same on every instance: the call ends, the endpoint stays up.
				t.mu.Unlock()
				return &UnavailableError{Reason: h.Code + " holds on every instance", Attempts: append(failures, err), Refused: true}
			}
			if h.Status == 503 && h.Code == CodePoolExhausted {
				// One entity's pool is short: wait for this request only, then ask the next endpoint in turn.
				if wait < 0 {
					wait = t.o.DownFor
				}
				t.current = (index + 1) % len(t.endpoints)
				t.mu.Unlock()
				failures = append(failures, err)
				if !time.Now().Add(wait).Before(deadline) {
					return &UnavailableError{Reason: fmt.Sprintf("its Retry-After ends past the %v deadline", t.o.Deadline), Attempts: failures}
				}
				select {
				case <-time.After(wait):
				case <-ctx.Done():
					return ctx.Err()
				}
				continue
			}
			if h.RetryAfter >= 0 {
				retryAfter = time.Duration(h.RetryAfter) * time.Millisecond
			}
		}
		failures = append(failures, err)
		ep.streak++
		if retryAfter < 0 {
			retryAfter = t.o.DownFor << uint(min(ep.streak-1, 20))
			if retryAfter > maxBackoff {
				retryAfter = maxBackoff
			}
		}
		ep.notBefore = time.Now().Add(retryAfter)
		t.current = (index + 1) % len(t.endpoints)
		t.mu.Unlock()
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	reason := fmt.Sprintf("deadline of %v passed", t.o.Deadline)
	if len(failures) >= t.o.MaxAttempts {
		reason = fmt.Sprintf("%d attempts failed", len(failures))
	}
	return &UnavailableError{Reason: reason, Attempts: failures}
}

// entityRefusal: a 503 code about one entity that every instance answers alike
// (its period's numbers are spent; it is held; its gapless ledger waits for an
// operator's reconcile): no failover, no waiting.
func entityRefusal(code string) bool {
	return code == CodePeriodExhausted || code == CodeEntityHeld || code == CodeLedgerBehind
}

func min(a, b int) int {
	if a < b {
		return a
	}
	return b
}

// pick: the first endpoint, in turn from the current one, that may be asked now; else the one free soonest. Called with mu held.
func (t *transport) pick() int {
	now := time.Now()
	soonest := t.current
	for i := range t.endpoints {
		index := (t.current + i) % len(t.endpoints)
		if !t.endpoints[index].notBefore.After(now) {
			return index
		}
		if t.endpoints[index].notBefore.Before(t.endpoints[soonest].notBefore) {
			soonest = index
		}
	}
	return soonest
}

func (t *transport) attempt(ctx context.Context, ep *endpoint, method, path, secret string, body []byte, key string, timeout time.Duration, out interface{}) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var reader io.Reader
	if body != nil {
		reader = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, ep.url+path, reader)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+secret)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
	}
	res, err := t.http.Do(req)
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			return fmt.Errorf("%s: no answer within %v", ep.url, timeout)
		}
		return fmt.Errorf("%s: %w", ep.url, err)
	}
	defer res.Body.Close()
	text, err := io.ReadAll(io.LimitReader(res.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("%s: reading the answer: %w", ep.url, err)
	}
	if res.StatusCode >= 200 && res.StatusCode < 300 {
		if err := json.Unmarshal(text, out); err != nil {
			return fmt.Errorf("%s: answer %d is not the JSON expected: %w", ep.url, res.StatusCode, err)
		}
		return nil
	}
	h := &HTTPError{Status: res.StatusCode, Code: fmt.Sprintf("http_%d", res.StatusCode), Endpoint: ep.url,
		RetryAfter: -1}
	var answer struct {
		Error *struct {
			Code    *string `json:"code"`
			Message *string `json:"message"`
		} `json:"error"`
	}
	h.Message = string(text)
	if len(h.Message) > 200 {
		h.Message = h.Message[:200]
	}
	if json.Unmarshal(text, &answer) == nil && answer.Error != nil {
		if answer.Error.Code != nil {
			h.Code = *answer.Error.Code
		}
		if answer.Error.Message != nil {
			h.Message = *answer.Error.Message
		}
	}
	// A refusal's Retry-After is never waited for here: the caller gets it as said (the next period may be an hour off).
	limit := t.o.MaxRetryAfter
	if entityRefusal(h.Code) {
		limit = time.Duration(1<<63 - 1)
	}
	h.RetryAfter = retryAfterMs(res.Header.Get("Retry-After"), limit)
	return h
}

// retryAfterMs reads Retry-After (delta-seconds or an HTTP date) as ms, capped; -1 when absent or unreadable.
func retryAfterMs(value string, limit time.Duration) int64 {
	value = strings.TrimSpace(value)
	if value == "" {
		return -1
	}
	var d time.Duration
	if n, err := strconv.ParseUint(value, 10, 32); err == nil {
		d = time.Duration(n) * time.Second
	} else if at, err := http.ParseTime(value); err == nil {
		d = time.Until(at)
	} else {
		return -1
	}
	if d < 0 {
		d = 0
	}
	if d > limit {
		d = limit
	}
	return d.Milliseconds()
}
