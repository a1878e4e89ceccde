/**
 * An entity's secrets: made here (256 random bits, shown once), stored as
 * hashes, checked in constant time whatever the entity (or none).
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { EntityConfig, EntitySecret } from './entity';

/**
 * Secrets one entity accepts at once: a rotation's overlap, and the tokens of
 * a Tinyid deployment (one per client team), with room to spare. Small, so a
 * check compares them all in a fixed number of steps.
 */
export const MAX_SECRETS = 5;

/** A new entity secret: 32 random bytes, base64url. Shown once, stored hashed. */
export function newSecret(): string {
  return randomBytes(32).toString('base64url');
}

/** Secrets are 256 random bits, so a fast hash is enough (no password stretching needed). */
export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

/** Compared against when there is no entity or fewer secrets, so every check costs the same. */
const NO_HASH = Buffer.alloc(32);

/**
 * Whether `secret` is one of the entity's unexpired secrets at `nowMs`. One
 * hash, then {@link MAX_SECRETS} constant-time compares whatever the entity
 * (or none: `undefined`), so the time taken tells neither whether the key
 * exists nor how many secrets it has.
 */
export function secretAccepted(
  entity: Pick<EntityConfig, 'secrets'> | undefined,
  secret: string,
  nowMs: number,
): boolean {
  const given = createHash('sha256').update(secret).digest();
  let accepted = false;
  for (let i = 0; i < MAX_SECRETS; i++) {
    const s = entity?.secrets[i];
    const stored = s?.hash.length === 64 ? Buffer.from(s.hash, 'hex') : NO_HASH;
    const live = s !== undefined && (s.expiresAt === null || nowMs < s.expiresAt);
    if (timingSafeEqual(given, stored) && live) accepted = true;
  }
  return accepted;
}

/** A secret record for `secret`, made at `now`. */
export function secretRecord(secret: string, now: number, expiresAt: number | null = null): EntitySecret {
  return { id: randomBytes(6).toString('hex'), hash: hashSecret(secret), createTime: now, expiresAt };
}

/** The secrets still accepted at `now`. */
export function unexpired(secrets: readonly EntitySecret[], now: number): EntitySecret[] {
  return secrets.filter((s) => s.expiresAt === null || now < s.expiresAt);
}
