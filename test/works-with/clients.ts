import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Where one client runs: its own home, its own project folder, the sidecar it talks to. */
export interface ClientRun {
  home: string;
  project: string;
  /** Sidecar origin (through the recording tap), e.g. `http://127.0.0.1:41234`. */
  origin: string;
  model: string;
}

/** One real coding CLI, installed from npm into a scratch folder outside the repository. */
export interface ClientSpec {
  name: string;
  /** npm package, for the version (its package.json) and the docs. */
  pkg: string;
  /**
   * The version `--install` puts in the clients cache: the one docs/WORKS_WITH.md records, so that a re-run (and the
   * recordings it writes) compares like with like. Raise it to check a newer release.
   */
  version: string;
  /**
   * Windows (tokens) for the long mode, each shared by the sidecar and the stub: the multiples of 4,096 at which the
   * long session sent direct is first refused on turn 4 and on turn 5. Every client so gets about the same room for
   * conversation (three or four 17 KB turns) whatever the size of its own system prompt and tools (Claude Code's is
   * about 19,900 tokens, Continue's about 1,400). Measured from the direct counts the long run prints
   * (docs/WORKS_WITH.md, "Long sessions"); the run checks it again every time.
   */
  longWindows: readonly number[];
  /** Binary name under `<install>/node_modules/.bin`. */
  bin: string;
  /** Writes the client's config files into the isolated home; returns the extra environment. */
  setup(run: ClientRun): Record<string, string>;
  /** Arguments for a first turn; `stdin` is true when the prompt goes on standard input. */
  first(prompt: string, run: ClientRun): { args: string[]; stdin: boolean };
  /** Arguments for a later turn continuing the previous one, when the client can do that non-interactively. */
  next?(prompt: string, run: ClientRun): { args: string[]; stdin: boolean };
}

const write = (path: string, text: string): void => {
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, text);
};

/** Every client gets these: no telemetry, no update checks, no proxies (the runner also drops the network). */
export const COMMON_ENV = {
  DO_NOT_TRACK: '1',
  NO_COLOR: '1',
  TERM: 'dumb',
  NO_UPDATE_NOTIFIER: '1',
};

export const CLIENTS: ClientSpec[] = [
  {
    name: 'claude-code',
    pkg: '@anthropic-ai/claude-code',
    version: '2.1.197',
    longWindows: [36_864, 40_960],
    bin: 'claude',
    setup: (r) => ({
      ANTHROPIC_BASE_URL: r.origin,
      ANTHROPIC_API_KEY: 'dummy-key',
      ANTHROPIC_MODEL: r.model,
      ANTHROPIC_DEFAULT_HAIKU_MODEL: r.model,
      ANTHROPIC_DEFAULT_SONNET_MODEL: r.model,
      ANTHROPIC_DEFAULT_OPUS_MODEL: r.model,
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      DISABLE_TELEMETRY: '1',
      DISABLE_ERROR_REPORTING: '1',
      DISABLE_AUTOUPDATER: '1',
      DISABLE_BUG_COMMAND: '1',
    }),
    first: () => ({ args: ['-p', '--output-format', 'text'], stdin: true }),
    next: () => ({ args: ['-p', '-c', '--output-format', 'text'], stdin: true }),
  },
  {
    name: 'codex',
    pkg: '@openai/codex',
    version: '0.171.0',
    longWindows: [24_576, 28_672],
    bin: 'codex',
    setup: (r) => {
      const codexHome = join(r.home, '.codex');
      write(
        join(codexHome, 'config.toml'),
        [
          `model = "${r.model}"`,
          'model_provider = "cg"',
          'check_for_update_on_startup = false',
          '[analytics]',
          'enabled = false',
          '[feedback]',
          'enabled = false',
          '[model_providers.cg]',
          'name = "context-guardian"',
          `base_url = "${r.origin}/v1"`,
          'wire_api = "responses"',
          'env_key = "CG_KEY"',
          '',
        ].join('\n'),
      );
      return { CODEX_HOME: codexHome, CG_KEY: 'dummy-key' };
    },
    first: () => ({ args: ['exec', '--skip-git-repo-check', '--color', 'never', '-'], stdin: true }),
    next: () => ({
      args: ['exec', '--skip-git-repo-check', '--color', 'never', 'resume', '--last', '-'],
      stdin: true,
    }),
  },
  {
    name: 'opencode',
    pkg: 'opencode-ai',
    version: '1.18.33',
    longWindows: [24_576, 28_672],
    bin: 'opencode',
    setup: (r) => {
      write(
        join(r.home, '.config', 'opencode', 'opencode.json'),
        JSON.stringify(
          {
            autoupdate: false,
            share: 'disabled',
            model: `cg/${r.model}`,
            provider: {
              cg: {
                npm: '@ai-sdk/openai-compatible',
                name: 'context-guardian',
                options: { baseURL: `${r.origin}/v1`, apiKey: 'dummy-key' },
                models: { [r.model]: { name: r.model } },
              },
            },
          },
          null,
          2,
        ),
      );
      return {
        OPENCODE_DISABLE_AUTOUPDATE: '1',
        OPENCODE_DISABLE_MODELS_FETCH: '1',
        OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
        OPENCODE_DISABLE_DEFAULT_PLUGINS: '1',
        OPENCODE_DISABLE_SHARE: '1',
        OPENCODE_DISABLE_CLAUDE_CODE: '1',
      };
    },
    first: (p) => ({ args: ['run', '--pure', p], stdin: false }),
    next: (p) => ({ args: ['run', '--pure', '-c', p], stdin: false }),
  },
  {
    name: 'qwen-code',
    pkg: '@qwen-code/qwen-code',
    version: '0.24.4',
    longWindows: [32_768, 36_864],
    bin: 'qwen',
    setup: (r) => {
      write(
        join(r.home, '.qwen', 'settings.json'),
        JSON.stringify({
          security: { auth: { selectedType: 'openai' } },
          privacy: { usageStatisticsEnabled: false },
          telemetry: { enabled: false },
          general: { disableAutoUpdate: true, disableUpdateNag: true },
        }),
      );
      return { OPENAI_API_KEY: 'dummy-key', OPENAI_BASE_URL: `${r.origin}/v1`, OPENAI_MODEL: r.model };
    },
    first: (p) => ({ args: ['-p', p], stdin: false }),
    next: (p) => ({ args: ['--continue', '-p', p], stdin: false }),
  },
  {
    name: 'continue (cn)',
    pkg: '@continuedev/cli',
    version: '1.5.47',
    longWindows: [16_384, 20_480],
    bin: 'cn',
    setup: (r) => {
      const dir = join(r.home, '.continue');
      write(
        join(dir, 'config.yaml'),
        [
          'name: context-guardian check',
          'version: 1.0.0',
          'schema: v1',
          'models:',
          '  - name: stub',
          '    provider: openai',
          `    model: ${r.model}`,
          `    apiBase: ${r.origin}/v1`,
          '    apiKey: dummy-key',
          '    roles: [chat]',
          '',
        ].join('\n'),
      );
      return { CONTINUE_GLOBAL_DIR: dir, CONTINUE_CLI_ENABLE_TELEMETRY: '0' };
    },
    first: (p, r) => ({
      args: ['-p', p, '--config', join(r.home, '.continue', 'config.yaml')],
      stdin: false,
    }),
    next: (p, r) => ({
      args: ['-p', p, '--resume', '--config', join(r.home, '.continue', 'config.yaml')],
      stdin: false,
    }),
  },
];
