#!/usr/bin/env node
// First: on an unsupported Node this exits before anything else (better-sqlite3) loads.
import '../node-version';
import '../compile-cache';
import 'dotenv/config';
import { askSecret } from './ask-secret';
import { runCli } from './program';

// A reader that closed early (`idpool apps list | head`) wants no more: exit quietly, not with the EPIPE's stack trace.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code !== 'EPIPE') throw err;
  process.exit(process.exitCode ?? 0);
});

void runCli(process.argv.slice(2), {
  env: process.env,
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  askSecret,
  // The service's own entry point: it listens, logs, and stops on SIGTERM/SIGINT.
  serve: async (overrides) => (await import('../main')).main(overrides),
}).then((code) => {
  // `serve` keeps running; every other command ends here.
  process.exitCode = code;
});
