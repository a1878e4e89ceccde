import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpApp } from '../../src/http/app';
import { httpDeps } from '../support/http-deps';
import { FakeClock } from '../support/clock';

/** A wall clock no real one shows now: the error bodies must carry it, not Date.now(). */
const FAKE_NOW = Date.UTC(2031, 0, 2, 3, 4, 5, 678);

describe("Leaf's and Tinyid's error bodies take their timestamp from the injected clock", () => {
  let server: Server;
  let base: string;

  beforeAll(async () => {
    const app = createHttpApp(
      httpDeps({
        compat: ['leaf', 'tinyid'],
        registry: {
          find: async () => undefined,
          findByTag: async () => undefined,
          authenticate: async () => undefined,
        } as never,
        takes: { take: () => Promise.reject(new Error('no take expected')) },
        clock: new FakeClock({ now: FAKE_NOW }),
      }),
    );
    server = app.listen(0);
    await new Promise((r) => server.once('listening', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it("Leaf's 500 (a key not served)", async () => {
    const res = await fetch(`${base}/api/segment/get/nobody`);
    expect(res.status).toBe(500);
    expect(await res.json()).toEqual({
      timestamp: FAKE_NOW,
      status: 500,
      error: 'Internal Server Error',
      message: 'Result{id=-2, status=EXCEPTION}',
      path: '/api/segment/get/nobody',
    });
  });

  it("Tinyid's 400 (a batchSize Spring cannot bind)", async () => {
    const res = await fetch(`${base}/tinyid/id/nextId?bizType=x&token=y&batchSize=abc`);
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ timestamp: FAKE_NOW, status: 400, error: 'Bad Request' });
  });
});
