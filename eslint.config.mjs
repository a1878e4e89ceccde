// ESLint over every TypeScript file (src/, test/, bench/, migrations/, ormconfig.ts) with
// typescript-eslint's type-checked strict and stylistic sets, and the few JavaScript files.
// Prettier owns layout: eslint-config-prettier, last, turns off the rules that would fight it.
// A rule turned off or relaxed says why, here, once.
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      'node_modules/',
      'dist/',
      'test/artifacts/',
      'bench/results/',
      'test/integration/fixtures/openapi-client/',
    ],
  },
  js.configs.recommended,
  {
    files: ['**/*.ts', '**/*.mts'],
    extends: [tseslint.configs.strictTypeChecked, tseslint.configs.stylisticTypeChecked],
    languageOptions: {
      parserOptions: { project: './tsconfig.check.json', tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // Numbers, bigints and booleans print as a reader expects in a message; objects, null and undefined stay flagged.
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true, allowBoolean: true }],
      // `(x) => done(x)` returning a void call is the usual callback shorthand; braces would add nothing.
      '@typescript-eslint/no-confusing-void-expression': ['error', { ignoreArrowShorthand: true }],
      // An empty string (a variable exported empty, an empty query) falls through to the default on purpose.
      '@typescript-eslint/prefer-nullish-coalescing': ['error', { ignorePrimitives: { string: true } }],
      // Redis function replies are numbers and ScriptCode names their values: a reply is compared with it to learn which it is.
      '@typescript-eslint/no-unsafe-enum-comparison': 'off',
      // Fakes and interface implementations are `async` without an `await` so that a throw becomes a rejection, as in the real store.
      '@typescript-eslint/require-await': 'off',
      // A leading underscore marks an argument or destructured field left out on purpose (express's 4-argument error handler, rest-omit).
      '@typescript-eslint/no-unused-vars': [
        'error',
        {
          argsIgnorePattern: '^_',
          varsIgnorePattern: '^_',
          destructuredArrayIgnorePattern: '^_',
          ignoreRestSiblings: true,
        },
      ],
    },
  },
  {
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: {
      // Tests and benches read what they just made (a map entry, a parsed JSON answer) and fail loudly if it is missing;
      // `!` and untyped JSON bodies are their assertion, and typing every response body would add casts that check nothing.
      '@typescript-eslint/no-non-null-assertion': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-explicit-any': 'off',
      // `.catch((err) => err)` hands the error to `expect`, which is the check.
      '@typescript-eslint/use-unknown-in-catch-callback-variable': 'off',
      // `afterAll(() => server?.close())` closes what a `beforeAll` may have failed to make, though `let server: Server` says it exists.
      '@typescript-eslint/no-unnecessary-condition': 'off',
    },
  },
  {
    files: ['**/*.js', '**/*.mjs', 'vitest.config.mts'],
    extends: [tseslint.configs.disableTypeChecked],
  },
  {
    // Node scripts (CommonJS).
    files: ['scripts/**/*.js'],
    languageOptions: {
      sourceType: 'commonjs',
      globals: { require: 'readonly', __dirname: 'readonly', process: 'readonly', console: 'readonly' },
    },
  },
  {
    // The dashboard's script runs in the browser, as a classic script.
    files: ['src/http/dashboard/assets/*.js'],
    languageOptions: {
      sourceType: 'script',
      globals: {
        document: 'readonly',
        fetch: 'readonly',
        sessionStorage: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
      },
    },
  },
  prettier,
);
