import type { Command } from 'commander';
import type { CliContext } from './context';
import { table } from './format';

/** The fields of `GET /admin/workers` this command prints (the JSON output passes every field on). */
interface WorkerRow {
  workerId: number;
  live: boolean;
  self?: boolean;
  code: string | null;
  heartbeatAt: string | null;
  lastTimestamp: string | null;
}

/** `workers`: the snowflake worker-id leases, as the admin API reports them. */
export function addWorkersCommand(program: Command, ctx: CliContext): void {
  program
    .command('workers')
    .description('show snowflake worker-id leases')
    .option('--all', 'include worker ids never leased')
    .action(async (opts: { all?: boolean }, cmd: Command) => {
      const { workers } = await ctx.admin(cmd).get<{ workers: WorkerRow[] }>('/admin/workers');
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
        return rows.length ? table(['WORKER', 'LIVE', 'HEARTBEAT', 'LAST TIMESTAMP', 'CODE'], rows) + summary : summary;
      });
    });
}
