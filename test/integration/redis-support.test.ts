import { mkdtempSync, rmSync } from 'node:fs';
import { type Server, type Socket, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Redis from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REDIS_SERVER, runToExit, startRedisServer } from '../support/processes';

/**
 * Issue 48 item 1: a server without Redis Functions is refused at start
 * with one line naming the server and what it lacks (docs/operating.md
 * "Redis and Valkey"). A real server of the run's program (redis-server,
 * or valkey-server in the Valkey leg) with FUNCTION renamed away, and a
 * Redis 6 as ioredis sees one: a RESP server that answers INFO as 6.2.14
 * does and FUNCTION as an unknown command.
 */

/** One RESP command per read is enough for ioredis's start-up (it waits for each reply). */
function commandsOf(chunk: Buffer): string[][] {
  const commands: string[][] = [];
  const lines = chunk.toString('latin1').split('\r\n');
  for (let i = 0; i < lines.length; i++) {
    if (!lines[i].startsWith('*')) continue;
    const n = Number(lines[i].slice(1));
    const args: string[] = [];
    for (let j = 0; j < n; j++) args.push(lines[i + 2 + 2 * j]);
    commands.push(args);
    i += 2 * n;
  }
  return commands;
}

const REDIS6_INFO = '# Server\r\nredis_version:6.2.14\r\nredis_mode:standalone\r\n\r\n# Persistence\r\nloading:0\r\n';

/** What Redis 6.2 answers to the commands ioredis and idpool send before FUNCTION. */
function answerAsRedis6(socket: Socket, [name, ...args]: string[]): void {
  const command = name.toUpperCase();
  if (command === 'INFO') socket.write(`$${Buffer.byteLength(REDIS6_INFO)}\r\n${REDIS6_INFO}\r\n`);
  else if (command === 'PING') socket.write('+PONG\r\n');
  else if (command === 'SELECT' || command === 'CLIENT') socket.write('+OK\r\n');
  else
    socket.write(
      `-ERR unknown command \`${name}\`, with args beginning with: ${args.map((a) => `\`${a}\`, `).join('')}\r\n`,
    );
}

describe('a server without Redis Functions is refused at start, in one line (exit 1)', () => {
  let dir: string;
  let fakeRedis6: Server;
  let fakePort: number;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'idpool-redis-support-'));
    fakeRedis6 = createServer((socket) => {
      socket.on('data', (chunk) => commandsOf(chunk).forEach((c) => answerAsRedis6(socket, c)));
      socket.on('error', () => undefined);
    });
    await new Promise<void>((resolve) => fakeRedis6.listen(0, '127.0.0.1', resolve));
    fakePort = (fakeRedis6.address() as { port: number }).port;
  });
  afterAll(async () => {
    await new Promise((resolve) => fakeRedis6?.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  });

  it(`${REDIS_SERVER} with FUNCTION renamed away: named with its version, what is missing and what is needed`, async () => {
    const server = await startRedisServer('none', ['--rename-command', 'FUNCTION', '']);
    try {
      const admin = new Redis(server.url);
      const info = await admin.info('server');
      admin.disconnect();
      const field = (name: string) => new RegExp(`^${name}:(.*)\\r?$`, 'm').exec(info)?.[1];
      // Valkey reports its own name and version besides the Redis version it is compatible with.
      const release =
        field('server_name') === 'valkey' ? `Valkey ${field('valkey_version')}` : `Redis ${field('redis_version')}`;
      const run = await runToExit({
        IDPOOL_DATABASE_URL: `sqlite:${join(dir, 'renamed.db')}`,
        IDPOOL_REDIS_URL: server.url,
      });
      expect(run.code, run.stderr + run.stdout).toBe(1);
      expect(run.stderr.trimEnd().split('\n')).toEqual([
        `idpool: cannot start: Redis at 127.0.0.1:${server.port} (IDPOOL_REDIS_URL): ${release} has no Redis Functions ` +
          '(FUNCTION is an unknown command there); idpool needs Redis >= 7.0 or Valkey >= 7.2 with FUNCTION and FCALL',
      ]);
    } finally {
      await server.stop();
    }
  }, 60_000);

  it('Redis 6.2 (a RESP server answering as one): "Redis 6.2.14 has no Redis Functions"', async () => {
    const run = await runToExit({
      IDPOOL_DATABASE_URL: `sqlite:${join(dir, 'redis6.db')}`,
      IDPOOL_REDIS_URL: `redis://127.0.0.1:${fakePort}/0`,
    });
    expect(run.code, run.stderr + run.stdout).toBe(1);
    expect(run.stderr.trimEnd().split('\n')).toEqual([
      `idpool: cannot start: Redis at 127.0.0.1:${fakePort} (IDPOOL_REDIS_URL): Redis 6.2.14 has no Redis Functions ` +
        '(FUNCTION is an unknown command there); idpool needs Redis >= 7.0 or Valkey >= 7.2 with FUNCTION and FCALL',
    ]);
  }, 60_000);
});
