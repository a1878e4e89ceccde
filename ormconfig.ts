import 'dotenv/config';
import { DataSource } from 'typeorm';
import { dataSourceOptions } from './src/db/database';

/** The DataSource the TypeORM migration CLI uses (`npm run migration:run`). */
export default new DataSource(dataSourceOptions(process.env.IDPOOL_DATABASE_URL || 'sqlite:./idpool.db'));
