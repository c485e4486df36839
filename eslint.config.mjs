// Lint rules that carry the house style: no floating promises, no `any` outside tests, no deep imports
// across projects, and the pure libraries import no other library.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import prettier from 'eslint-config-prettier';

const crossProject = {
  patterns: [
    { group: ['@guardian/*/*'], message: 'Import a library through its index: @guardian/<lib>.' },
    { group: ['**/libs/**', '**/apps/**'], message: 'Cross-project imports go through @guardian/<lib>.' },
  ],
};

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', 'helm/**', 'bin/**', '**/*.js', '**/*.mjs'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/require-await': 'off',
      '@typescript-eslint/restrict-template-expressions': [
        'error',
        { allowNumber: true, allowBoolean: true },
      ],
      '@typescript-eslint/no-extraneous-class': 'off',
      'no-empty': ['error', { allowEmptyCatch: false }],
      'no-restricted-imports': ['error', crossProject],
    },
  },
  {
    // Pure libraries: no other library, no I/O modules.
    files: ['libs/compaction/**/*.ts', 'libs/telemetry/**/*.ts'],
    ignores: ['**/*.spec.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            ...crossProject.patterns,
            { group: ['@guardian/*'], message: 'This library imports no other library.' },
          ],
        },
      ],
    },
  },
  {
    files: ['**/*.spec.ts', '**/*.int-spec.ts', '**/*.e2e-spec.ts', 'test/**/*.ts', 'bench/**/*.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/unbound-method': 'off',
      '@typescript-eslint/no-non-null-assertion': 'off',
    },
  },
  {
    // Black-box tests, benchmarks and the demo start the sidecar in-process through its bootstrap.
    files: ['test/**/*.ts', 'bench/**/*.ts', 'apps/demo/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['@guardian/*/*'], message: 'Import a library through its index: @guardian/<lib>.' },
          ],
        },
      ],
    },
  },
  {
    // A third party's verifier, written from docs/ARCHIVE_FORMAT.md alone: it may use node:* and nothing of ours.
    files: ['test/archive/independent-verifier.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(?!node:)',
              message: 'The independent verifier imports node:* modules only (docs/ARCHIVE_FORMAT.md).',
            },
          ],
        },
      ],
    },
  },
  prettier,
);
