// Package idpool is a client of the idpool id service: ids over HTTP with
// failover over several instances, in-process ids from leased segments (Leaf's
// double buffer), and snowflake decoding. Standard library only.
//
//	c, _ := idpool.New(idpool.Options{
//		Endpoints: []string{"http://idpool-a:8080", "http://idpool-b:8080"},
//		Secrets:   map[string]string{"visits": os.Getenv("VISITS_SECRET"), "vouchers": os.Getenv("VOUCHERS_SECRET")},
//	})
//	id, err := c.Leased("visits").Next()                  // in-process, from leased segments (trend entities)
//	voucher, err := c.NextNumber(ctx, "vouchers")         // "V2026112800001": a business number
//
// Ids are int64; on the wire they are decimal strings. Business numbers are strings (TakeNumbers).
package idpool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"sync"
	"time"
)

// Options of a Client. A zero field means its default (the TypeScript SDK's).
type Options struct {
	// Endpoints: base URLs of idpool instances, e.g. http://idpool-a:8080; tried in turn on failure.
	Endpoints []string
	// Secrets: each entity's secret by entity key (from `idpool apps create`).
	Secrets map[string]string
	// Timeout of one attempt. Default 2 s.
	Timeout time.Duration
	// Deadline of one call over all its attempts and waits. Default 15 s.
	Deadline time.Duration
	// MaxAttempts per call over all endpoints. Default 20.
	MaxAttempts int
	// DownFor: how long an endpoint failing without Retry-After is skipped; doubles up to 8 s. Default 1 s.
	DownFor time.Duration
	// MaxRetryAfter: longest Retry-After obeyed. Default 30 s.
	MaxRetryAfter time.Duration
	// WaitOnRateLimit: a 429 rate_limited waits its Retry-After and asks again
	// while the deadline allows, instead of returning at once. Default off, as
	// the TypeScript SDK.
	WaitOnRateLimit bool
	// Lease: how leased segments are sized and waited for.
	Lease LeaseOptions
}

// LeaseOptions: a zero field means its default.
type LeaseOptions struct {
	// PrefetchAt: share of a segment handed out before the next lease starts (0 < x < 1). Default 0.1, as Leaf.
	PrefetchAt float64
	// MinSize: the first lease and the least one. Default: the entity's step (the service's default size).
	MinSize int
	// MaxSize: largest lease the adaptive size grows to. Default 10M, the service's limit.
	MaxSize int
	// TargetSegment: the size adapts to one lease per this long. Default 1 s.
	TargetSegment time.Duration
	// Wait: how long Next waits for a segment when both are used up. Default 2 s.
	Wait time.Duration
}

var keyPattern = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// Client takes ids from idpool. Safe for concurrent use.
type Client struct {
	o         Options
	transport *transport
	mu        sync.Mutex
	leased    map[string]*LeasedIDs
}

// New checks the options once and builds a Client.
func New(o Options) (*Client, error) {
	if len(o.Endpoints) == 0 {
		return nil, errors.New("idpool: Endpoints must name at least one URL")
	}
	for _, e := range o.Endpoints {
		u, err := url.Parse(e)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("idpool: endpoint %q must be an http:// or https:// URL", e)
		}
	}
	for key, secret := range o.Secrets {
		if !keyPattern.MatchString(key) {
			return nil, fmt.Errorf("idpool: entity key %q must be 1-64 of A-Z a-z 0-9 _ - .", key)
		}
		if secret == "" {
			return nil, fmt.Errorf("idpool: entity %q needs its secret", key)
		}
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&o.Timeout, 2*time.Second)
	def(&o.Deadline, 15*time.Second)
	def(&o.DownFor, time.Second)
	def(&o.MaxRetryAfter, 30*time.Second)
	def(&o.Lease.TargetSegment, time.Second)
	def(&o.Lease.Wait, 2*time.Second)
	if o.MaxAttempts == 0 {
		o.MaxAttempts = 20
	}
	if o.Lease.PrefetchAt == 0 {
		o.Lease.PrefetchAt = 0.1
	}
	if o.Lease.MaxSize == 0 {
		o.Lease.MaxSize = 10_000_000
	}
	if o.Timeout < 0 || o.Deadline < 0 || o.DownFor < 0 || o.MaxRetryAfter < 0 || o.MaxAttempts < 0 {
		return nil, errors.New("idpool: durations and MaxAttempts must not be negative")
	}
	if o.Lease.PrefetchAt < 0 || o.Lease.PrefetchAt >= 1 {
		return nil, fmt.Errorf("idpool: Lease.PrefetchAt must be in [0, 1), got %v", o.Lease.PrefetchAt)
	}
	if o.Lease.MinSize < 0 || o.Lease.MaxSize < o.Lease.MinSize {
		return nil, errors.New("idpool: Lease sizes must be 0 <= MinSize <= MaxSize")
	}
	secrets := make(map[string]string, len(o.Secrets))
	for k, v := range o.Secrets {
		secrets[k] = v
	}
	o.Secrets = secrets
	return &Client{o: o, transport: newTransport(o), leased: map[string]*LeasedIDs{}}, nil
}

func (c *Client) secret(key string) (string, error) {
	s, ok := c.o.Secrets[key]
	if !ok {
		return "", fmt.Errorf("idpool: entity %q was not configured (Options.Secrets)", key)
	}
	return s, nil
}

// Take returns count new ids of an entity from the service (POST /apps/:key/ids).
// An entity that issues business numbers answers strings such as
// INV20261129-000304: Take then fails with *BusinessNumberError, which holds
// them (they are taken); use TakeNumbers.
func (c *Client) Take(ctx context.Context, entityKey string, count int) ([]int64, error) {
	taken, err := c.takeStrings(ctx, entityKey, count, takeRequest{})
	if err != nil {
		return nil, err
	}
	ids := make([]int64, count)
	for i, s := range taken {
		// Canonical decimals only: a number such as 000123 would lose its zeros as an int64.
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || !integerID.MatchString(s) {
			return nil, &BusinessNumberError{Entity: entityKey, Numbers: taken}
		}
		ids[i] = v
	}
	return ids, nil
}

// Next returns one new id from the service.
func (c *Client) Next(ctx context.Context, entityKey string) (int64, error) {
	ids, err := c.Take(ctx, entityKey, 1)
	if err != nil {
		return 0, err
	}
	return ids[0], nil
}

// TakeNumbers returns count new business numbers of an entity registered with a
// format (e.g. INV20261129-000304, docs/numbers.md), as the strings the service
// answers; of a plain entity, its ids as decimal strings. For a gapless series
// (docs/numbers.md "Gapless series"), WithReference keeps the caller's reference
// in the ledger beside each number and WithIdempotencyKey sends the caller's own
// key; without it every attempt of the call carries one key made for it, so a
// retry after a timeout is answered the numbers already issued.
func (c *Client) TakeNumbers(ctx context.Context, entityKey string, count int, opts ...TakeOption) ([]string, error) {
	var r takeRequest
	for _, o := range opts {
		o(&r)
	}
	return c.takeStrings(ctx, entityKey, count, r)
}

// TakeOption is what a take sends beside its count: WithReference, WithIdempotencyKey.
type TakeOption func(*takeRequest)

type takeRequest struct {
	reference      *string
	idempotencyKey string
}

// WithReference keeps reference (the invoice's id, 1-128 characters) in a
// gapless series' ledger beside each number taken.
func WithReference(reference string) TakeOption {
	return func(r *takeRequest) { r.reference = &reference }
}

// WithIdempotencyKey sends the caller's Idempotency-Key (e.g. derived from the
// invoice's id) on every attempt: asked again with it, even from another
// process, the service answers the same numbers (with another count or
// reference, 409 ErrConflict).
func WithIdempotencyKey(key string) TakeOption {
	return func(r *takeRequest) { r.idempotencyKey = key }
}

// NextNumber returns one new business number.
func (c *Client) NextNumber(ctx context.Context, entityKey string) (string, error) {
	numbers, err := c.takeStrings(ctx, entityKey, 1, takeRequest{})
	if err != nil {
		return "", err
	}
	return numbers[0], nil
}

func (c *Client) takeStrings(ctx context.Context, entityKey string, count int, r takeRequest) ([]string, error) {
	if count < 1 {
		return nil, fmt.Errorf("idpool: count must be a positive integer, got %d", count)
	}
	secret, err := c.secret(entityKey)
	if err != nil {
		return nil, err
	}
	var answer struct {
		IDs []string `json:"ids"`
	}
	body, err := json.Marshal(struct {
		Count     int     `json:"count"`
		Reference *string `json:"reference,omitempty"`
	}{count, r.reference})
	if err != nil {
		return nil, err
	}
	if err := c.transport.send(ctx, "POST", "/apps/"+url.PathEscape(entityKey)+"/ids", secret, body, r.idempotencyKey, false, &answer); err != nil {
		return nil, err
	}
	if len(answer.IDs) != count {
		return nil, fmt.Errorf("idpool answered POST /apps/%s/ids without %d ids", entityKey, count)
	}
	for _, s := range answer.IDs {
		if !takenPattern.MatchString(s) {
			return nil, fmt.Errorf("idpool answered POST /apps/%s/ids with an id that is not one: %q", entityKey, s)
		}
	}
	return answer.IDs, nil
}

// Leased returns the in-process leased ids of a trend entity: one per entity
// and client, shared by every goroutine. A monotonic entity's lease is refused
// (409, ErrConflict); so is an entity not in Options.Secrets (on first Next).
func (c *Client) Leased(entityKey string) *LeasedIDs {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l, ok := c.leased[entityKey]; ok {
		return l
	}
	l := newLeasedIDs(entityKey, c.o.Lease, func(size int) (leaseAnswer, error) {
		var a leaseAnswer
		secret, err := c.secret(entityKey)
		if err != nil {
			return a, err
		}
		body := []byte(`{}`)
		if size > 0 {
			body = []byte(`{"size":` + strconv.Itoa(size) + `}`)
		}
		// The caller waits for ids, not for a refusal: a 429 is waited out within the deadline.
		err = c.transport.send(context.Background(), "POST", "/apps/"+url.PathEscape(entityKey)+"/segments", secret, body, "", true, &a)
		return a, err
	})
	c.leased[entityKey] = l
	return l
}

// SnowflakeParts is a snowflake id explained by the service.
type SnowflakeParts struct {
	ID          int64
	Timestamp   string // start of the id's time unit, ISO 8601
	TimestampMs int64
	Worker      int
	TimeBack    int
	Sequence    int64
	Reserved    int
}

// Decode explains a snowflake id of a snowflake entity (GET /apps/:key/ids/:id).
func (c *Client) Decode(ctx context.Context, entityKey string, id int64) (SnowflakeParts, error) {
	var p SnowflakeParts
	if id < 0 {
		return p, fmt.Errorf("idpool: id must not be negative, got %d", id)
	}
	secret, err := c.secret(entityKey)
	if err != nil {
		return p, err
	}
	var a struct {
		ID          string `json:"id"`
		Timestamp   string `json:"timestamp"`
		TimestampMs int64  `json:"timestampMs"`
		Worker      int    `json:"worker"`
		TimeBack    int    `json:"timeBack"`
		Sequence    int64  `json:"sequence"`
		Reserved    int    `json:"reserved"`
	}
	if err := c.transport.send(ctx, "GET", "/apps/"+url.PathEscape(entityKey)+"/ids/"+strconv.FormatInt(id, 10), secret, nil, "", false, &a); err != nil {
		return p, err
	}
	parsed, err := decimal(a.ID)
	if err != nil {
		return p, err
	}
	return SnowflakeParts{parsed, a.Timestamp, a.TimestampMs, a.Worker, a.TimeBack, a.Sequence, a.Reserved}, nil
}

// Close stops leasing: ids still leased are dropped, never handed out.
func (c *Client) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range c.leased {
		l.Close()
	}
}

var (
	decimalPattern = regexp.MustCompile(`^\d{1,19}$`)
	// integerID: an integer id as the service writes one, no sign, no leading zero.
	integerID = regexp.MustCompile(`^(0|[1-9][0-9]{0,18})$`)
	// takenPattern: what a take may answer: decimal ids, or business numbers (docs/numbers.md).
	takenPattern = regexp.MustCompile(`^[A-Za-z0-9_./-]{1,200}$`)
)

func decimal(s string) (int64, error) {
	if !decimalPattern.MatchString(s) {
		return 0, fmt.Errorf("idpool answered an id that is not a decimal string: %q", s)
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("idpool answered an id past int64: %q", s)
	}
	return v, nil
}
