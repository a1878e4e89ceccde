/** The in-process segment library: `createIdGenerator` and what it throws. */
export { createIdGenerator } from './generator';
export type { EntitySource, IdGeneratorOptions } from './options';
export type { IdGenerator } from './loader';
export type { TakeOptions } from '../client/client';
export * from './errors';
export type { DatabaseBehindReport } from '../segment/high-water';
export { StrideMismatchError } from '../segment/stride-record';
