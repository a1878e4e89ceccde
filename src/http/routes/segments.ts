import type { IRouter } from 'express';
import type { Answer } from '../openapi/schemas';
import { leaseSizeLimit } from '../../segment/lease';
import type { HttpDeps } from '../deps';
import type { Guards } from '../guards';
import { integerField } from '../params';

/** `POST /apps/:key/segments`: a fresh segment of a `trend` entity, for a client issuing its ids itself (the SDK's). */
export function registerSegmentRoutes(
  app: IRouter,
  deps: Pick<HttpDeps, 'leases'>,
  guards: Pick<Guards, 'authenticatedEntity'>,
): void {
  app.post('/apps/:key/segments', async (req, res) => {
    const entity = await guards.authenticatedEntity(req);
    // `size` from the JSON body or `?size=`; absent, the entity's step; the leaser checks its range.
    const size = integerField(req, 'size', `1 to ${leaseSizeLimit(entity)}`);
    const segment = await deps.leases.lease(entity, size);
    // Ids as decimal strings, the spacing as numbers, in the segment's order of fields.
    const { first, last } = segment;
    res.json({ ...segment, first: first.toString(), last: last.toString() } satisfies Answer<'LeasedSegment'>);
  });
}
