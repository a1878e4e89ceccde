"""The client's checks against a real idpool, run by
test/integration/clients.test.ts (which reads the ids written to $OUT and
asserts on them) and bench/clients.bench.ts. The same modes as the Java and Go
programs: unique, failover, errors, bench. Exit status 0 only when every check
here passed.

    PYTHONPATH=src python3 tests/check.py errors
"""

import http.server
import json
import os
import sys
import threading
import time

from idpool_client import (ConflictError, IdpoolClient, IdpoolHttpError, InvalidRequestError,
                           RateLimitedError, UnauthorizedError, UnavailableError)

ENDPOINTS = os.environ.get("IDPOOL_ENDPOINTS", "").split(",")


def env(name, default=""):
    return os.environ.get(name, default)


def client(endpoints=ENDPOINTS):
    return IdpoolClient(endpoints, {env("TAKE_KEY", "x"): env("TAKE_SECRET", "x"),
                                    env("LEASE_KEY", "y"): env("LEASE_SECRET", "x")},
                        # lease_wait: longer than the 2 s default, as on a loaded CI machine a lease may take that long.
                        deadline=30.0, lease_wait=15.0, lease_min_size=int(env("LEASE_MIN", "0")) or None,
                        lease_max_size=int(env("LEASE_MAX", "10000000")))


def draw(threads, phases, spread):
    """Threads each taking TAKES batches of 5 over HTTP and LEASED leased ids, per
    phase; between phases it says "phase done" and waits for a line on stdin
    (the test kills an instance then). Every id goes to $OUT. With spread, odd
    threads use a second client that lists the endpoints the other way round (a
    client asks its first endpoint while it answers), so both instances serve."""
    takes, leased_each = int(env("TAKES", "25")), int(env("LEASED", "20000"))
    take = env("TAKE_KEY")
    lines, errors = [], []
    clients = [client(), client(ENDPOINTS[::-1] if spread else ENDPOINTS)]
    with clients[0], clients[1]:

        def work(c):
            leased = c.leased(env("LEASE_KEY"))
            leased.open()
            try:
                out = []
                for _ in range(takes):
                    out.extend(f"t {i}" for i in c.take(take, 5))
                out.extend(f"l {leased.next()}" for _ in range(leased_each))
                lines.append("\n".join(out))
            except Exception as err:  # reported below: a worker's failure fails the run
                errors.append(err)

        for phase in range(phases):
            workers = [threading.Thread(target=work, args=(clients[t % 2 if spread else 0],)) for t in range(threads)]
            for w in workers:
                w.start()
            for w in workers:
                w.join()
            if errors:
                raise errors[0]
            if phase < phases - 1:
                print("phase done", flush=True)
                if not sys.stdin.readline():
                    raise SystemExit("stdin closed before the go-on line")
        with open(env("OUT", "ids.txt"), "w") as f:
            f.write("\n".join(lines) + "\n")
        lease = env("LEASE_KEY")
        print(f"leases {clients[0].leased(lease).leases + clients[1].leased(lease).leases}")
    print("done")


def check(name, f):
    try:
        f()
    except Exception as err:
        print(f"FAIL {name}: {err!r}", flush=True)
        raise SystemExit(1)
    print(f"ok {name}", flush=True)


def expect_http(call, kind, status, code):
    try:
        call()
    except IdpoolHttpError as err:
        assert_http(err, kind, status, code)
        return err
    raise AssertionError(f"no error; expected {status} {code}")


def assert_http(err, kind, status, code):
    if not isinstance(err, kind) or err.status != status or err.code != code:
        raise AssertionError(f"expected {kind.__name__} {status} {code}, got {err!r}")


def errors():
    take, limited, flake = env("TAKE_KEY"), env("LIMITED_KEY"), env("FLAKE_KEY")
    c = IdpoolClient(ENDPOINTS, {take: env("TAKE_SECRET"), limited: env("LIMITED_SECRET"),
                                 flake: env("FLAKE_SECRET"), take + "-nosuch": "whatever"})
    wrong = IdpoolClient(ENDPOINTS, {take: "not-the-secret"})
    check("unauthorized", lambda: expect_http(lambda: wrong.take(take), UnauthorizedError, 401, "unauthorized"))
    # An unknown entity is 401 as a wrong secret is: the service does not say which keys exist.
    check("unknown_entity",
          lambda: expect_http(lambda: c.take(take + "-nosuch"), UnauthorizedError, 401, "unauthorized"))
    check("decode_refused", lambda: expect_http(lambda: c.decode(take, 1), InvalidRequestError, 400, "invalid_request"))
    check("conflict", lambda: expect_http(lambda: c.leased(take).next(), ConflictError, 409, "conflict"))
    check("invalid_request",
          lambda: expect_http(lambda: c.take(take, 1_000_000_000), InvalidRequestError, 400, "invalid_request"))

    def rate_limited():
        for _ in range(5):
            try:
                c.take(limited, 10)
            except IdpoolHttpError as err:
                assert_http(err, RateLimitedError, 429, "rate_limited")
                if err.retry_after is None:
                    raise AssertionError("429 without Retry-After")
                return
        raise AssertionError("never limited")

    check("rate_limited", rate_limited)

    def decode():
        id = c.next(flake)
        parts = c.decode(flake, id)
        if parts.id != id:
            raise AssertionError(f"decoded {parts.id} for {id}")
        if abs(parts.timestamp_ms / 1000 - time.time()) > 60:
            raise AssertionError(f"timestamp {parts.timestamp} is not now")

    check("decode", decode)
    check("retry_after", lambda: retry_after(503, "pool_exhausted", False))
    check("rate_limit_wait", lambda: retry_after(429, "rate_limited", True))
    check("unavailable", unavailable)
    print("done")


def stub(answer):
    """A local HTTP server whose every POST is answered by answer(request) -> (status, headers, body)."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            status, headers, body = answer(self)
            data = json.dumps(body).encode()
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def retry_after(status, code, wait_on_rate_limit):
    """``status`` with Retry-After: 1, then 200: the client waits a second and retries with the
    same Idempotency-Key (a 429 only with wait_on_rate_limit)."""
    seen = []

    def answer(req):
        seen.append((req.headers.get("Idempotency-Key"), time.monotonic()))
        if len(seen) == 1:
            return status, {"Retry-After": "1"}, {"error": {"code": code, "message": "wait"}}
        return 200, {}, {"ids": ["9223372036854775807"]}

    server = stub(answer)
    try:
        c = IdpoolClient(f"http://127.0.0.1:{server.server_address[1]}", {"e": "s"},
                         wait_on_rate_limit=wait_on_rate_limit)
        if c.next("e") != 9223372036854775807:
            raise AssertionError("id")
        if len(seen) != 2 or not seen[0][0] or seen[0][0] != seen[1][0]:
            raise AssertionError(f"idempotency keys {seen}")
        if seen[1][1] - seen[0][1] < 0.95:
            raise AssertionError(f"retried after {seen[1][1] - seen[0][1]:.3f} s, before Retry-After: 1")
    finally:
        server.shutdown()


def unavailable():
    """Every endpoint failing: UnavailableError with each attempt, the last carrying the service's code."""
    seen = []

    def answer(req):
        seen.append(1)
        return 503, {}, {"error": {"code": "unavailable", "message": "down"}}

    server = stub(answer)
    try:
        c = IdpoolClient(f"http://127.0.0.1:{server.server_address[1]}", {"e": "s"}, down_for=0.1, deadline=1.5)
        try:
            c.next("e")
        except UnavailableError as err:
            if len(err.attempts) < 2 or len(err.attempts) != len(seen):
                raise AssertionError(f"{len(err.attempts)} attempts, {len(seen)} requests")
            assert_http(err.last_error, IdpoolHttpError, 503, "unavailable")
            return
        raise AssertionError("no error")
    finally:
        server.shutdown()


def bench():
    per_run = int(env("BENCH_IDS", "10000000"))
    with client() as c:
        leased = c.leased(env("LEASE_KEY"))
        leased.open()
        for spec in env("BENCH_THREADS", "1").split(","):
            threads = int(spec)
            each = per_run // threads
            sums = []

            def work():
                nxt = leased.next
                s = 0
                for _ in range(each):
                    s += nxt()
                sums.append(s)

            workers = [threading.Thread(target=work) for _ in range(threads)]
            t0 = time.perf_counter()
            for w in workers:
                w.start()
            for w in workers:
                w.join()
            seconds = time.perf_counter() - t0
            print(json.dumps({"lang": "python", "threads": threads, "ids": each * threads, "seconds": round(seconds, 3),
                              "perSecond": round(each * threads / seconds), "leases": leased.leases,
                              "sink": sum(sums) & 1}), flush=True)


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "unique":
        draw(8, 1, True)
    elif mode == "failover":
        draw(4, 2, False)
    elif mode == "errors":
        errors()
    elif mode == "bench":
        bench()
    else:
        raise SystemExit("mode: unique | failover | errors | bench")
