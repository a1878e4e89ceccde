// tsc compiles TypeScript only; the Lua scripts ship beside the compiled pool code.
const { cpSync } = require('node:fs');
const { join } = require('node:path');

const root = join(__dirname, '..');
cpSync(join(root, 'src/pool/commands'), join(root, 'dist/src/pool/commands'), { recursive: true });
