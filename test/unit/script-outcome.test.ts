import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ScriptCodeError, keyCount, scriptOutcome } from '../../src/redis/functions';

describe('scriptOutcome: the one map from a function result code to its meaning', () => {
  it('maps every code a Lua header lists', () => {
    expect(scriptOutcome('idpool_take', 0, 7, ['short'])).toEqual({ kind: 'ok', value: 7 });
    expect(scriptOutcome('idpool_take', -1, 3, ['short'])).toEqual({ kind: 'short', size: 3 });
    expect(scriptOutcome('idpool_take', -2, undefined, ['epoch_changed'])).toEqual({ kind: 'epoch_changed' });
    expect(scriptOutcome('idpool_rate_limit', -3, 250, ['rate_limited'])).toEqual({
      kind: 'rate_limited',
      retryAfterMs: 250,
    });
    expect(scriptOutcome('idpool_push_open', -4, 0, ['fenced'])).toEqual({ kind: 'fenced' });
  });

  it('throws ScriptCodeError for a code the caller does not expect, or none of the library', () => {
    expect(() => scriptOutcome('idpool_rate_limit', -4, 0, ['rate_limited'])).toThrow(ScriptCodeError);
    expect(() => scriptOutcome('idpool_take', -9, 0, ['short'])).toThrow(/idpool_take returned unknown code -9/);
  });
});

describe('keyCount', () => {
  it('reads each function key count from its file name', () => {
    const files = readdirSync(join(__dirname, '../../src/redis/commands')).filter((f) => f !== '_prelude.lua');
    expect(files.length).toBeGreaterThan(5);
    for (const f of files) {
      const [, name, keys] = /^(.+)-(\d+|n)\.lua$/.exec(f) ?? [];
      expect(keyCount(`idpool_${name}`)).toBe(keys === 'n' ? 'any' : Number(keys));
    }
    expect(keyCount('idpool_push_open')).toBe(6);
    expect(keyCount('idpool_levels')).toBe('any');
    expect(() => keyCount('idpool_nothing')).toThrow(/no Redis function/);
  });
});
