// Reads what a full run printed of each test file, rewrites
// test/support/file-seconds.mts (the sequencer's slowest-first order) and
// prints the slowest files as the Markdown table of
// docs/testing.md#how-the-suite-runs. Either a vitest JSON report
// (`npx vitest run --reporter=default --reporter=json --outputFile.json=FILE`)
// or the output of a whole run with vitest's default reporter, a CI log
// (`CI=true bash .ci/run > FILE 2>&1`): its line for each file
// (`✓ side-by-side test/….test.ts (12 tests) 3456ms`).
const { readFileSync, writeFileSync } = require('node:fs');
const { join, relative } = require('node:path');

const root = join(__dirname, '..');
const reportFile = process.argv[2];
if (!reportFile) {
  console.error('usage: node scripts/file-seconds.js <vitest JSON report | CI log> [rows]');
  process.exit(2);
}
const rows = Number(process.argv[3] ?? 20);
const text = readFileSync(reportFile, 'utf8');

/** One file's line in the default reporter's summary: status mark, project, path, tests, duration. */
const FILE_LINE =
  /^\s*([✓×↓])\s+(\S+)\s+(test\/\S+\.test\.ts)\s+\((\d+) tests?(?:[^)]*)\)\s*(?:(\d+(?:\.\d+)?)(ms|s))?/;

function fromLog() {
  // eslint-disable-next-line no-control-regex -- strips the log's colours
  const lines = text.replace(/\x1b\[[0-9;]*m/g, '').split('\n');
  const found = new Map();
  for (const line of lines) {
    const m = FILE_LINE.exec(line);
    if (!m) continue;
    const ms = m[5] === undefined ? 0 : Number(m[5]) * (m[6] === 's' ? 1000 : 1);
    found.set(m[3], {
      file: m[3],
      project: m[2],
      seconds: Math.round(ms / 100) / 10,
      tests: Number(m[4]),
      status: m[1] === '✓' ? 'passed' : m[1] === '×' ? 'failed' : 'skipped',
    });
  }
  return [...found.values()];
}

function fromJson() {
  return JSON.parse(text).testResults.map((r) => ({
    file: relative(root, r.name),
    project: '',
    seconds: Math.round((r.endTime - r.startTime) / 100) / 10,
    tests: r.assertionResults.length,
    status: r.status,
  }));
}

const files = (text.trimStart().startsWith('{') ? fromJson() : fromLog()).sort(
  (a, b) => b.seconds - a.seconds || a.file.localeCompare(b.file),
);
if (files.length === 0) {
  console.error(`${reportFile}: no test file's result found`);
  process.exit(1);
}

const table = [
  '/**',
  " * Seconds each test file took, the sequencer's order (slowest first; a file",
  ' * not listed runs first of its group). Written by scripts/file-seconds.js',
  ' * (docs/testing.md#how-the-suite-runs).',
  ' */',
  'export const FILE_SECONDS: Readonly<Record<string, number>> = {',
  ...files.map((f) => `  '${f.file}': ${f.seconds},`),
  '};',
  '',
];
writeFileSync(join(root, 'test', 'support', 'file-seconds.mts'), table.join('\n'));

const total = files.reduce((sum, f) => sum + f.seconds, 0);
const perProject = new Map();
for (const f of files) perProject.set(f.project, (perProject.get(f.project) ?? 0) + f.seconds);
console.log('| file | project | tests | s |');
console.log('|---|---|---|---|');
for (const f of files.slice(0, rows))
  console.log(
    `| \`${f.file.replace(/^test\/\w+\//, '')}\`${f.status === 'passed' ? '' : ` (${f.status})`} | ${f.project} | ${f.tests} | ${Math.round(f.seconds)} |`,
  );
console.log(`| all ${files.length} files | | | ${Math.round(total)} |`);
for (const [project, seconds] of perProject) if (project) console.log(`${project}: ${Math.round(seconds)} s in all`);
