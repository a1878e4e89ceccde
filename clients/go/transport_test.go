package idpool

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeInstance answers takes as an idpool instance would: refusals scripted per entity, else one id per take.
type fakeInstance struct {
	mu      sync.Mutex
	refuse  map[string][]string // entity → 503 codes still to answer, in order
	asked   []string            // entity of every request
	next    int64
	retryIn string
}

func (f *fakeInstance) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	entity := strings.Split(r.URL.Path, "/")[2]
	f.mu.Lock()
	f.asked = append(f.asked, entity)
	codes := f.refuse[entity]
	code := ""
	if len(codes) > 0 {
		code, f.refuse[entity] = codes[0], codes[1:]
	}
	f.next++
	id := f.next
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if code != "" {
		retry := map[string]string{CodePeriodExhausted: "3461", CodeEntityHeld: "60", CodeLedgerBehind: "60", CodePoolExhausted: "1"}[code]
		w.Header().Set("Retry-After", retry)
		w.WriteHeader(503)
		fmt.Fprintf(w, `{"error":{"code":%q,"message":"%s: refused"}}`, code, entity)
		return
	}
	if strings.HasSuffix(r.URL.Path, "/segments") {
		fmt.Fprintf(w, `{"first":"%d","last":"%d","count":1,"delta":1,"remainder":0}`, id, id)
		return
	}
	fmt.Fprintf(w, `{"ids":["%d"]}`, id)
}

func (f *fakeInstance) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.asked)
}

func twoInstances(t *testing.T, refuse map[string][]string) (*fakeInstance, *fakeInstance, *Client) {
	t.Helper()
	a := &fakeInstance{refuse: map[string][]string{}}
	b := &fakeInstance{refuse: map[string][]string{}, next: 1000}
	for entity, codes := range refuse {
		a.refuse[entity] = append([]string(nil), codes...)
		b.refuse[entity] = append([]string(nil), codes...)
	}
	sa, sb := httptest.NewServer(a), httptest.NewServer(b)
	t.Cleanup(sa.Close)
	t.Cleanup(sb.Close)
	c, err := New(Options{
		Endpoints: []string{sa.URL, sb.URL},
		Secrets:   map[string]string{"receipts": "r", "orders": "o", "trendy": "t"},
		Lease:     LeaseOptions{MinSize: 1, MaxSize: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return a, b, c
}

func TestPeriodExhaustedEndsAtOnceAndBlocksNoOtherEntity(t *testing.T) {
	spent := make([]string, 20)
	for i := range spent {
		spent[i] = CodePeriodExhausted
	}
	a, b, c := twoInstances(t, map[string][]string{"receipts": spent})
	for i := 0; i < 20; i++ {
		_, err := c.TakeNumbers(context.Background(), "receipts", 1)
		var u *UnavailableError
		if !errors.As(err, &u) || !u.Refused || len(u.Attempts) != 1 {
			t.Fatalf("take %d: want a refused *UnavailableError after one attempt, got %#v", i, err)
		}
		answer := u.LastAnswer()
		if answer.Status != 503 || answer.Code != CodePeriodExhausted || answer.RetryAfter != 3461000 {
			t.Fatalf("last answer %+v", answer)
		}
		if !strings.HasPrefix(err.Error(), "idpool unavailable: "+answer.Endpoint+": 503 period_exhausted: receipts: refused") {
			t.Fatalf("message %q", err.Error())
		}
	}
	start := time.Now()
	if _, err := c.Take(context.Background(), "orders", 1); err != nil {
		t.Fatalf("another entity refused: %v", err)
	}
	if took := time.Since(start); took > 500*time.Millisecond {
		t.Fatalf("another entity waited %v", took)
	}
	if a.count()+b.count() != 21 {
		t.Fatalf("asked %d + %d times, want 21", a.count(), b.count())
	}
}

func TestEntityHeldAndLedgerBehindEndAtOnce(t *testing.T) {
	for _, code := range []string{CodeEntityHeld, CodeLedgerBehind} {
		a, b, c := twoInstances(t, map[string][]string{"receipts": {code}})
		_, err := c.Take(context.Background(), "receipts", 1)
		var u *UnavailableError
		if !errors.As(err, &u) || !u.Refused || u.LastAnswer().Code != code || a.count()+b.count() != 1 {
			t.Fatalf("want %s after one attempt, got %v (asked %d + %d)", code, err, a.count(), b.count())
		}
		if _, err := c.Take(context.Background(), "orders", 1); err != nil || a.count() != 2 {
			t.Fatalf("another entity after %s: %v (A asked %d times)", code, err, a.count())
		}
	}
}

func TestPoolExhaustedWaitsForThatTakeAloneWithoutMarkingTheEndpoint(t *testing.T) {
	a, b, c := twoInstances(t, map[string][]string{"receipts": {CodePoolExhausted}})
	b.refuse["receipts"] = nil
	start := time.Now()
	if _, err := c.Take(context.Background(), "receipts", 1); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 900*time.Millisecond {
		t.Fatalf("pool_exhausted was not waited out: %v", took)
	}
	if a.count() != 1 || b.count() != 1 {
		t.Fatalf("want A then B, asked %d + %d", a.count(), b.count())
	}
	// A was never marked down: it answers another entity at once when B is the one refusing.
	b.refuse["orders"] = []string{CodeUnavailable}
	if _, err := c.Take(context.Background(), "orders", 1); err != nil {
		t.Fatal(err)
	}
	if a.count() != 2 {
		t.Fatalf("A asked %d times, want 2", a.count())
	}
}

func TestLeaseWaitsOutPoolExhaustedAndEndsAtPeriodExhausted(t *testing.T) {
	_, b, c := twoInstances(t, map[string][]string{"trendy": {CodePoolExhausted}})
	b.refuse["trendy"] = nil
	if _, err := c.Leased("trendy").Next(); err != nil {
		t.Fatalf("lease after pool_exhausted: %v", err)
	}
	_, _, d := twoInstances(t, map[string][]string{"trendy": {CodePeriodExhausted, CodePeriodExhausted}})
	start := time.Now()
	_, err := d.Leased("trendy").Next()
	var u *UnavailableError
	if !errors.As(err, &u) || !u.Refused {
		t.Fatalf("want a refused *UnavailableError, got %v", err)
	}
	if took := time.Since(start); took > 500*time.Millisecond {
		t.Fatalf("the refusal took %v", took)
	}
}
