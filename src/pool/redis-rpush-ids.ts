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

/** Business numbers of one period by their sequences: each is `head`, the sequence zero-padded to `width`, `tail`. */
export interface NumberRun {
  readonly head: string;
  readonly tail: string;
  readonly width: number;
  /** Sequences below 2^53, in push order. */
  readonly seqs: Float64Array;
}

/**
 * `RPUSH key number …` of a {@link NumberRun}: every element is the same
 * bytes but for the sequence's digits (the period's date is the same in
 * all), so the wire is one element repeated by a native fill and each
 * sequence's digits are written over its zeros. No string per number:
 * formatting 10,000 strings a push and copying them char by char was the
 * business-number refill's cost (docs/benchmarks.md).
 */
export class RpushNumbers extends Command {
  private readonly wire: Buffer;

  constructor(key: string, run: NumberRun) {
    super('rpush', [key]);
    const number = `${run.head}${'0'.repeat(run.width)}${run.tail}`;
    // Templates are ASCII (template.ts): one byte a character.
    const element = Buffer.from(`$${number.length}\r\n${number}\r\n`, 'latin1');
    const lastDigit = element.length - 3 - run.tail.length;
    const head = `*${run.seqs.length + 2}\r\n$5\r\nrpush\r\n$${Buffer.byteLength(key)}\r\n${key}\r\n`;
    const start = Buffer.byteLength(head);
    const wire = Buffer.allocUnsafe(start + run.seqs.length * element.length);
    wire.write(head, 0);
    if (run.seqs.length > 0) wire.fill(element, start);
    let at = start;
    for (const seq of run.seqs) {
      // As RpushIds: two halves below 10^8, written by small-integer arithmetic; the padding zeros are in place.
      let high = Math.floor(seq / 1e8);
      let low = seq - high * 1e8;
      let c = at + lastDigit;
      for (const lowEnd = c - 8; low > 0 && c > lowEnd; c--) {
        const rest = (low / 10) | 0;
        wire[c] = 48 + low - rest * 10;
        low = rest;
      }
      for (c = at + lastDigit - 8; high > 0; c--) {
        const rest = (high / 10) | 0;
        wire[c] = 48 + high - rest * 10;
        high = rest;
      }
      at += element.length;
    }
    this.wire = wire;
  }

  override toWritable(): Buffer {
    return this.wire;
  }
}

/** Queues an {@link RpushIds} or {@link RpushNumbers} on a MULTI: ioredis sends a Command subclass as it is. */
export function queueRpush<T extends object>(multi: T, command: RpushIds | RpushNumbers): T {
  (multi as unknown as { sendCommand(command: Command): unknown }).sendCommand(command);
  return multi;
}
