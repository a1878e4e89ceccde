/** The value of `field` in the text of an INFO reply (`field:value` lines), or undefined. */
export function infoField(info: string, field: string): string | undefined {
  for (const line of info.split(/\r?\n/)) {
    if (line.startsWith(field) && line[field.length] === ':') return line.slice(field.length + 1).trim();
  }
  return undefined;
}

/**
 * The epoch `run_id:master_replid` (docs/design.md invariant 4) from the text of
 * `INFO server replication`: the same string the Lua functions compare.
 */
export function epochOf(info: string): string {
  const runId = infoField(info, 'run_id');
  const replId = infoField(info, 'master_replid');
  if (!runId || !replId) throw new Error('INFO did not report run_id and master_replid');
  return `${runId}:${replId}`;
}
