import type { ChainableCommander } from 'ioredis';

/** The replies of a MULTI, in order; the first error thrown (of a refused MULTI, EXECABORT, the refusal that says why). */
export async function transaction(what: string, multi: ChainableCommander): Promise<unknown[]> {
  const replies = await multi.exec().catch((err: unknown) => {
    throw (err as { previousErrors?: unknown[] }).previousErrors?.[0] ?? err;
  });
  if (!replies) throw new Error(`the ${what} transaction was discarded`);
  const failed = replies.find(([err]) => err)?.[0];
  if (failed) throw failed;
  return replies.map(([, value]) => value);
}
