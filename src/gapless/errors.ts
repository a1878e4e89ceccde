import { IdpoolError } from '../errors';

/**
 * The ledger does not hold what was issued: it is behind the period's
 * high-water record (the database went back: restored from a backup,
 * failed over to a replica that lagged), or its last row is not where the
 * counter is (the two tables went back apart: a restore that put one back
 * before the other, or stopped between them). Issuing on would print
 * numbers again or leave a hole; the series stops until an operator enters
 * the missing range (`idpool numbers reconcile`). Retry-After is a minute:
 * only that command ends it.
 */
export class LedgerBehindError extends IdpoolError {
  constructor(key: string, period: string, why: string) {
    super(
      503,
      'gapless_ledger_behind',
      `entity "${key}" period ${period}: ${why} (the database went back?); no number is issued until an operator runs idpool numbers reconcile ${key} --period ${period}`,
      60,
    );
  }

  static behindRecord(key: string, period: string, ledger: bigint, recorded: bigint, record: string) {
    return new LedgerBehindError(
      key,
      period,
      `the ledger ends at ${ledger} but the ${record} records ${recorded} issued`,
    );
  }

  static outOfStep(key: string, period: string, counter: bigint, lastRow: bigint) {
    return new LedgerBehindError(
      key,
      period,
      `the counter is at ${counter} but the ledger's last row is ${lastRow === 0n ? 'none' : lastRow}`,
    );
  }
}
