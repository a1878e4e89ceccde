import { createConnection } from 'mysql2/promise';
import { Client as PgClient } from 'pg';

/** The Tinyid token of the row `items`. */
export const TINYID_TOKEN = 'live-cutover-token-0123456789';

/**
 * Leaf's and Tinyid's tables as their own DDL defines them (MySQL's, or the
 * same columns in PostgreSQL), with one row each: Leaf's `orders` and
 * Tinyid's `items` (delta 2, remainder 1), both at `max_id` 1.
 */
export async function incumbentTables(url: string): Promise<void> {
  const rows = [
    "INSERT INTO leaf_alloc (biz_tag, max_id, step) VALUES ('orders', 1, 100)",
    "INSERT INTO tiny_id_info (biz_type, begin_id, max_id, step, delta, remainder, version) VALUES ('items', 1, 1, 100, 2, 1, 0)",
    `INSERT INTO tiny_id_token (token, biz_type) VALUES ('${TINYID_TOKEN}', 'items')`,
  ];
  if (url.startsWith('postgres')) {
    const c = new PgClient({ connectionString: url });
    await c.connect();
    for (const sql of [
      `CREATE TABLE leaf_alloc (biz_tag varchar(128) NOT NULL DEFAULT '' PRIMARY KEY, max_id bigint NOT NULL DEFAULT 1, step int NOT NULL,
       description varchar(256) DEFAULT NULL, update_time timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP)`,
      `CREATE TABLE tiny_id_info (id bigserial PRIMARY KEY, biz_type varchar(63) NOT NULL DEFAULT '' UNIQUE, begin_id bigint NOT NULL DEFAULT 0,
       max_id bigint NOT NULL DEFAULT 0, step int DEFAULT 0, delta int NOT NULL DEFAULT 1, remainder int NOT NULL DEFAULT 0,
       create_time timestamp NOT NULL DEFAULT '2010-01-01 00:00:00', update_time timestamp NOT NULL DEFAULT '2010-01-01 00:00:00',
       version bigint NOT NULL DEFAULT 0)`,
      `CREATE TABLE tiny_id_token (id serial PRIMARY KEY, token varchar(255) NOT NULL DEFAULT '', biz_type varchar(63) NOT NULL DEFAULT '',
       remark varchar(255) NOT NULL DEFAULT '', create_time timestamp NOT NULL DEFAULT '2010-01-01 00:00:00',
       update_time timestamp NOT NULL DEFAULT '2010-01-01 00:00:00')`,
      ...rows,
    ])
      await c.query(sql);
    await c.end();
    return;
  }
  const c = await createConnection({ uri: url });
  for (const sql of [
    `CREATE TABLE leaf_alloc (biz_tag varchar(128) NOT NULL DEFAULT '', max_id bigint(20) NOT NULL DEFAULT '1', step int(11) NOT NULL,
     description varchar(256) DEFAULT NULL, update_time timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP, PRIMARY KEY (biz_tag))`,
    `CREATE TABLE tiny_id_info (id bigint(20) NOT NULL AUTO_INCREMENT, biz_type varchar(63) NOT NULL DEFAULT '', begin_id bigint(20) NOT NULL DEFAULT '0',
     max_id bigint(20) NOT NULL DEFAULT '0', step int(11) DEFAULT '0', delta int(11) NOT NULL DEFAULT '1', remainder int(11) NOT NULL DEFAULT '0',
     create_time timestamp NOT NULL DEFAULT '2010-01-01 00:00:00', update_time timestamp NOT NULL DEFAULT '2010-01-01 00:00:00',
     version bigint(20) NOT NULL DEFAULT '0', PRIMARY KEY (id), UNIQUE KEY uniq_biz_type (biz_type))`,
    `CREATE TABLE tiny_id_token (id int(11) unsigned NOT NULL AUTO_INCREMENT, token varchar(255) NOT NULL DEFAULT '', biz_type varchar(63) NOT NULL DEFAULT '',
     remark varchar(255) NOT NULL DEFAULT '', create_time timestamp NOT NULL DEFAULT '2010-01-01 00:00:00',
     update_time timestamp NOT NULL DEFAULT '2010-01-01 00:00:00', PRIMARY KEY (id))`,
    ...rows,
  ])
    await c.query(sql);
  await c.end();
}
