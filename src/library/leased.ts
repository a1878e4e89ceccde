import { type EntityOptions, IdpoolClient, type TakeOptions } from '../client/client';
import { IdpoolLeaseNotReadyError, type LeasedIds } from '../client/leased-ids';
import { GeneratorClosedError, InvalidCountError, InvalidOptionError, SegmentsNotReadyError } from './errors';
import { type Id, type IdGenerator, MAX_TAKE, isTakeCount } from './loader';
import type { ServiceOptions, Settings } from './options';

/**
 * `createIdGenerator({ service })`: segments leased from the service (`POST /apps/:key/segments`) through the
 * client SDK, so only entity secrets are needed. Only `trend` entities lease: a `monotonic` one gets a 409.
 */
export class LeasedIdGenerator<T extends Id> implements IdGenerator<T> {
  private readonly buffers = new Map<string, LeasedIds<number> | LeasedIds<bigint>>();
  private readonly client: IdpoolClient;
  /** Business numbers are taken from the service, whose clock decides their period. */
  private readonly takes: IdpoolClient;
  /** As BufferedIdGenerator's: most callers draw from one entity in a row. */
  private lastKey: string | undefined;
  private lastBuffer: LeasedIds<T> | undefined;
  private closed = false;

  constructor(service: ServiceOptions, ids: 'number' | 'bigint', settings: Settings) {
    const keys = Object.keys(service.secrets);
    if (keys.length === 0) throw new InvalidOptionError('service', 'service.secrets must name at least one entity');
    const client = (entity: (secret: string) => EntityOptions) =>
      new IdpoolClient({
        endpoints: service.url,
        entities: Object.fromEntries(keys.map((key) => [key, entity(service.secrets[key])])),
      });
    const { prefetchAt, maxStep: maxSize, targetSegmentMs, waitMs } = settings;
    try {
      this.client = client((secret) => ({
        secret,
        mode: 'trend',
        lease: { ids, prefetchAt, maxSize, targetSegmentMs, waitMs },
      }));
      this.takes = client((secret) => ({ secret }));
    } catch (err) {
      throw new InvalidOptionError('service', (err as Error).message);
    }
    for (const key of keys) this.buffers.set(key, this.client.leased(key));
  }

  async open(...entityKeys: string[]): Promise<void> {
    await Promise.all(entityKeys.map((key) => this.translated(() => this.buffer(key).open(), key)));
  }

  next(entityKey: string): T {
    const buffer = entityKey === this.lastKey && this.lastBuffer ? this.lastBuffer : this.buffer(entityKey);
    try {
      return buffer.next();
    } catch (err) {
      throw this.translate(err, entityKey);
    }
  }

  nextAsync(entityKey: string): Promise<T> {
    return this.translated(() => this.buffer(entityKey).nextAsync(), entityKey);
  }

  take(entityKey: string, count: number): Promise<T[]> {
    if (!isTakeCount(count)) return Promise.reject(new InvalidCountError(count, MAX_TAKE));
    return this.translated(() => this.buffer(entityKey).take(count), entityKey);
  }

  numbers(entityKey: string, count = 1, options: TakeOptions = {}): Promise<string[]> {
    if (!isTakeCount(count)) return Promise.reject(new InvalidCountError(count, MAX_TAKE));
    return this.translated(() => {
      this.buffer(entityKey); // closed, or no secret for the entity: refused as take() refuses, never thrown at once
      return this.takes.take(entityKey, count, options);
    }, entityKey);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.lastKey = this.lastBuffer = undefined;
    await Promise.all([...this.buffers.values()].map((b) => b.close()));
    this.client.close();
    this.takes.close();
  }

  private buffer(entityKey: string): LeasedIds<T> {
    if (this.closed) throw new GeneratorClosedError();
    const buffer = this.buffers.get(entityKey) as LeasedIds<T> | undefined;
    if (!buffer) throw new InvalidOptionError('service', `entity "${entityKey}" has no secret in service.secrets`);
    this.lastKey = entityKey;
    this.lastBuffer = buffer;
    return buffer;
  }

  private async translated<R>(run: () => Promise<R>, entityKey: string): Promise<R> {
    try {
      return await run();
    } catch (err) {
      throw this.translate(err, entityKey);
    }
  }

  /** The library's own errors for "not ready" and "closed"; the client's HTTP errors (409 for a monotonic entity, 401, …) pass as they are. */
  private translate(err: unknown, entityKey: string): unknown {
    if (this.closed) return new GeneratorClosedError();
    if (err instanceof IdpoolLeaseNotReadyError) return new SegmentsNotReadyError(entityKey, err.message);
    return err;
  }
}
