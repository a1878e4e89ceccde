import { randomBytes } from 'node:crypto';
import type { Command } from 'commander';
import { KEY_PATTERN } from '../entities/entity';
import { aclFileLine, aclPasswordHash, aclSetUser, consumerAcl, serviceAcl } from '../redis/acl';
import { DEFAULT_PREFIX, PREFIX_PATTERN } from '../redis/keys';
import type { CliContext } from './context';
import { CliError, EXIT_USAGE } from './errors';

/** ACL user names this command writes: no space, quote or control character, so each line stays one token per rule. */
const USER_PATTERN = /^[A-Za-z0-9_.@:-]{1,128}$/;

export function addRedisAclCommand(program: Command, ctx: CliContext): void {
  program
    .command('redis-acl')
    .description(
      'print a least-privilege Redis ACL user (ACL SETUSER and users.acl) for direct consumers of one entity, or with --service for idpool itself; works offline',
    )
    .argument('[key]', 'entity whose pool the consumer pops')
    .option('--service', "the service's own user instead: its keys (idpool:*), its functions, no server-wide command")
    .option('--user <name>', 'ACL user name (default idpool-pop-<key>, or idpool with --service)')
    .option(
      '--prefix <prefix>',
      'the Redis key prefix of the deployment (IDPOOL_REDIS_KEY_PREFIX; default: that variable, or idpool)',
    )
    .option(
      '--cluster',
      'the consumer talks to a Redis Cluster: add the topology reads (CLUSTER SLOTS, SHARDS, NODES, INFO, ASKING) its client needs',
    )
    .addHelpText(
      'after',
      '\nA new random password is made each run and printed once; the ACL lines carry only its SHA-256.\nRun the ACL SETUSER line on every Redis server (every node of a Cluster, replicas too: ACL users are not replicated), or add the users.acl line to the aclfile.\nNeeds Redis 7 or later.',
    )
    .action(
      async (
        key: string | undefined,
        opts: { service?: boolean; user?: string; cluster?: boolean; prefix?: string },
        cmd: Command,
      ) => {
        if (opts.service && key !== undefined)
          throw new CliError(EXIT_USAGE, 'give either an entity key or --service, not both');
        if (!opts.service && key === undefined)
          throw new CliError(EXIT_USAGE, 'give the entity key of the consumer (or --service for the service itself)');
        if (key !== undefined && !KEY_PATTERN.test(key))
          throw new CliError(EXIT_USAGE, `entity key must be 1-64 of A-Z a-z 0-9 _ - ., got "${key}"`);
        if (opts.user !== undefined && !USER_PATTERN.test(opts.user))
          throw new CliError(EXIT_USAGE, `--user must be 1-128 of A-Z a-z 0-9 _ . @ : -, got "${opts.user}"`);
        const prefix = opts.prefix ?? (ctx.io.env.IDPOOL_REDIS_KEY_PREFIX || DEFAULT_PREFIX);
        if (!PREFIX_PATTERN.test(prefix))
          throw new CliError(EXIT_USAGE, `--prefix must be 1-64 of A-Z a-z 0-9 _ . : -, got "${prefix}"`);
        // The service's user always has the Cluster reads: one user for every topology.
        const acl =
          opts.service || key === undefined
            ? serviceAcl(opts.user, prefix)
            : consumerAcl(key, { user: opts.user, cluster: opts.cluster, prefix });
        // A fresh password, shown once: 256 random bits, base64url, safe inside a redis:// URL as it is.
        const password = randomBytes(32).toString('base64url');
        const hash = aclPasswordHash(password);
        const setuser = aclSetUser(acl, hash);
        const usersAcl = aclFileLine(acl, hash);
        const url = `redis://${acl.user}:${password}@HOST:6379/0`;
        ctx.print(cmd, { user: acl.user, password, setuser, usersAcl, url }, () => {
          const who =
            key === undefined
              ? 'the idpool service (IDPOOL_REDIS_URL, or IDPOOL_REDIS_USERNAME and IDPOOL_REDIS_PASSWORD for Sentinel and Cluster)'
              : `direct consumers of entity "${key}" (FCALL idpool_pop and LPOP on its pool, nothing else)`;
          return [
            `# Redis ACL user "${acl.user}" for ${who}.`,
            `# password: ${password}`,
            '# (shown only now; the lines below hold its SHA-256)',
            `# connect as: ${url}`,
            '#',
            '# On every Redis server (every node of a Cluster, replicas too), e.g. pasted after `redis-cli -h HOST`:',
            setuser,
            '#',
            '# Or this line in the users.acl file (aclfile), then ACL LOAD:',
            usersAcl,
            '',
          ].join('\n');
        });
      },
    );
}
