import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqliteMemorySetup, type StoreSetup } from '../support/configs';
import { registerNew } from '../support/http';
import { type Instance, startInstance } from '../support/processes';

/** Resident set of a process, in MB (Linux). */
function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error('no VmRSS');
  return Number(m[1]) / 1024;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

// 50,000 keyed batches of 1,000 ids are ~2 GB of remembered answers (~42
// bytes an id): measured 2,123 MB peak RSS before the byte bound. With the
// default 64 MB bound: ~570 MB here, of which ~360 MB is the process under
// this load with a 1 MB bound (V8 heap slack, the pool of at most 1M ids,
// HTTP buffers) and the rest the 64 MB of answers plus the heap slack they
// bring. 800 MB separates the two with room for a loaded machine. Half of
// that is ~1 GB of answers unbounded, still past 800 MB, and the 64 MB
// bound is reached after ~1,500 batches: 25,000 prove the same in half the
// time (26 s of CI's serial part at 50,000).
const REQUESTS = 25_000;
const RSS_LIMIT_MB = 800;
const CONCURRENCY = 8;

describe('Idempotency-Key memory under distinct keys', () => {
  let setup: StoreSetup;
  let instance: Instance;

  beforeAll(async () => {
    setup = await sqliteMemorySetup();
    instance = await startInstance({ ...setup.env, IDPOOL_REQUEST_LOG: '0' });
  });

  afterAll(async () => {
    await instance?.stop();
    await setup?.cleanup();
  });

  it(`keeps ${REQUESTS} batches of 1,000 ids with distinct keys under ${RSS_LIMIT_MB} MB RSS and latency flat`, async () => {
    const { key, secret } = await registerNew(instance.url, 'idem', {
      step: 100_000,
      maxSizePerTimes: 1000,
      maxPoolSize: 1_000_000,
    });
    const latencies: number[] = new Array(REQUESTS);
    let next = 0;
    let peakRss = 0;
    const body = JSON.stringify({ count: 1000 });
    const worker = async () => {
      for (;;) {
        const i = next++;
        if (i >= REQUESTS) return;
        const started = performance.now();
        const res = await fetch(`${instance.url}/apps/${key}/ids`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${secret}`,
            'content-type': 'application/json',
            'idempotency-key': `req-${i}`,
          },
          body,
        });
        const text = await res.text();
        latencies[i] = performance.now() - started;
        if (res.status !== 200) throw new Error(`request ${i}: ${res.status} ${text.slice(0, 200)}`);
        if (i % 2000 === 0) peakRss = Math.max(peakRss, rssMb(instance.proc.pid!));
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    peakRss = Math.max(peakRss, rssMb(instance.proc.pid!));
    const first = median(latencies.slice(1000, 2000)); // the first thousand warm up the JIT and the pool
    const last = median(latencies.slice(-1000));
    process.stderr.write(
      `idempotency bound: peak RSS ${peakRss.toFixed(0)} MB; median latency ${first.toFixed(2)} ms (2nd thousand) vs ${last.toFixed(2)} ms (last thousand)\n`,
    );
    expect(peakRss).toBeLessThan(RSS_LIMIT_MB);
    // Flat: an O(n) eviction scan or a growing heap (GC pauses) shows up as a multiple.
    expect(last).toBeLessThan(first * 3 + 2);
  }, 600_000);
});
