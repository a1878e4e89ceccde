import { describe, expect, it } from 'vitest';
import { serverRelease } from '../../src/redis/info';

/** The server a refusal names (redis-support.test.ts refuses real ones): from INFO server, as each reports itself. */
describe('serverRelease', () => {
  it('names Valkey by its own version, not the Redis version it is compatible with', () => {
    expect(serverRelease('# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:8.0.1\r\n')).toBe(
      'Valkey 8.0.1',
    );
  });
  it('names Dragonfly, Redis, or the server when INFO says neither', () => {
    expect(serverRelease('redis_version:6.2.11\r\ndragonfly_version:df-v1.25.0\r\n')).toBe('Dragonfly df-v1.25.0');
    expect(serverRelease('# Server\r\nredis_version:6.2.14\r\n')).toBe('Redis 6.2.14');
    expect(serverRelease('')).toBe('the server');
  });
});
