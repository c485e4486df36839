// Lint rules that carry the house style: no floating promises, no `any` outside tests, no deep imports
// across projects, and the pure libraries import no other library.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import prettier from 'eslint-config-prettier';

const crossProject = {
  patterns: [
    { group: ['@guardian/*/*'], message: 'Import a library through its index: @guardian/<lib>.' },
    { group: ['**/libs/**', '**/apps/**'], message: 'Cross-project imports go through @guardian/<lib>.' },
    // As immich's server/eslint.config.mjs: a folder reaches a sibling folder by one `../`, never deeper, so a
    // file's imports say which folders it depends on (docs/ARCHITECTURE.md#layers).
    {
      group: ['../../*'],
      message: 'No deep relative imports: one ../<folder>/<file> at most, or @guardian/<lib>.',
    },
  ],
};

// libs/compaction decides from values only (docs/ARCHITECTURE.md#layers): no file system, network, processes,
// environment or clock. Hashing (node:crypto) is computation and stays allowed.
const ioModules = {
  regex:
    '^(node:)?(fs|fs/promises|net|http|https|http2|dgram|dns|tls|child_process|cluster|os|worker_threads|process|timers|timers/promises|readline|perf_hooks)$',
  message: 'libs/compaction is pure: no I/O, processes, environment or clock.',
};
// ADR 0015: a code is read off an unknown value by codeOf (libs/errors) or tested with Class.is, never duck-typed.
const noCodeDuckTyping = {
  selector: "BinaryExpression[operator='in'][left.value='code']",
  message:
    "Read a code with codeOf(err) or test it with Class.is(err, code) (@guardian/errors), not 'code' in err.",
};

// A module names what it exports (ARCHITECTURE.md#layers): `export *` hides a lib's contract from its index
// and from the unused-export check.
const namedExports = {
  selector: 'ExportAllDeclaration',
  message: "Name the exports: export { a, type B } from ... (the index is the lib's contract).",
};

const noClockOrEnv = {
  'no-restricted-properties': [
    'error',
    { object: 'process', message: 'libs/compaction is pure: take the value as an input.' },
    { object: 'Date', property: 'now', message: 'libs/compaction is pure: take the time as an input.' },
    {
      object: 'performance',
      property: 'now',
      message: 'libs/compaction is pure: take the time as an input.',
    },
  ],
  'no-restricted-globals': [
    'error',
    { name: 'process', message: 'libs/compaction is pure: take the value as an input.' },
    { name: 'setTimeout', message: 'libs/compaction is pure: no timers.' },
    { name: 'setInterval', message: 'libs/compaction is pure: no timers.' },
    { name: 'fetch', message: 'libs/compaction is pure: no network.' },
  ],
  'no-restricted-syntax': [
    'error',
    {
      selector: "NewExpression[callee.name='Date'][arguments.length=0]",
      message: 'libs/compaction is pure: take the time as an input.',
    },
    // Repeated here: a file's no-restricted-syntax replaces the general one.
    noCodeDuckTyping,
    namedExports,
  ],
};

const stageDeep = {
  regex: '^\\.\\./\\.\\./(?!(\\.\\./)*test/support/)(\\.\\./|[^/]+/[^/]+/)',
  message:
    'No deep relative imports: a stage file reaches an app folder by one ../../<folder>/<file> at most.',
};

/** The stages' lint zone: which of the others each may not import, and the one bottom it shares. */
function compactionStages() {
  const dir = 'apps/guardian/src/compaction';
  // native/ serves the providers' compaction protocols (issue 27) with the three stages below it; none imports it.
  const stages = ['request', 'decide', 'answer', 'native'];
  const against = (later) => ({
    group: [...later.map((s) => `../${s}/*`), '../compaction.service'],
    message:
      'Against the flow: request -> decide -> answer; a stage imports only the stages before it and the bottom files.',
  });
  const sameShallow = crossProject.patterns.slice(0, 2);
  const zones = stages.map((stage, i) => ({
    files: [`${dir}/${stage}/**/*.ts`],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [...sameShallow, stageDeep, against(stages.slice(i + 1))] },
      ],
    },
  }));
  // The bottom: the typed values the stages hand each other, and the fail-open error; they import no stage.
  zones.push({
    files: [`${dir}/handoff.ts`, `${dir}/compaction-errors.ts`],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            ...crossProject.patterns,
            {
              group: stages.map((s) => `./${s}/*`).concat('./compaction.service'),
              message: 'The bottom file imports no stage.',
            },
          ],
        },
      ],
    },
  });
  return zones;
}

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
      'no-restricted-syntax': ['error', noCodeDuckTyping, namedExports],
    },
  },
  {
    // The one reader of a code off an unknown value.
    files: ['libs/errors/src/coded-error.ts'],
    rules: { 'no-restricted-syntax': 'off' },
  },
  {
    // Libraries that import no other library.
    files: [
      'libs/telemetry/**/*.ts',
      'libs/errors/**/*.ts',
      'libs/config/**/*.ts',
      'libs/collections/**/*.ts',
    ],
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
    // The pure library: no other library, no I/O, no environment, no clock.
    files: ['libs/compaction/**/*.ts'],
    ignores: ['**/*.spec.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            ...crossProject.patterns,
            { group: ['@guardian/*'], message: 'This library imports no other library.' },
            ioModules,
          ],
        },
      ],
      ...noClockOrEnv,
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
      // Tests beside the code may reach the shared fixtures in test/support; nothing else deep.
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            ...crossProject.patterns.slice(0, 2),
            {
              regex: '^(\\.\\./){2,}(?!(\\.\\./)*test/support/)',
              message: 'No deep relative imports but to test/support.',
            },
          ],
        },
      ],
    },
  },
  // The compaction core in three stages (docs/ARCHITECTURE.md#request-path): request/ reads and measures, decide/
  // decides what is forwarded, answer/ follows the answer. A stage imports the bottom files (handoff.ts,
  // compaction-errors.ts) and the stages before it, never one after it nor compaction.service.ts, which runs them in
  // order. A stage file reaches another app folder by one ../../<folder>/<file>, never deeper (their specs
  // may reach test/support as well). After the tests' block, so that it holds for the specs beside the code too.
  ...compactionStages(),
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
    files: ['test/archive/independent-verifier.ts', 'test/archive/independent-log-verifier.ts'],
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
