/** Every kind of id through every door on embedded (test/matrix/table.ts, docs/matrix.md). */
import { matrixOn } from '../matrix/run';

matrixOn('embedded');
