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

/** The bytes of `RPUSH key` before its `count` elements. */
function rpushHead(key: string, count: number): string {
  return `*${count + 2}\r\n$5\r\nrpush\r\n$${Buffer.byteLength(key)}\r\n${key}\r\n`;
}

/** A command whose bytes its subclass's constructor writes once: ioredis's Script subclasses Command this way too. */
abstract class WrittenCommand extends Command {
  protected wire = Buffer.alloc(0);

  override toWritable(): Buffer {
    return this.wire;
  }
}

/** Powers of ten up to 10^16: DIGITS_ABOVE[d] is the least number of d + 1 digits. */
const DIGITS_ABOVE = Array.from({ length: 17 }, (_, d) => 10 ** d);

/**
 * `RPUSH key id …`, its bytes written here once: ioredis's string concatenation and UTF-8 encoding cost ~200 µs per
 * 1,000 ids (CPU profile). Ids below 2^53 are numbers written digit by digit; beyond, decimal strings (≤ 20 digits).
 */
export class RpushIds extends WrittenCommand {
  constructor(key: string, ids: PushIds) {
    super('rpush', [key]);
    const head = rpushHead(key, ids.length);
    // `$NN\r\n` + at most 20 digits + `\r\n` an id.
    const wire = Buffer.allocUnsafe(Buffer.byteLength(head) + ids.length * 27);
    let at = wire.write(head, 0);
    if (ids instanceof Float64Array) {
      for (const id of ids) {
        let n = 1;
        while (n < 16 && id >= DIGITS_ABOVE[n]) n++;
        at = bulkHeader(wire, at, n);
        // Two halves below 10^8, written by small-integer arithmetic (~2.5x faster than dividing the id as a double).
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
}

/** Business numbers of one period by their sequences: each is `head`, the sequence zero-padded to `width`, `tail`. */
export interface NumberRun {
  readonly head: string;
  readonly tail: string;
  readonly width: number;
  /** Sequences below 2^53, in push order. */
  readonly seqs: Float64Array;
}

/** Consecutive sequences written as one: a run of this many from a multiple of it shares all but its last two digits. */
const BLOCK = 100;

/**
 * `RPUSH key number …` of a {@link NumberRun}: elements differ only in the sequence's digits, so the wire is one
 * element filled natively and each sequence written over its zeros (a string per number was the refill's cost,
 * docs/benchmarks.md). Each {@link BLOCK} of consecutive sequences from a multiple of it is one copy of a block ending
 * 00 to 99, its higher digits set where they changed (1,000 numbers: ~37 µs digit by digit, ~12 µs so).
 */
export class RpushNumbers extends WrittenCommand {
  constructor(key: string, run: NumberRun) {
    super('rpush', [key]);
    const number = `${run.head}${'0'.repeat(run.width)}${run.tail}`;
    // Templates are ASCII (template.ts): one byte a character.
    const element = Buffer.from(`$${number.length}\r\n${number}\r\n`, 'latin1');
    const size = element.length;
    const lastDigit = size - 3 - run.tail.length;
    const head = rpushHead(key, run.seqs.length);
    const start = Buffer.byteLength(head);
    const { seqs } = run;
    const wire = Buffer.allocUnsafe(start + seqs.length * size);
    wire.write(head, 0);
    if (seqs.length > 0) wire.fill(element, start);
    let block: Buffer | undefined;
    // The digits above the last two that `block` holds, lowest first (none: zeros).
    let held: number[] = [];
    for (let i = 0, at = start; i < seqs.length;) {
      const seq = seqs[i];
      if (run.width >= 2 && seq % BLOCK === 0 && consecutive(seqs, i, BLOCK)) {
        block ??= lastTwoDigits(element, lastDigit);
        // The block before held the digits one below: mostly only the lowest of them changes.
        const above = digitsOf(seq / BLOCK);
        for (let d = 0; d < Math.max(above.length, held.length); d++) {
          const digit = above[d] ?? 48;
          if (digit === (held[d] ?? 48)) continue;
          for (let c = lastDigit - 2 - d; c < block.length; c += size) block[c] = digit;
        }
        held = above;
        block.copy(wire, at);
        i += BLOCK;
        at += BLOCK * size;
      } else {
        writeDigits(wire, at + lastDigit, seq);
        i++;
        at += size;
      }
    }
    this.wire = wire;
  }
}

/** Whether `seqs[i..i+n)` are n consecutive sequences. */
function consecutive(seqs: Float64Array, i: number, n: number): boolean {
  if (i + n > seqs.length || seqs[i + n - 1] !== seqs[i] + n - 1) return false;
  for (let k = 1; k < n - 1; k++) if (seqs[i + k] !== seqs[i] + k) return false;
  return true;
}

/** {@link BLOCK} elements, `element` with its last two digits (ending at `lastDigit`) 00 to 99. */
function lastTwoDigits(element: Buffer, lastDigit: number): Buffer {
  const block = Buffer.allocUnsafe(BLOCK * element.length);
  block.fill(element);
  for (let e = 0; e < BLOCK; e++) {
    block[e * element.length + lastDigit - 1] = 48 + ((e / 10) | 0);
    block[e * element.length + lastDigit] = 48 + (e % 10);
  }
  return block;
}

/** The digits of `n` (a whole number below 2^53), lowest first; none for 0. */
function digitsOf(n: number): number[] {
  const digits: number[] = [];
  for (let rest = n; rest > 0; rest = Math.floor(rest / 10)) digits.push(48 + (rest % 10));
  return digits;
}

/** Writes `seq`'s digits leftwards from `c` over the padding zeros. */
function writeDigits(wire: Buffer, c: number, seq: number): void {
  // As RpushIds: two halves below 10^8, written by small-integer arithmetic; the padding zeros are in place.
  let high = Math.floor(seq / 1e8);
  let low = seq - high * 1e8;
  const end = c;
  for (const lowEnd = c - 8; low > 0 && c > lowEnd; c--) {
    const rest = (low / 10) | 0;
    wire[c] = 48 + low - rest * 10;
    low = rest;
  }
  for (c = end - 8; high > 0; c--) {
    const rest = (high / 10) | 0;
    wire[c] = 48 + high - rest * 10;
    high = rest;
  }
}

/** Queues an {@link RpushIds} or {@link RpushNumbers} on a MULTI: ioredis sends a Command subclass as it is. */
export function queueRpush<T extends object>(multi: T, command: RpushIds | RpushNumbers): T {
  (multi as unknown as { sendCommand(command: Command): unknown }).sendCommand(command);
  return multi;
}
