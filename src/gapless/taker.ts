import type { EntityConfig } from '../entities/entity';
import { type TakenIds, listedIds } from '../pool/taken-ids';
import type { TakeRequest, Taker } from '../take/take-service';
import type { GaplessSeries } from './series';

/**
 * The take service's `gapless` kind. Not coalesced by the service: each
 * take carries its own Idempotency-Key and reference into the ledger; the
 * series groups concurrent takes itself, each with its own rows.
 */
export class GaplessTaker implements Taker {
  readonly coalesce = false;

  constructor(private readonly series: Pick<GaplessSeries, 'take'>) {}

  async take(entity: EntityConfig, count: number, request?: TakeRequest): Promise<TakenIds> {
    const { numbers, replayed } = await this.series.take(entity, count, request);
    return Object.assign(listedIds(numbers), { replayed });
  }

  /** Never asked (`coalesce` is false): the series shares transactions itself. */
  takeShared(): Promise<TakenIds | undefined> {
    return Promise.resolve(undefined);
  }
}
