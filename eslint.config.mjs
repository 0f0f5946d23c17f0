// The one lint configuration (npm run lint, run by npm test): ESLint's and typescript-eslint's
// recommended rules over the code; formatting is Prettier's (.prettierrc.json), not ESLint's.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  // deep-chain.js is too deep for the parsers' recursion (a test of debugkit's own walks: attack n2-2).
  { ignores: ['dist/**', 'node_modules/**', 'test/fixtures/**', 'test/programs/node/built/out/**', 'test/programs/node/fnbp/deep-chain.js'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        Buffer: 'readonly',
        URL: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        setImmediate: 'readonly',
        performance: 'readonly',
        fetch: 'readonly',
        AbortController: 'readonly',
        AbortSignal: 'readonly',
        TextEncoder: 'readonly',
        TextDecoder: 'readonly',
        structuredClone: 'readonly',
        queueMicrotask: 'readonly',
      },
    },
    rules: {
      // `_name` marks a binding kept on purpose (a destructured field left out, a callback's unused argument).
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', destructuredArrayIgnorePattern: '^_' }],
    },
  },
  {
    // The live view's page runs in a browser.
    files: ['src/ui/**/*.mjs'],
    languageOptions: { globals: { document: 'readonly', window: 'readonly' } },
  },
  {
    // CommonJS: the hook node programs load (--require), and the test programs written as CommonJS.
    files: ['**/*.cjs', 'test/programs/node/**/*.js'],
    languageOptions: { sourceType: 'commonjs', globals: { require: 'readonly', module: 'writable', __dirname: 'readonly', __filename: 'readonly' } },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    // Tests read JSON answers whose shape the assertions check.
    files: ['test/**', 'src/**/*.test.ts', 'bench/**'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
);
