/**
 * Refuses an older Node before anything native loads (better-sqlite3 built for Node 24 segfaults there, silently).
 * The entry points import this first; it imports nothing, so it runs before any other module is read.
 */

/** The oldest Node major idpool runs on (package.json `engines.node`). */
export const NODE_MAJOR_NEEDED = 24;

const found = process.versions.node;
if (Number(found.split('.')[0]) < NODE_MAJOR_NEEDED) {
  process.stderr.write(
    `idpool: Node ${found} found, Node ${NODE_MAJOR_NEEDED} or newer needed: run \`. scripts/use-node24.sh\` (or install Node ${NODE_MAJOR_NEEDED})\n`,
  );
  process.exit(1);
}
