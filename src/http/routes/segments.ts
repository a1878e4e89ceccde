import type { IRouter } from 'express';
import type { Answer } from '../openapi/schemas';
import { type LeasedSegment, leaseSizeLimit } from '../../segment/lease';
import type { HttpDeps } from '../deps';
import type { Guards } from '../guards';
import { integerField } from '../params';

/** What the lease route uses of the app's dependencies. */
export type LeaseRouteDeps = Pick<HttpDeps, 'leases'>;

/**
 * `POST /apps/:key/segments`: a freshly reserved segment of a `trend`
 * entity, for a client that issues its ids itself (the SDK's leased buffer).
 */
export function registerSegmentRoutes(
  app: IRouter,
  deps: LeaseRouteDeps,
  guards: Pick<Guards, 'authenticatedEntity'>,
): void {
  app.post('/apps/:key/segments', async (req, res) => {
    const entity = await guards.authenticatedEntity(req);
    // `size` from the JSON body or `?size=`; absent, the entity's step; the leaser checks its range.
    const size = integerField(req, 'size', `1 to ${leaseSizeLimit(entity)}`);
    const segment = await deps.leases.lease(entity, size);
    res.json(leasedSegmentJson(segment));
  });
}

/** The lease's answer: ids as decimal strings, the spacing as numbers. */
function leasedSegmentJson(segment: LeasedSegment): Answer<'LeasedSegment'> {
  return {
    first: segment.first.toString(),
    last: segment.last.toString(),
    count: segment.count,
    delta: segment.delta,
    remainder: segment.remainder,
  };
}
