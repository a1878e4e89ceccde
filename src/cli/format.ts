/** Plain-text output of the CLI (`--json` prints the API's JSON instead). */

/** `name  value` lines, nested objects flattened to `pool.size`, a list of objects to `secrets.0.id`. */
export function fields(record: Record<string, unknown>): string {
  const isObject = (value: unknown): value is object => value !== null && typeof value === 'object';
  const walk = (prefix: string, value: unknown): [string, string][] =>
    isObject(value) && !(Array.isArray(value) && !value.some(isObject))
      ? Object.entries(value).flatMap(([k, v]) => walk(prefix ? `${prefix}.${k}` : k, v))
      : [[prefix, cell(value)]];
  const rows = walk('', record);
  const width = Math.max(...rows.map(([k]) => k.length));
  return rows.map(([k, v]) => `${k.padEnd(width)}  ${v}`).join('\n') + '\n';
}

function cell(value: unknown): string {
  if (value === null || value === undefined) return '-';
  if (Array.isArray(value)) return value.join(',');
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** A table with a header row; every cell is text. */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i])))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n') + '\n';
}
