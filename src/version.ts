import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** idpool's version from its package.json (src/ under tsx, dist/src when built: walk up to the package). */
export function idpoolVersion(): string {
  for (let dir = __dirname; dir !== dirname(dir); dir = dirname(dir)) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
  }
  return 'unknown';
}
