/** Every kind of id through every door on postgres+redis (test/matrix/table.ts, docs/matrix.md). */
import { matrixOn } from '../matrix/run';

matrixOn('postgres+redis');
