/** The in-process segment library: `createIdGenerator` and what it throws. */
export { createIdGenerator } from './generator';
export { DEFAULT_OPTIONS, type EntitySource, type IdGeneratorOptions } from './options';
export type { ServiceOptions } from './leased';
export { MAX_TAKE, type IdGenerator } from './loader';
export {
  GeneratorClosedError,
  InvalidCountError,
  InvalidOptionError,
  SegmentReservationError,
  SegmentsNotReadyError,
  UnsafeNumberIdError,
  UnsupportedEntityError,
} from './errors';
export type { Id } from './segment-buffer';
export { StrideMismatchError } from '../segment/stride-record';
/** @deprecated Renamed {@link StrideMismatchError}. */
export { StrideMismatchError as ClusterMappingError } from '../segment/stride-record';
