// `npm start`: runs the built service (dist/src/main.js) in this process, so
// npm's signals reach it as before, after two checks that would otherwise
// end in a raw MODULE_NOT_FOUND stack: a Node older than package.json
// `engines` (the build's own check, src/node-version.ts, cannot run when
// there is no build) and no build at all. One line each, exit 1.
const { existsSync, readFileSync } = require('node:fs');
const { join } = require('node:path');

const root = join(__dirname, '..');
const needed = Number(/\d+/.exec(JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).engines.node)[0]);
const found = process.versions.node;
const problems = [];
if (Number(found.split('.')[0]) < needed)
  problems.push(`Node ${found} found, Node ${needed} or newer needed: run \`. scripts/use-node24.sh\``);
const main = join(root, 'dist', 'src', 'main.js');
if (!existsSync(main)) problems.push('no build in dist/: run `npm run build` (npm ci builds too)');
if (problems.length > 0) {
  process.stderr.write(`idpool: ${problems.join('; then ')}, and npm start again\n`);
  process.exit(1);
}
void require(main).main();
