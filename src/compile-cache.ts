/**
 * Node's compile cache for every module read after this one, imported second by the entry points (`main.ts`,
 * `cli/index.ts`): a start reads ~1,000 modules and takes 10–20 % less CPU after the first (docs/operating.md#start-up).
 * Only entry points enable it: the library must not change its host process.
 */
import { enableCompileCache } from 'node:module';

enableCompileCache();
