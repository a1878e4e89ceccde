// Command idpoolcheck runs the client's checks against a real idpool, for
// test/integration/clients.test.ts (which reads the ids written to $OUT and
// asserts on them) and bench/clients.bench.ts. The same modes as the Java and
// Python programs: unique, failover, errors, bench, spent. Exit status 0 only when
// every check here passed.
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	idpool "github.com/idpool/idpool/clients/go"
)

func env(name, fallback string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return fallback
}

func envInt(name string, fallback int) int {
	n, err := strconv.Atoi(env(name, strconv.Itoa(fallback)))
	if err != nil {
		fail("env", err)
	}
	return n
}

func fail(name string, err error) {
	fmt.Printf("FAIL %s: %v\n", name, err)
	os.Exit(1)
}

func endpoints() []string { return strings.Split(env("IDPOOL_ENDPOINTS", ""), ",") }

func client(endpoints []string) *idpool.Client {
	c, err := idpool.New(idpool.Options{
		Endpoints: endpoints,
		Secrets:   map[string]string{env("TAKE_KEY", "x"): env("TAKE_SECRET", "x"), env("LEASE_KEY", "y"): env("LEASE_SECRET", "x")},
		Timeout:   2 * time.Second,
		Deadline:  30 * time.Second,
		// Wait: longer than the 2 s default, as on a loaded CI machine a lease may take that long.
		Lease: idpool.LeaseOptions{MinSize: envInt("LEASE_MIN", 0), MaxSize: envInt("LEASE_MAX", 10_000_000), Wait: 15 * time.Second},
	})
	if err != nil {
		fail("options", err)
	}
	return c
}

func main() {
	switch os.Args[1] {
	case "unique":
		draw(8, 1, true)
	case "failover":
		draw(4, 2, false)
	case "errors":
		checks()
	case "bench":
		bench()
	case "spent":
		check("spent", spent)
	default:
		fail("mode", errors.New("unique | failover | errors | bench | spent"))
	}
}

// draw: goroutines each taking TAKES batches of 5 over HTTP and LEASED leased
// ids, per phase; between phases it says "phase done" and waits for a line on
// stdin (the test kills an instance then). Every id goes to $OUT. With spread,
// odd goroutines use a second client that lists the endpoints the other way
// round (a client asks its first endpoint while it answers), so both serve.
func draw(goroutines, phases int, spread bool) {
	takes, leasedEach := envInt("TAKES", 25), envInt("LEASED", 20000)
	list := endpoints()
	reversed := make([]string, len(list))
	for i, e := range list {
		reversed[len(list)-1-i] = e
	}
	clients := []*idpool.Client{client(list), client(list)}
	if spread {
		clients[1] = client(reversed)
	}
	defer clients[0].Close()
	defer clients[1].Close()
	take := env("TAKE_KEY", "")
	var mu sync.Mutex
	var out strings.Builder
	stdin := bufio.NewReader(os.Stdin)
	for phase := 0; phase < phases; phase++ {
		var wg sync.WaitGroup
		errs := make(chan error, goroutines)
		for g := 0; g < goroutines; g++ {
			c := clients[0]
			if spread {
				c = clients[g%2]
			}
			leased := c.Leased(env("LEASE_KEY", ""))
			if err := leased.Open(); err != nil {
				fail("open", err)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				var b strings.Builder
				for k := 0; k < takes; k++ {
					ids, err := c.Take(context.Background(), take, 5)
					if err != nil {
						errs <- err
						return
					}
					for _, id := range ids {
						fmt.Fprintf(&b, "t %d\n", id)
					}
				}
				for k := 0; k < leasedEach; k++ {
					id, err := leased.Next()
					if err != nil {
						errs <- err
						return
					}
					fmt.Fprintf(&b, "l %d\n", id)
				}
				mu.Lock()
				out.WriteString(b.String())
				mu.Unlock()
			}()
		}
		wg.Wait()
		close(errs)
		if err := <-errs; err != nil {
			fail("draw", err)
		}
		if phase < phases-1 {
			fmt.Println("phase done")
			if _, err := stdin.ReadString('\n'); err != nil {
				fail("stdin", err)
			}
		}
	}
	if err := os.WriteFile(env("OUT", "ids.txt"), []byte(out.String()), 0o644); err != nil {
		fail("out", err)
	}
	lease := env("LEASE_KEY", "")
	fmt.Printf("leases %d\ndone\n", clients[0].Leased(lease).Leases()+clients[1].Leased(lease).Leases())
}

func check(name string, f func() error) {
	if err := f(); err != nil {
		fail(name, err)
	}
	fmt.Println("ok " + name)
}

func expectHTTP(err error, kind error, status int, code string) error {
	var h *idpool.HTTPError
	if !errors.As(err, &h) {
		return fmt.Errorf("expected %d %s, got %v", status, code, err)
	}
	if kind != nil && !errors.Is(err, kind) {
		return fmt.Errorf("%v is not %v", err, kind)
	}
	if h.Status != status || h.Code != code {
		return fmt.Errorf("expected %d %s, got %d %s", status, code, h.Status, h.Code)
	}
	return nil
}

func checks() {
	ctx := context.Background()
	take, limited, flake := env("TAKE_KEY", ""), env("LIMITED_KEY", ""), env("FLAKE_KEY", "")
	c, err := idpool.New(idpool.Options{Endpoints: endpoints(), Secrets: map[string]string{
		take: env("TAKE_SECRET", ""), limited: env("LIMITED_SECRET", ""), flake: env("FLAKE_SECRET", ""), take + "-nosuch": "whatever",
	}})
	if err != nil {
		fail("options", err)
	}
	wrong, _ := idpool.New(idpool.Options{Endpoints: endpoints(), Secrets: map[string]string{take: "not-the-secret"}})
	check("unauthorized", func() error {
		_, err := wrong.Take(ctx, take, 1)
		return expectHTTP(err, idpool.ErrUnauthorized, 401, "unauthorized")
	})
	// An unknown entity is 401 as a wrong secret is: the service does not say which keys exist.
	check("unknown_entity", func() error {
		_, err := c.Take(ctx, take+"-nosuch", 1)
		return expectHTTP(err, idpool.ErrUnauthorized, 401, "unauthorized")
	})
	check("decode_refused", func() error {
		_, err := c.Decode(ctx, take, 1)
		return expectHTTP(err, idpool.ErrInvalidRequest, 400, "invalid_request")
	})
	check("conflict", func() error {
		_, err := c.Leased(take).Next()
		return expectHTTP(err, idpool.ErrConflict, 409, "conflict")
	})
	check("invalid_request", func() error {
		_, err := c.Take(ctx, take, 1_000_000_000)
		return expectHTTP(err, idpool.ErrInvalidRequest, 400, "invalid_request")
	})
	check("rate_limited", func() error {
		for k := 0; k < 5; k++ {
			if _, err := c.Take(ctx, limited, 10); err != nil {
				if e := expectHTTP(err, idpool.ErrRateLimited, 429, "rate_limited"); e != nil {
					return e
				}
				if err.(*idpool.HTTPError).RetryAfter < 0 {
					return errors.New("429 without Retry-After")
				}
				return nil
			}
		}
		return errors.New("never limited")
	})
	check("decode", func() error {
		id, err := c.Next(ctx, flake)
		if err != nil {
			return err
		}
		p, err := c.Decode(ctx, flake, id)
		if err != nil {
			return err
		}
		if p.ID != id {
			return fmt.Errorf("decoded %d for %d", p.ID, id)
		}
		if d := time.Since(time.UnixMilli(p.TimestampMs)); d > time.Minute || d < -time.Minute {
			return fmt.Errorf("timestamp %s is not now", p.Timestamp)
		}
		return nil
	})
	check("retry_after", func() error { return retryAfter(503, "pool_exhausted", false) })
	check("rate_limit_wait", func() error { return retryAfter(429, "rate_limited", true) })
	check("unavailable", unavailable)
	check("last_answer", lastAnswer)
	check("one_key", oneKey)
	check("lease_waits", leaseWaits)
	check("numbers", numbers)
	check("leased_default_trend", leasedDefaultTrend)
	check("gapless", gapless)
	fmt.Println("done")
}

// gapless: a gapless series through GAPLESS_ENDPOINTS, whose first endpoint
// drops the answer to each new Idempotency-Key (the test's proxy: the service
// issued the numbers, the client never heard): the retry on the next endpoint
// carries the same key and is answered the numbers already issued. Then the
// caller's own key twice: the same numbers; with another reference, 409.
// Prints "gapless <reference> <number>" for the test, which reads the ledger.
func gapless() error {
	ctx := context.Background()
	key := env("GAPLESS_KEY", "")
	c, err := idpool.New(idpool.Options{Endpoints: strings.Split(env("GAPLESS_ENDPOINTS", ""), ","),
		Secrets: map[string]string{key: env("GAPLESS_SECRET", "")}})
	if err != nil {
		return err
	}
	first, err := c.TakeNumbers(ctx, key, 2, idpool.WithReference("inv-go-1"))
	if err != nil {
		return err
	}
	mine := fmt.Sprintf("go-%d-%d", os.Getpid(), time.Now().UnixNano())
	second, err := c.TakeNumbers(ctx, key, 1, idpool.WithReference("inv-go-2"), idpool.WithIdempotencyKey(mine))
	if err != nil {
		return err
	}
	again, err := c.TakeNumbers(ctx, key, 1, idpool.WithReference("inv-go-2"), idpool.WithIdempotencyKey(mine))
	if err != nil {
		return err
	}
	if strings.Join(again, ",") != strings.Join(second, ",") {
		return fmt.Errorf("the same key answered %v after %v", again, second)
	}
	_, err = c.TakeNumbers(ctx, key, 1, idpool.WithReference("inv-go-3"), idpool.WithIdempotencyKey(mine))
	if err := expectHTTP(err, idpool.ErrConflict, 409, "conflict"); err != nil {
		return err
	}
	for _, n := range first {
		fmt.Println("gapless inv-go-1 " + n)
	}
	for _, n := range second {
		fmt.Println("gapless inv-go-2 " + n)
	}
	return nil
}

// numbers: a business-number entity: TakeNumbers answers its numbers as
// strings; Take (int64 ids) refuses them with *BusinessNumberError holding the
// numbers it took. Each is printed as "number <n>" for the test.
func numbers() error {
	ctx := context.Background()
	key := env("NUMBER_KEY", "")
	c, err := idpool.New(idpool.Options{Endpoints: endpoints(), Secrets: map[string]string{key: env("NUMBER_SECRET", "")}})
	if err != nil {
		return err
	}
	taken, err := c.TakeNumbers(ctx, key, 3)
	if err != nil {
		return err
	}
	one, err := c.NextNumber(ctx, key)
	if err != nil {
		return err
	}
	taken = append(taken, one)
	_, err = c.Take(ctx, key, 2)
	var b *idpool.BusinessNumberError
	if !errors.As(err, &b) || !errors.Is(err, idpool.ErrBusinessNumbers) {
		return fmt.Errorf("take of a business-number entity: %v", err)
	}
	if len(b.Numbers) != 2 || !strings.Contains(err.Error(), "TakeNumbers") {
		return fmt.Errorf("unclear: %v %v", err, b.Numbers)
	}
	for _, n := range append(taken, b.Numbers...) {
		fmt.Println("number " + n)
	}
	return nil
}

// leasedDefaultTrend: leased ids of a trend entity registered with the defaults
// (5,000 a second): the leases double past what the entity allows a second
// (429) and at once (400); Next waits and goes on.
func leasedDefaultTrend() error {
	key := env("TREND_KEY", "")
	c, err := idpool.New(idpool.Options{Endpoints: endpoints(), Secrets: map[string]string{key: env("TREND_SECRET", "")},
		Lease: idpool.LeaseOptions{Wait: 15 * time.Second}})
	if err != nil {
		return err
	}
	defer c.Close()
	leased := c.Leased(key)
	seen := make(map[int64]bool, 12_000)
	for k := 0; k < 12_000; k++ {
		id, err := leased.Next()
		if err != nil {
			return err
		}
		if seen[id] {
			return fmt.Errorf("id %d twice", id)
		}
		seen[id] = true
	}
	fmt.Printf("trend leases %d\n", leased.Leases())
	return nil
}

// deadURL: an address nothing listens on (a port bound, then closed).
func deadURL() string {
	stub := httptest.NewServer(http.NotFoundHandler())
	stub.Close()
	return stub.URL
}

func jsonError(w http.ResponseWriter, status int, code, message string) {
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"error":{"code":%q,"message":%q}}`, code, message)
}

// lastAnswer: one endpoint answers 500 with the service's JSON error, the other
// refuses connections: the final error leads with the answer (status, code,
// message), whichever endpoint was asked last.
func lastAnswer() error {
	stub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		jsonError(w, 500, "internal", "broken codec")
	}))
	defer stub.Close()
	c, _ := idpool.New(idpool.Options{Endpoints: []string{stub.URL, deadURL()}, Secrets: map[string]string{"e": "s"},
		DownFor: 50 * time.Millisecond, Deadline: 1500 * time.Millisecond})
	_, err := c.Next(context.Background(), "e")
	var u *idpool.UnavailableError
	if !errors.As(err, &u) {
		return fmt.Errorf("expected UnavailableError, got %v", err)
	}
	if e := expectHTTP(u.LastAnswer(), nil, 500, "internal"); e != nil {
		return e
	}
	if e := expectHTTP(err, nil, 500, "internal"); e != nil {
		return fmt.Errorf("errors.As: %v", e)
	}
	if !strings.Contains(err.Error(), "last answer: ") || !strings.Contains(err.Error(), "500 internal: broken codec") {
		return fmt.Errorf("the message hides the answer: %v", err)
	}
	return nil
}

// oneKey: one take over two endpoints meeting a refused connection, a 500 and a
// 503 still in progress (Retry-After: 1) before its answer: every attempt
// carries the one Idempotency-Key.
func oneKey() error {
	var mu sync.Mutex
	var keys []string
	stub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		n := len(keys)
		mu.Unlock()
		switch n {
		case 1:
			jsonError(w, 500, "internal", "x")
		case 2:
			w.Header().Set("Retry-After", "1")
			jsonError(w, 503, "unavailable", "still in progress")
		default:
			fmt.Fprint(w, `{"ids":["INV20261129-000001"]}`)
		}
	}))
	defer stub.Close()
	c, _ := idpool.New(idpool.Options{Endpoints: []string{deadURL(), stub.URL}, Secrets: map[string]string{"e": "s"},
		DownFor: 50 * time.Millisecond})
	n, err := c.NextNumber(context.Background(), "e")
	if err != nil {
		return err
	}
	if n != "INV20261129-000001" {
		return fmt.Errorf("number %q", n)
	}
	if len(keys) != 3 || keys[0] == "" || keys[1] != keys[0] || keys[2] != keys[0] {
		return fmt.Errorf("idempotency keys %v", keys)
	}
	return nil
}

// leaseWaits: a lease answered 429, then 503, each with Retry-After: 1:
// Leased().Next() waits them out and hands out the id.
func leaseWaits() error {
	var calls atomic.Int64
	stub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch calls.Add(1) {
		case 1:
			w.Header().Set("Retry-After", "1")
			jsonError(w, 429, "rate_limited", "wait")
		case 2:
			w.Header().Set("Retry-After", "1")
			jsonError(w, 503, "unavailable", "wait")
		default:
			fmt.Fprint(w, `{"first":"7","last":"10","count":4,"delta":1,"remainder":0}`)
		}
	}))
	defer stub.Close()
	c, _ := idpool.New(idpool.Options{Endpoints: []string{stub.URL}, Secrets: map[string]string{"e": "s"},
		Lease: idpool.LeaseOptions{Wait: 5 * time.Second}})
	defer c.Close()
	id, err := c.Leased("e").Next()
	if err != nil {
		return err
	}
	if id != 7 {
		return fmt.Errorf("id %d", id)
	}
	return nil
}

// retryAfter: a local server answers status with Retry-After: 1, then 200; the
// client waits a second and retries with the same Idempotency-Key (a 429 only
// with WaitOnRateLimit).
func retryAfter(status int, code string, waitOnRateLimit bool) error {
	var mu sync.Mutex
	var keys []string
	var times []time.Time
	stub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		times = append(times, time.Now())
		first := len(keys) == 1
		mu.Unlock()
		if first {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(status)
			fmt.Fprintf(w, `{"error":{"code":%q,"message":"wait"}}`, code)
			return
		}
		fmt.Fprint(w, `{"ids":["9223372036854775807"]}`)
	}))
	defer stub.Close()
	c, _ := idpool.New(idpool.Options{Endpoints: []string{stub.URL}, Secrets: map[string]string{"e": "s"}, WaitOnRateLimit: waitOnRateLimit})
	id, err := c.Next(context.Background(), "e")
	if err != nil {
		return err
	}
	if id != 9223372036854775807 {
		return fmt.Errorf("id %d", id)
	}
	if len(keys) != 2 || keys[0] == "" || keys[0] != keys[1] {
		return fmt.Errorf("idempotency keys %v", keys)
	}
	if waited := times[1].Sub(times[0]); waited < 950*time.Millisecond {
		return fmt.Errorf("retried after %v, before Retry-After: 1", waited)
	}
	return nil
}

// unavailable: every endpoint failing gives an UnavailableError with each attempt, the last carrying the service's code.
func unavailable() error {
	var seen atomic.Int64
	stub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Add(1)
		w.WriteHeader(503)
		fmt.Fprint(w, `{"error":{"code":"unavailable","message":"down"}}`)
	}))
	defer stub.Close()
	c, _ := idpool.New(idpool.Options{Endpoints: []string{stub.URL}, Secrets: map[string]string{"e": "s"},
		DownFor: 100 * time.Millisecond, Deadline: 1500 * time.Millisecond})
	_, err := c.Next(context.Background(), "e")
	var u *idpool.UnavailableError
	if !errors.As(err, &u) {
		return fmt.Errorf("expected UnavailableError, got %v", err)
	}
	if len(u.Attempts) < 2 || int64(len(u.Attempts)) != seen.Load() {
		return fmt.Errorf("%d attempts, %d requests", len(u.Attempts), seen.Load())
	}
	return expectHTTP(u.Unwrap(), nil, 503, "unavailable")
}

func bench() {
	perRun := envInt("BENCH_IDS", 200_000_000)
	c := client(endpoints())
	defer c.Close()
	leased := c.Leased(env("LEASE_KEY", ""))
	if err := leased.Open(); err != nil {
		fail("open", err)
	}
	for _, spec := range strings.Split(env("BENCH_THREADS", "1"), ",") {
		threads, _ := strconv.Atoi(spec)
		each := perRun / threads
		var sink atomic.Int64
		var wg sync.WaitGroup
		t0 := time.Now()
		for t := 0; t < threads; t++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var sum int64
				for k := 0; k < each; k++ {
					id, err := leased.Next()
					if err != nil {
						fail("bench", err)
					}
					sum += id
				}
				sink.Add(sum)
			}()
		}
		wg.Wait()
		seconds := time.Since(t0).Seconds()
		fmt.Printf(`{"lang":"go","threads":%d,"ids":%d,"seconds":%.3f,"perSecond":%.0f,"leases":%d,"sink":%d}`+"\n",
			threads, each*threads, seconds, float64(each*threads)/seconds, leased.Leases(), sink.Load()&1)
	}
}

// spent: one client over both instances; SPENT_KEY's period is taken until the
// service answers 503 period_exhausted; then each take of it ends at once (one
// attempt, under a second), and TAKE_KEY through the same client is answered at
// once: one entity's refusal marks no endpoint down.
func spent() error {
	ctx := context.Background()
	key, other := env("SPENT_KEY", ""), env("TAKE_KEY", "")
	c, err := idpool.New(idpool.Options{Endpoints: endpoints(), Secrets: map[string]string{key: env("SPENT_SECRET", ""), other: env("TAKE_SECRET", "")}})
	if err != nil {
		return err
	}
	defer c.Close()
	refused := func(err error) *idpool.UnavailableError {
		var u *idpool.UnavailableError
		if errors.As(err, &u) && u.Refused && u.LastAnswer().Code == idpool.CodePeriodExhausted {
			return u
		}
		return nil
	}
	for i := 0; ; i++ {
		if i == 20 {
			return errors.New("no period_exhausted after 20 takes")
		}
		n, err := c.NextNumber(ctx, key)
		if err == nil {
			fmt.Println("number " + n)
			continue
		}
		if refused(err) == nil {
			return err
		}
		break
	}
	for i := 0; i < 3; i++ {
		start := time.Now()
		_, err := c.NextNumber(ctx, key)
		u := refused(err)
		if took := time.Since(start); u == nil || len(u.Attempts) != 1 || took >= time.Second {
			return fmt.Errorf("%v after %v", err, took)
		}
	}
	start := time.Now()
	if _, err := c.Take(ctx, other, 1); err != nil {
		return fmt.Errorf("another entity: %w", err)
	}
	took := time.Since(start)
	if took >= time.Second {
		return fmt.Errorf("another entity waited %v", took)
	}
	fmt.Printf("other %d ms\n", took.Milliseconds())
	return nil
}
