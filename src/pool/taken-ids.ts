/** The ids of one take, in order: a large Redis take's joined ({@link JoinedIds}), others as strings ({@link listedIds}). */
export interface TakenIds {
  readonly length: number;
  /** Ids `from` (inclusive) to `to` (exclusive); no id is copied. */
  slice(from: number, to: number): TakenIds;
  /** The ids as decimal strings. */
  toArray(): string[];
  /** The ids as a JSON array of strings, `["1","2"]`. Ids are digits only, so nothing needs escaping. */
  toJson(): string;
  /** The take route's answer, `{"ids":[…]}`: a latin1 string, or its bytes where the ids are held as bytes. */
  body(): string | Buffer;
  /** True when a record of an earlier take with the same Idempotency-Key answered these (a gapless series' ledger). */
  readonly replayed?: boolean;
}

/** Ids that are an array of decimal strings (a small take, the in-process pool, the snowflake generator). */
export function listedIds(ids: readonly string[]): TakenIds {
  return new ListedIds(ids);
}

class ListedIds implements TakenIds {
  constructor(private readonly ids: readonly string[]) {}

  get length(): number {
    return this.ids.length;
  }

  slice(from: number, to: number): TakenIds {
    return new ListedIds(this.ids.slice(from, to));
  }

  toArray(): string[] {
    return this.ids.slice();
  }

  toJson(): string {
    return this.ids.length === 0 ? '[]' : `["${this.ids.join('","')}"]`;
  }

  body(): string {
    return `{"ids":${this.toJson()}}`;
  }
}

const SEPARATOR = '","';
const QUOTE = 34;
const COMMA = 44;
/** The take route's answer around the ids: `{"ids":["` … `"]}`. */
const BODY_HEAD = '{"ids":["';
const BODY_TAIL = '"]}';

/**
 * Ids as the bytes of the take route's answer, `{"ids":["1","2"]}`, with where each id starts, made from a Redis reply
 * in one copy. A string per id (ioredis's LPOP) cost ~75 µs per 1,000 ids; one latin1 string of them all, two more
 * copies (~40 µs per 1,000 24-byte business numbers).
 */
export class JoinedIds implements TakenIds {
  private constructor(
    /** `{"ids":["`, the ids joined by `","`, `"]}`. */
    private readonly bytes: Buffer,
    /** Where id i starts in `bytes`; one entry more, where an id after the last would start. */
    private readonly starts: Uint32Array,
    private readonly first: number,
    readonly length: number,
  ) {}

  /** The ids whose digits are `items` (e.g. Buffers of a Redis reply; ASCII), copied once. */
  static fromBytes(items: readonly Uint8Array[]): JoinedIds {
    let size = BODY_HEAD.length + BODY_TAIL.length;
    for (const item of items) size += item.length + SEPARATOR.length;
    const bytes = Buffer.allocUnsafe(size);
    const starts = new Uint32Array(items.length + 1);
    let at = bytes.write(BODY_HEAD, 0, 'latin1');
    for (let i = 0; i < items.length; i++) {
      if (i > 0) {
        bytes[at++] = QUOTE;
        bytes[at++] = COMMA;
        bytes[at++] = QUOTE;
      }
      starts[i] = at;
      const item = items[i];
      bytes.set(item, at);
      at += item.length;
    }
    starts[items.length] = at + SEPARATOR.length;
    at += bytes.write(BODY_TAIL, at, 'latin1');
    return new JoinedIds(bytes.subarray(0, at), starts, 0, items.length);
  }

  slice(from: number, to: number): TakenIds {
    const start = Math.min(Math.max(from, 0), this.length);
    const end = Math.min(Math.max(to, start), this.length);
    return new JoinedIds(this.bytes, this.starts, this.first + start, end - start);
  }

  toArray(): string[] {
    return this.length === 0 ? [] : this.joined().split(SEPARATOR);
  }

  toJson(): string {
    return this.length === 0 ? '[]' : `["${this.joined()}"]`;
  }

  /** The whole take: its bytes as they are. A share of it (a coalesced take split among requests): one copy. */
  body(): string | Buffer {
    if (this.length === 0) return `{"ids":[]}`;
    if (this.first === 0 && this.length === this.starts.length - 1) return this.bytes;
    const [from, to] = this.range();
    const out = Buffer.allocUnsafe(BODY_HEAD.length + (to - from) + BODY_TAIL.length);
    let at = out.write(BODY_HEAD, 0, 'latin1');
    at += this.bytes.copy(out, at, from, to);
    out.write(BODY_TAIL, at, 'latin1');
    return out;
  }

  /** Where these ids, joined by `","`, are in `bytes`. */
  private range(): [number, number] {
    return [this.starts[this.first], this.starts[this.first + this.length] - SEPARATOR.length];
  }

  private joined(): string {
    const [from, to] = this.range();
    return this.bytes.toString('latin1', from, to);
  }
}
