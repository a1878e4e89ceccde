import { IdpoolError } from '../errors';

/**
 * The ledger holds less of a period than its high-water record says was
 * issued: the database went back (restored from a backup, failed over to a
 * replica that lagged). Issuing on would print numbers again; the series
 * stops until an operator enters the lost range (`idpool numbers
 * reconcile`). Retry-After is a minute: only that command ends it.
 */
export class LedgerBehindError extends IdpoolError {
  constructor(key: string, period: string, ledger: bigint, recorded: bigint, record: string) {
    super(
      503,
      'gapless_ledger_behind',
      `entity "${key}" period ${period}: the ledger ends at ${ledger} but the ${record} records ${recorded} issued (the database went back?); no number is issued until an operator runs idpool numbers reconcile ${key} --period ${period}`,
      60,
    );
  }
}
