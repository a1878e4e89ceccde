import { Command } from 'ioredis';
import type { PushIds } from './pool-store';

/** Writes `$n\r\n`, the header of a bulk string of n (< 100) bytes, at `at`; returns where it ends. */
function bulkHeader(wire: Buffer, at: number, n: number): number {
  wire[at++] = 36; // $
  if (n >= 10) wire[at++] = 48 + ((n / 10) | 0);
  wire[at++] = 48 + (n % 10);
  wire[at++] = 13;
  wire[at++] = 10;
  return at;
}

/** Powers of ten up to 10^16: DIGITS_ABOVE[d] is the least number of d + 1 digits. */
const DIGITS_ABOVE = Array.from({ length: 17 }, (_, d) => 10 ** d);

/**
 * `RPUSH key id …` with its bytes written here, once: ioredis builds a
 * command of 10,000 arguments by string concatenation and then encodes it
 * as UTF-8, which cost this process ~200 µs per 1,000 ids (CPU profile).
 * Ids below 2^53 come as numbers and their digits are written straight
 * from them; beyond, as decimal strings of at most 20 digits (idpool makes
 * them), copied byte by byte. ioredis itself subclasses Command this way
 * (its Script's EVALSHA), and writes a Buffer as it is.
 */
export class RpushIds extends Command {
  private readonly wire: Buffer;

  constructor(key: string, ids: PushIds) {
    super('rpush', [key]);
    const head = `*${ids.length + 2}\r\n$5\r\nrpush\r\n$${Buffer.byteLength(key)}\r\n${key}\r\n`;
    // `$NN\r\n` + at most 20 digits + `\r\n` an id.
    const wire = Buffer.allocUnsafe(Buffer.byteLength(head) + ids.length * 27);
    let at = wire.write(head, 0);
    if (ids instanceof Float64Array) {
      for (const id of ids) {
        let n = 1;
        while (n < 16 && id >= DIGITS_ABOVE[n]) n++;
        at = bulkHeader(wire, at, n);
        // Two halves below 10^8 each, whose digits small-integer arithmetic
        // writes (~2.5x faster here than dividing the whole id as a double).
        let high = Math.floor(id / 1e8);
        let low = id - high * 1e8;
        let c = at + n - 1;
        for (const lowEnd = n > 8 ? c - 7 : at; c >= lowEnd; c--) {
          const rest = (low / 10) | 0;
          wire[c] = 48 + low - rest * 10;
          low = rest;
        }
        for (; c >= at; c--) {
          const rest = (high / 10) | 0;
          wire[c] = 48 + high - rest * 10;
          high = rest;
        }
        at += n;
        wire[at++] = 13;
        wire[at++] = 10;
      }
    } else {
      for (const id of ids) {
        at = bulkHeader(wire, at, id.length);
        for (let c = 0; c < id.length; c++) wire[at++] = id.charCodeAt(c);
        wire[at++] = 13;
        wire[at++] = 10;
      }
    }
    this.wire = wire.subarray(0, at);
  }

  override toWritable(): Buffer {
    return this.wire;
  }
}
