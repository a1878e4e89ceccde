import type { RedisClient } from '../redis/connection';
import { registrationsKey } from '../redis/keys';
import type { RegistrationGeneration } from './generation-sync';

/** The registration counter in Redis, shared by every instance on it. */
export class RedisRegistrationGeneration implements RegistrationGeneration {
  private readonly key: string;

  constructor(
    private readonly redis: Pick<RedisClient, 'get' | 'incr'>,
    prefix: string,
  ) {
    this.key = registrationsKey(prefix);
  }

  async current(): Promise<number> {
    return Number((await this.redis.get(this.key)) ?? 0);
  }

  async bump(): Promise<void> {
    await this.redis.incr(this.key);
  }
}
