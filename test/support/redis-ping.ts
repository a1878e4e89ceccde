import Redis from 'ioredis';

/**
 * Whether a Redis (or Sentinel) at `url` answers PING now: one connection,
 * no retry, closed before this resolves. The one probe behind every "is it
 * up yet" wait of the tests.
 */
export async function redisAnswers(url: string, connectTimeoutMs = 500): Promise<boolean> {
  const probe = new Redis(url, {
    lazyConnect: true,
    connectTimeout: connectTimeoutMs,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  probe.on('error', () => undefined);
  try {
    await probe.connect();
    await probe.ping();
    return true;
  } catch {
    return false;
  } finally {
    probe.disconnect();
  }
}
