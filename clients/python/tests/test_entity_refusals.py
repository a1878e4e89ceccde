"""A 503 about one entity never marks an endpoint down (docs/clients.md "Failover").

    cd clients/python && PYTHONPATH=src python3 -m unittest discover -s tests
"""

import http.server
import json
import threading
import time
import unittest

from idpool_client import IdpoolClient, UnavailableError

RETRY_AFTER = {"period_exhausted": "3461", "entity_held": "60", "gapless_ledger_behind": "60", "pool_exhausted": "1", "unavailable": "5"}


class FakeInstance(http.server.ThreadingHTTPServer):
    """Answers takes and leases as an idpool instance would: 503 codes scripted per entity, else ids."""

    def __init__(self, first_id):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.daemon_threads = True
        self.lock = threading.Lock()
        self.refuse = {}  # entity -> 503 codes still to answer, in order
        self.asked = []  # entity of every request
        self.next_id = first_id
        self.url = f"http://127.0.0.1:{self.server_address[1]}"
        threading.Thread(target=self.serve_forever, args=(0.05,), daemon=True).start()

    def stop(self):
        self.shutdown()
        self.server_close()


class _Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        server = self.server
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        entity = self.path.split("/")[2]
        with server.lock:
            server.asked.append(entity)
            codes = server.refuse.get(entity) or []
            code = codes.pop(0) if codes else None
            server.next_id += 1
            n = server.next_id
        if code:
            body = {"error": {"code": code, "message": f"{entity}: refused"}}
            self._answer(503, body, {"Retry-After": RETRY_AFTER[code]})
        elif self.path.endswith("/segments"):
            self._answer(200, {"first": str(n), "last": str(n), "count": 1, "delta": 1, "remainder": 0})
        else:
            self._answer(200, {"ids": [str(n)]})

    def _answer(self, status, body, headers=None):
        data = json.dumps(body).encode()
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class EntityRefusals(unittest.TestCase):
    def setUp(self):
        self.a, self.b = FakeInstance(0), FakeInstance(1000)
        self.client = IdpoolClient([self.a.url, self.b.url], {"receipts": "r", "orders": "o", "trendy": "t"},
                                   lease_min_size=1, lease_max_size=1)

    def tearDown(self):
        self.client.close()
        self.a.stop()
        self.b.stop()

    def refuse(self, entity, *codes):
        for instance in (self.a, self.b):
            instance.refuse[entity] = list(codes)

    def asked(self):
        return len(self.a.asked) + len(self.b.asked)

    def test_period_exhausted_ends_at_once_and_blocks_no_other_entity(self):
        self.refuse("receipts", *["period_exhausted"] * 20)
        for _ in range(20):
            with self.assertRaises(UnavailableError) as caught:
                self.client.take_numbers("receipts", 1)
            err = caught.exception
            self.assertTrue(err.refused)
            self.assertEqual(len(err.attempts), 1)
            answer = err.last_answer
            self.assertEqual((answer.status, answer.code, answer.retry_after), (503, "period_exhausted", 3461.0))
            self.assertTrue(str(err).startswith(f"idpool unavailable: {answer.endpoint}: 503 period_exhausted: "
                                                "receipts: refused"), str(err))
        self.assertEqual(self.asked(), 20)
        start = time.monotonic()
        self.assertEqual(len(self.client.take("orders", 1)), 1)
        self.assertLess(time.monotonic() - start, 0.5)
        self.assertEqual(self.asked(), 21)

    def test_entity_held_ends_at_once(self):
        self.ends_at_once("entity_held")

    def test_gapless_ledger_behind_ends_at_once(self):
        self.ends_at_once("gapless_ledger_behind")

    def ends_at_once(self, code):
        self.refuse("receipts", code)
        with self.assertRaises(UnavailableError) as caught:
            self.client.take("receipts", 1)
        self.assertTrue(caught.exception.refused)
        self.assertEqual(caught.exception.last_answer.code, code)
        self.assertEqual(self.asked(), 1)
        self.client.take("orders", 1)
        self.assertEqual(self.a.asked, ["receipts", "orders"])

    def test_pool_exhausted_waits_for_that_take_alone_without_marking_the_endpoint(self):
        self.a.refuse["receipts"] = ["pool_exhausted"]
        start = time.monotonic()
        self.client.take("receipts", 1)
        self.assertGreaterEqual(time.monotonic() - start, 0.9)
        self.assertEqual((self.a.asked, self.b.asked), (["receipts"], ["receipts"]))
        # A was never marked down: it answers another entity at once when B is the one refusing.
        self.b.refuse["orders"] = ["unavailable"]
        start = time.monotonic()
        self.client.take("orders", 1)
        self.assertLess(time.monotonic() - start, 0.5)
        self.assertEqual(self.a.asked, ["receipts", "orders"])

    def test_a_lease_waits_out_pool_exhausted_and_ends_at_period_exhausted(self):
        self.a.refuse["trendy"] = ["pool_exhausted"]
        self.client.leased("trendy").next()
        other = IdpoolClient([self.a.url, self.b.url], {"trendy": "t"}, lease_min_size=1, lease_max_size=1)
        with other:
            self.refuse("trendy", "period_exhausted", "period_exhausted")
            start = time.monotonic()
            with self.assertRaises(UnavailableError) as caught:
                other.leased("trendy").next()
            self.assertTrue(caught.exception.refused)
            self.assertLess(time.monotonic() - start, 0.5)


if __name__ == "__main__":
    unittest.main()
