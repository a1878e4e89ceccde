"""The client's checks against a real idpool, run by
test/integration/clients.test.ts (which reads the ids written to $OUT and
asserts on them) and bench/clients.bench.ts. The same modes as the Java and Go
programs: unique, failover, errors, bench, spent. Exit status 0 only when every check
here passed.

    PYTHONPATH=src python3 tests/check.py errors
"""

import http.server
import socket
import json
import os
import sys
import threading
import time
import uuid

from idpool_client import (BusinessNumberError, ConflictError, IdpoolClient, IdpoolHttpError, InvalidRequestError,
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
    check("last_answer", last_answer)
    check("one_key", one_key)
    check("lease_waits", lease_waits)
    check("numbers", numbers)
    check("leased_default_trend", leased_default_trend)
    check("gapless", gapless)
    print("done")


def gapless():
    """A gapless series through GAPLESS_ENDPOINTS, whose first endpoint drops the answer to each new
    Idempotency-Key (the test's proxy: the service issued the numbers, the client never heard): the
    retry on the next endpoint carries the same key and is answered the numbers already issued. Then
    the caller's own key twice: the same numbers; with another reference, 409. Prints
    ``gapless <reference> <number>`` for the test, which reads the ledger."""
    key = env("GAPLESS_KEY")
    c = IdpoolClient(env("GAPLESS_ENDPOINTS").split(","), {key: env("GAPLESS_SECRET")})
    first = c.take_numbers(key, 2, reference="inv-python-1")
    mine = f"python-{uuid.uuid4()}"
    second = c.take_numbers(key, 1, reference="inv-python-2", idempotency_key=mine)
    again = c.take_numbers(key, 1, reference="inv-python-2", idempotency_key=mine)
    if again != second:
        raise AssertionError(f"the same key answered {again} after {second}")
    expect_http(lambda: c.take_numbers(key, 1, reference="inv-python-3", idempotency_key=mine), ConflictError, 409,
                "conflict")
    for n in first:
        print(f"gapless inv-python-1 {n}")
    for n in second:
        print(f"gapless inv-python-2 {n}")


def numbers():
    """A business-number entity: take_numbers answers its numbers as strings; take (int ids) refuses
    them with BusinessNumberError holding the numbers it took. Each is printed as ``number <n>``."""
    key = env("NUMBER_KEY")
    c = IdpoolClient(ENDPOINTS, {key: env("NUMBER_SECRET")})
    taken = c.take_numbers(key, 3) + [c.next_number(key)]
    try:
        c.take(key, 2)
        raise AssertionError("take of a business-number entity answered int ids")
    except BusinessNumberError as err:
        if len(err.numbers) != 2 or "take_numbers" not in str(err):
            raise AssertionError(f"unclear: {err} {err.numbers}")
        taken += err.numbers
    for n in taken:
        print(f"number {n}")


def leased_default_trend():
    """Leased ids of a trend entity registered with the defaults (5,000 a second): the leases double
    past what the entity allows a second (429) and at once (400); next() waits and goes on."""
    key = env("TREND_KEY")
    with IdpoolClient(ENDPOINTS, {key: env("TREND_SECRET")}, lease_wait=15.0) as c:
        leased = c.leased(key)
        ids = [leased.next() for _ in range(12_000)]
        if len(set(ids)) != len(ids):
            raise AssertionError("an id twice")
        print(f"trend leases {leased.leases}")


def dead_port():
    """A port nothing listens on: bound, then closed."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def last_answer():
    """One endpoint answers 500 with the service's JSON error, the other refuses connections: the
    final error leads with the answer (status, code, message), whichever endpoint was asked last."""
    server = stub(lambda req: (500, {}, {"error": {"code": "internal", "message": "broken codec"}}))
    try:
        c = IdpoolClient([f"http://127.0.0.1:{server.server_address[1]}", f"http://127.0.0.1:{dead_port()}"],
                         {"e": "s"}, down_for=0.05, deadline=1.5)
        try:
            c.next("e")
        except UnavailableError as err:
            assert_http(err.last_answer, IdpoolHttpError, 500, "internal")
            if "last answer: " not in str(err) or "500 internal: broken codec" not in str(err):
                raise AssertionError(f"the message hides the answer: {err}")
            return
        raise AssertionError("no error")
    finally:
        server.shutdown()


def one_key():
    """One take over two endpoints meeting a refused connection, a 500 and a 503 still in progress
    (Retry-After: 1) before its answer: every attempt carries the one Idempotency-Key."""
    keys = []

    def answer(req):
        keys.append(req.headers.get("Idempotency-Key"))
        if len(keys) == 1:
            return 500, {}, {"error": {"code": "internal", "message": "x"}}
        if len(keys) == 2:
            return 503, {"Retry-After": "1"}, {"error": {"code": "unavailable", "message": "still in progress"}}
        return 200, {}, {"ids": ["INV20261129-000001"]}

    server = stub(answer)
    try:
        c = IdpoolClient([f"http://127.0.0.1:{dead_port()}", f"http://127.0.0.1:{server.server_address[1]}"],
                         {"e": "s"}, down_for=0.05)
        if c.next_number("e") != "INV20261129-000001":
            raise AssertionError("number")
        if len(keys) != 3 or not keys[0] or len(set(keys)) != 1:
            raise AssertionError(f"idempotency keys {keys}")
    finally:
        server.shutdown()


def lease_waits():
    """A lease answered 429, then 503, each with Retry-After: 1: leased().next() waits them out."""
    calls = []

    def answer(req):
        calls.append(1)
        if len(calls) == 1:
            return 429, {"Retry-After": "1"}, {"error": {"code": "rate_limited", "message": "wait"}}
        if len(calls) == 2:
            return 503, {"Retry-After": "1"}, {"error": {"code": "unavailable", "message": "wait"}}
        return 200, {}, {"first": "7", "last": "10", "count": 4, "delta": 1, "remainder": 0}

    server = stub(answer)
    try:
        with IdpoolClient(f"http://127.0.0.1:{server.server_address[1]}", {"e": "s"}, lease_wait=5.0) as c:
            id = c.leased("e").next()
            if id != 7:
                raise AssertionError(f"id {id}")
    finally:
        server.shutdown()


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


def spent():
    """One client over both instances: SPENT_KEY's period is taken until the service answers 503
    period_exhausted; then each take of it ends at once (one attempt, under a second), and TAKE_KEY
    through the same client is answered at once: one entity's refusal marks no endpoint down."""
    key, other = env("SPENT_KEY"), env("TAKE_KEY")
    with IdpoolClient(ENDPOINTS, {key: env("SPENT_SECRET"), other: env("TAKE_SECRET")}) as c:
        for _ in range(20):
            try:
                print(f"number {c.next_number(key)}", flush=True)
            except UnavailableError as err:
                if not err.refused or err.last_answer.code != "period_exhausted":
                    raise
                break
        else:
            raise AssertionError("no period_exhausted after 20 takes")
        for _ in range(3):
            start = time.monotonic()
            try:
                c.next_number(key)
                raise AssertionError("a spent period handed out a number")
            except UnavailableError as err:
                took = time.monotonic() - start
                if not err.refused or len(err.attempts) != 1 or took >= 1:
                    raise AssertionError(f"{err} after {len(err.attempts)} attempts, {took:.3f} s")
        start = time.monotonic()
        c.take(other, 1)
        took = time.monotonic() - start
        if took >= 1:
            raise AssertionError(f"another entity waited {took:.3f} s")
        print(f"other {took * 1000:.0f} ms", flush=True)


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
    elif mode == "spent":
        check("spent", spent)
    else:
        raise SystemExit("mode: unique | failover | errors | bench | spent")
