import type { Command } from 'commander';
import type { CliContext } from './context';
import { table } from './format';
import type { Answer } from '../http/openapi/schemas';

/** Under the table: RESERVED UNTIL is ahead of the clock by design, which unexplained looks like a clock gone wrong. */
const COLUMNS =
  [
    'HEARTBEAT: the last renewal of the lease (every 3 s by default); LIVE: renewed within the lease TTL (15 s by default).',
    'RESERVED UNTIL (lastTimestamp): the time its holder may issue ids up to, now + the TTL at each renewal, so up to',
    'a TTL ahead of the clock while live; the next holder of the worker id starts above it (docs/cli.md#workers).',
  ].join('\n') + '\n';

export function addWorkersCommand(program: Command, ctx: CliContext): void {
  program
    .command('workers')
    .description(
      'show snowflake worker-id leases (RESERVED UNTIL: the time a holder may issue ids up to, now + the lease TTL)',
    )
    .option('--all', 'include worker ids never leased')
    .action(async (opts: { all?: boolean }, cmd: Command) => {
      const { workers } = await ctx.admin(cmd).get<Answer<'WorkerList'>>('/admin/workers');
      const shown = opts.all ? workers : workers.filter((w) => w.code || w.heartbeatAt);
      const live = workers.filter((w) => w.live).length;
      ctx.print(cmd, { workers: shown }, () => {
        const rows = shown.map((w) => [
          String(w.workerId),
          w.live ? 'yes' : 'no',
          w.heartbeatAt ?? '-',
          w.lastTimestamp ?? '-',
          w.self ? `${w.code} (answering instance)` : w.code || '-',
        ]);
        const summary = `${live} live of ${workers.length} worker ids\n`;
        return rows.length
          ? table(['WORKER', 'LIVE', 'HEARTBEAT', 'RESERVED UNTIL', 'CODE'], rows) + summary + COLUMNS
          : summary;
      });
    });
}
