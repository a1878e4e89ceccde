import type { Command } from 'commander';
import { ledgerCsv } from '../gapless/csv';
import type { Answer } from '../http/openapi/schemas';
import { entityPath } from './admin-api';
import type { CliContext } from './context';
import { fields } from './format';
import { secretApi } from './take-command';

/** Rows a page of the ledger asks for: the route's largest page. */
const EXPORT_PAGE = 1000;

export function addNumbersCommand(program: Command, ctx: CliContext): void {
  const numbers = program
    .command('numbers')
    .description("a gapless series' ledger: audit, export as CSV, reconcile after a restore");
  const command = (name: string, description: string) =>
    numbers
      .command(name)
      .description(description)
      .argument('<key>', 'the entity key')
      .option('--period <period>', "the period (20261128 for a daily series; default: now's, by the database's clock)");

  command(
    'audit',
    "first, last, issued, voided, lost, holes and duplicates of a period, with the entity's secret (IDPOOL_SECRET)",
  ).action(async (key: string, opts: { period?: string }, cmd: Command) => {
    const api = await secretApi(ctx, cmd, key);
    const audit = await api.get<Answer<'LedgerAudit'>>(
      `/apps/${encodeURIComponent(key)}/numbers/audit${query(opts.period)}`,
    );
    ctx.print(cmd, audit, () =>
      fields({
        period: audit.period,
        first: audit.first ?? '-',
        last: audit.last ?? '-',
        issued: audit.issued,
        voided: audit.voided,
        lost: audit.lost,
        holes: audit.holes.length ? audit.holes.map((h) => `${h.from}-${h.to}`).join(', ') : 'none',
        duplicates: audit.duplicates.length ? audit.duplicates.join(', ') : 'none',
      }),
    );
  });

  command('export', "the period's whole ledger as CSV on stdout, with the entity's secret (IDPOOL_SECRET)").action(
    async (key: string, opts: { period?: string }, cmd: Command) => {
      const api = await secretApi(ctx, cmd, key);
      let after = '0';
      let header = true;
      for (;;) {
        const page = await api.get<Answer<'LedgerPage'>>(
          `/apps/${encodeURIComponent(key)}/numbers${query(opts.period)}${opts.period === undefined ? '?' : '&'}after=${after}&limit=${EXPORT_PAGE}`,
        );
        ctx.io.stdout(ledgerCsv(page.numbers, header));
        header = false;
        if (page.next === null) return;
        after = page.next;
        opts.period ??= page.period;
      }
    },
  );

  command(
    'reconcile',
    'after a restore: enter the numbers the ledger lost (between it and the high-water record) as lost, so issuing goes on above them (IDPOOL_ADMIN_TOKEN)',
  ).action(async (key: string, opts: { period?: string }, cmd: Command) => {
    const answer = await ctx
      .admin(cmd)
      .post<Answer<'Reconciled'>>(`${entityPath(key)}/numbers/reconcile`, { period: opts.period });
    ctx.print(cmd, answer, () =>
      answer.lost
        ? `${key} ${answer.period}: ${answer.lost.count} sequences ${answer.lost.from}-${answer.lost.to} entered lost; issuing goes on above them\n`
        : `${key} ${answer.period}: the ledger is not behind the ${answer.record} record; nothing entered\n`,
    );
  });
}

function query(period: string | undefined): string {
  return period === undefined ? '' : `?period=${encodeURIComponent(period)}`;
}
