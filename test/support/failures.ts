import { expect } from 'vitest';
import type { Failure } from '../../src/failure';
import { classifyDependencyError } from '../../src/http/dependency-failure';

/** The error `run` rejects with; fails the test when it resolves. */
export async function rejection(run: Promise<unknown> | (() => Promise<unknown>)): Promise<unknown> {
  try {
    await (typeof run === 'function' ? run() : run);
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection, got an answer');
}

/** Asserts what the dependency classifier (the one HTTP and readiness ask) makes of `err`, and returns it. */
export function expectFailure(err: unknown, expected: Partial<Failure>): Failure | undefined {
  const found = classifyDependencyError(err);
  expect(found, `classifying ${String((err as Error | undefined)?.stack ?? err)}`).toMatchObject(expected);
  return found;
}
