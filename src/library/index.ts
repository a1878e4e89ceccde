/** The in-process segment library: `createIdGenerator` and what it throws. */
export { createIdGenerator, DEFAULT_OPTIONS, MAX_TAKE, SegmentReservationError, type EntitySource, type IdGenerator, type IdGeneratorOptions } from './generator';
export { GeneratorClosedError, SegmentsNotReadyError, UnsafeNumberIdError } from './errors';
export type { Id } from './segment-buffer';
export { ClusterMappingError } from '../segment/cluster-mapping';
