import type { ChainableCommander } from 'ioredis';

/**
 * The replies of a MULTI, in order; the first error among them is thrown.
 * A MULTI the server refused (EXECABORT) throws the first command's refusal
 * (READONLY, OOM, …), which says why.
 */
export async function transaction(what: string, multi: ChainableCommander): Promise<unknown[]> {
  const replies = await multi.exec().catch((err: unknown) => {
    throw (err as { previousErrors?: unknown[] }).previousErrors?.[0] ?? err;
  });
  if (!replies) throw new Error(`the ${what} transaction was discarded`);
  const failed = replies.find(([err]) => err)?.[0];
  if (failed) throw failed;
  return replies.map(([, value]) => value);
}
