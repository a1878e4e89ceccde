import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { maskUrls } from '../../src/logger';

describe('URLs in error lines lose their credentials', () => {
  it.each([
    ['connect to mysql://idpool:pa55@db:3306/x failed', 'connect to mysql://***@db:3306/x failed'],
    ['postgres://u:pa55@word@h/db', 'postgres://***@h/db'],
    ['redis://:pa55@h:6379/0 and rediss://u:pa55@h2', 'redis://***@h:6379/0 and rediss://***@h2'],
    ['url "mysql://u:pa/55@h/db"', 'url "mysql://***@h/db"'],
    ['no credentials: http://host:8080/path', 'no credentials: http://host:8080/path'],
  ])('%s', (text, masked) => {
    expect(maskUrls(text)).toBe(masked);
  });

  it('the process logger masks every warn and error line (fields, message, Error objects)', () => {
    const script = `
      const { createProcessLogger } = require(${JSON.stringify(join(__dirname, '..', '..', 'src', 'logger.ts'))});
      const { log, flushBeforeExit } = createProcessLogger('info', { monotonic: () => performance.now() });
      log.error({ err: 'connect ECONNREFUSED for mysql://idpool:pa55-e@10.0.0.5:3306/db' }, 'cannot reach postgres://u:pa55-m@h/db');
      log.warn({ url: 'redis://:pa55-w@h:6379/0', n: 3 }, 'warned');
      log.error(new Error('driver said mysql://u:pa55-x@h/db'));
      flushBeforeExit(1000).then(() => process.exit(0));
    `;
    const out = execFileSync(process.execPath, ['--import', 'tsx', '-e', script], { encoding: 'utf8' });
    expect(out.trim().split('\n')).toHaveLength(3);
    expect(out).not.toContain('pa55');
    expect(out).toContain('mysql://***@10.0.0.5:3306/db');
    expect(out).toContain('"n":3');
  });
});
