// `npm run lint`: prettier --check, eslint (type-checked, zero warnings) and
// knip, side by side (each keeps about one core busy; one after another they
// took ~62 s here, side by side ~40 s). Each one's output is printed whole,
// in that order, once all three are done; the exit code is 1 if any failed.
const { spawn } = require('node:child_process');
const { join } = require('node:path');

const bin = (name) => join(__dirname, '..', 'node_modules', '.bin', name);
const checks = [
  ['prettier', ['--check', '.']],
  ['eslint', ['--max-warnings', '0', '.']],
  ['knip', []],
];

const run = ([name, args]) =>
  new Promise((resolve) => {
    const proc = spawn(bin(name), args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    proc.stdout.on('data', (chunk) => (output += chunk));
    proc.stderr.on('data', (chunk) => (output += chunk));
    proc.on('error', (err) => resolve({ name, code: 1, output: `${output}${err.message}\n` }));
    proc.on('close', (code) => resolve({ name, code: code ?? 1, output }));
  });

void Promise.all(checks.map(run)).then((results) => {
  for (const { name, code, output } of results) {
    process.stdout.write(`> ${name}\n${output}`);
    if (code !== 0) process.stdout.write(`lint: ${name} exited ${code}\n`);
  }
  process.exitCode = results.some((r) => r.code !== 0) ? 1 : 0;
});
