/**
 * Vitest's file order (vitest.config.mts `sequence.sequencer`): by project
 * group (`sequence.groupOrder`), then the slowest file first, by the
 * durations measured on this machine (`file-seconds.mts`), so the parallel
 * group does not end with one long file running alone. A file not in that
 * table (a new one) runs first among its group: it may be long. The same
 * order on a fresh clone as on a developer's machine: vitest's own results
 * cache is not read.
 */
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { FILE_SECONDS } from './file-seconds.mts';

/** Seconds a file took, or Infinity when it was never measured. */
function secondsOf(root: string, spec: TestSpecification): number {
  return FILE_SECONDS[relative(root, spec.moduleId)] ?? Number.POSITIVE_INFINITY;
}

export default class SlowestFirst extends BaseSequencer {
  override sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const root = this.ctx.config.root;
    const sorted = [...files].sort(
      (a, b) =>
        a.project.config.sequence.groupOrder - b.project.config.sequence.groupOrder ||
        secondsOf(root, b) - secondsOf(root, a) ||
        a.moduleId.localeCompare(b.moduleId),
    );
    return Promise.resolve(sorted);
  }
}
