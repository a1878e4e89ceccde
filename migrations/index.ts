import { CreateApplication1732060800000 } from './1732060800000-CreateApplication';

/** Every schema migration, in order. Run at start-up and by `npm run migration:run`. */
export const migrations = [CreateApplication1732060800000];
