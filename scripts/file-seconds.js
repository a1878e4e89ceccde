// Reads a vitest JSON report (`npx vitest run --reporter=default --reporter=json
// --outputFile.json=FILE`), rewrites test/support/file-seconds.ts (the
// sequencer's slowest-first order) and prints the slowest files as the
// Markdown table of docs/testing.md#how-the-suite-runs.
const { readFileSync, writeFileSync } = require('node:fs');
const { join, relative } = require('node:path');

const root = join(__dirname, '..');
const reportFile = process.argv[2];
if (!reportFile) {
  console.error('usage: node scripts/file-seconds.js <vitest JSON report> [rows]');
  process.exit(2);
}
const rows = Number(process.argv[3] ?? 20);
const report = JSON.parse(readFileSync(reportFile, 'utf8'));
const files = report.testResults
  .map((r) => ({
    file: relative(root, r.name),
    seconds: Math.round((r.endTime - r.startTime) / 100) / 10,
    tests: r.assertionResults.length,
    status: r.status,
  }))
  .sort((a, b) => b.seconds - a.seconds || a.file.localeCompare(b.file));

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
writeFileSync(join(root, 'test', 'support', 'file-seconds.ts'), table.join('\n'));

const total = files.reduce((sum, f) => sum + f.seconds, 0);
console.log('| file | tests | s |');
console.log('|---|---|---|');
for (const f of files.slice(0, rows))
  console.log(`| \`${f.file}\`${f.status === 'passed' ? '' : ` (${f.status})`} | ${f.tests} | ${f.seconds} |`);
console.log(`| all ${files.length} files | | ${Math.round(total)} |`);
