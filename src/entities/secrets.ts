/** An entity's secrets: made here (256 random bits, shown once), stored as hashes, checked in constant time. */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { EntityConfig, EntitySecret } from './entity';

/** A rotation's overlap and a Tinyid deployment's tokens; small, so a check is a fixed number of compares. */
export const MAX_SECRETS = 5;

/** A new entity secret: 32 random bytes, base64url. */
export function newSecret(): string {
  return randomBytes(32).toString('base64url');
}

/** Secrets are 256 random bits, so a fast hash is enough (no password stretching needed). */
export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

/** Compared against when there is no entity or fewer secrets, so every check costs the same. */
const NO_HASH = Buffer.alloc(32);

const live = (s: EntitySecret, now: number) => s.expiresAt === null || now < s.expiresAt;

/**
 * Whether `secret` is one of the entity's unexpired secrets at `nowMs`: one hash, then {@link MAX_SECRETS}
 * constant-time compares whatever the entity (or none), so timing tells neither whether the key exists nor how many
 * secrets it has.
 */
export function secretAccepted(
  entity: Pick<EntityConfig, 'secrets'> | undefined,
  secret: string,
  nowMs: number,
): boolean {
  const given = Buffer.from(hashSecret(secret), 'hex');
  let accepted = false;
  for (let i = 0; i < MAX_SECRETS; i++) {
    const s = entity?.secrets[i];
    const stored = s?.hash.length === 64 ? Buffer.from(s.hash, 'hex') : NO_HASH;
    const usable = s !== undefined && live(s, nowMs);
    if (timingSafeEqual(given, stored) && usable) accepted = true;
  }
  return accepted;
}

export function secretRecord(secret: string, now: number, expiresAt: number | null = null): EntitySecret {
  return { id: randomBytes(6).toString('hex'), hash: hashSecret(secret), createTime: now, expiresAt };
}

export function unexpired(secrets: readonly EntitySecret[], now: number): EntitySecret[] {
  return secrets.filter((s) => live(s, now));
}
