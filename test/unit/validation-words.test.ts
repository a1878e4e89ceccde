import { describe, expect, it } from 'vitest';
import { registerSchema, updateSchema } from '../../src/entities/entity';
import { parseBody } from '../../src/http/validate';

/** The 400 message parseBody gives `body`. */
function messageOf(schema: Parameters<typeof parseBody>[0], body: object): string {
  try {
    parseBody(schema, body);
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('accepted');
}

describe("validation messages are idpool's words, not zod's defaults", () => {
  it.each([
    [{ key: 'a', mode: 'fast' }, 'mode: must be one of "monotonic", "trend", "snowflake"; got "fast"'],
    [{ key: 5 }, 'key: must be a string; got 5'],
    [{}, 'key: is required'],
  ])('%j → %s', (body, message) => {
    expect(messageOf(registerSchema, body)).toBe(message);
  });

  it('no message a body can provoke is worded by zod (field, what is allowed, what was given)', () => {
    const bodies = [
      { key: 'a', mode: 'x' },
      { key: 'a', name: 7 },
      { key: 'a', compat: 'leaf' },
      { key: 'a', maxSizePerTimes: 'many' },
      { key: 'a', timeZone: 3 },
      { step: true },
    ];
    for (const body of bodies) {
      const schema = 'key' in body ? registerSchema : updateSchema;
      const message = messageOf(schema, body);
      expect(message, JSON.stringify(body)).not.toMatch(/Invalid (option|input)|expected .* received|Too (small|big)/);
      expect(message, JSON.stringify(body)).toMatch(/^\w+(\.\w+)*: /);
    }
  });
});
