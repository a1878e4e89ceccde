// tsc compiles TypeScript only; the Lua scripts ship beside the compiled Redis code.
const { cpSync, rmSync } = require('node:fs');
const { join } = require('node:path');

const root = join(__dirname, '..');
// Replaced, not merged: a renamed function file (`name-numKeys.lua`) left behind would register its function twice.
rmSync(join(root, 'dist/src/redis/commands'), { recursive: true, force: true });
cpSync(join(root, 'src/redis/commands'), join(root, 'dist/src/redis/commands'), { recursive: true });
// The dashboard page, script and style are read from disk beside the compiled router.
cpSync(join(root, 'src/http/dashboard/assets'), join(root, 'dist/src/http/dashboard/assets'), { recursive: true });
