/** Builds the previous release (previous-release.ts) and exits: started by the global setup of a whole run. */
import { buildPreviousRelease } from './previous-release';

buildPreviousRelease();
