/** Every kind of id through every door on mariadb+redis (test/matrix/table.ts, docs/matrix.md). */
import { matrixOn } from '../matrix/run';

matrixOn('mariadb+redis');
