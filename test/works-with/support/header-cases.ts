import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import type { StubOptions } from '@guardian/stub-backend';

import { DOC_SESSION, docSnippet, type SnippetValues } from './doc-snippets';

/** Where one header-check case runs: its own home, and what the page's placeholders become. */
export interface CaseRun {
  home: string;
  values: SnippetValues;
}

/** What a case prepared: files are written; the client then runs with `env`, after sourcing `shell` if any. */
export interface Prepared {
  env: Record<string, string>;
  /** A shell snippet from the page, sourced by bash right before the client starts. */
  shell?: string;
}

/**
 * One setting from docs/sessions.md, run with one real client. `client` names a ClientSpec (a CLI in the clients
 * cache) or one of the SDK drivers in header-sdk.ts. A control is a setting the page must NOT show (what it used to
 * say, or a documented pitfall): the check passes a control only when it catches it.
 */
export interface HeaderCase {
  label: string;
  client: string;
  /** The page's snippets this case uses, by their `header-check` marker id. */
  snippets: string[];
  /** Header -> the value every checked request must carry. */
  expect: Record<string, string>;
  control?: string;
  /** Claude Code only: run `/context` as a last turn (token counts; the usage must not move). */
  contextTurn?: boolean;
  stub?: Partial<StubOptions>;
  /** SDK rows: what becomes of the page's snippet before the driver is appended (a control edits it). */
  sdkSnippet?: (page: string) => string;
  prepare(run: CaseRun): Prepared;
}

export const TOKEN = 'cg-check-token';
const SESSION = { 'x-guardian-session': DOC_SESSION };

const put = (path: string, text: string): void => {
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, text.endsWith('\n') ? text : `${text}\n`);
};
const snip = (id: string, run: CaseRun): string => docSnippet(id, run.values);

// What the runner adds to each client beside the page's setting: a stand-in key, the stub's model for every model
// slot, and the client's own telemetry and update switches (the network namespace blocks them anyway). None of it
// names a header.
const CLAUDE_ENV = {
  ANTHROPIC_API_KEY: 'dummy-key',
  ANTHROPIC_MODEL: 'stub-model',
  ANTHROPIC_DEFAULT_HAIKU_MODEL: 'stub-model',
  ANTHROPIC_DEFAULT_SONNET_MODEL: 'stub-model',
  ANTHROPIC_DEFAULT_OPUS_MODEL: 'stub-model',
  DISABLE_TELEMETRY: '1',
  DISABLE_ERROR_REPORTING: '1',
  DISABLE_AUTOUPDATER: '1',
};
const OPENCODE_ENV = {
  OPENCODE_DISABLE_AUTOUPDATE: '1',
  OPENCODE_DISABLE_MODELS_FETCH: '1',
  OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
  OPENCODE_DISABLE_DEFAULT_PLUGINS: '1',
  OPENCODE_DISABLE_SHARE: '1',
  OPENCODE_DISABLE_CLAUDE_CODE: '1',
};
const QWEN_SWITCHES = {
  privacy: { usageStatisticsEnabled: false },
  telemetry: { enabled: false },
  general: { disableAutoUpdate: true, disableUpdateNag: true },
};
// A bare `count_tokens`-less backend (vLLM, llama.cpp): Claude Code then counts with `max_tokens: 1` generations.
const NO_COUNT_TOKENS: Partial<StubOptions> = { countTokensEndpoint: false };

const claudeSettings = (id: string) => (run: CaseRun) => {
  put(join(run.home, '.claude', 'settings.json'), snip(id, run));
  return { env: CLAUDE_ENV };
};
const codexConfig = (run: CaseRun, toml: string): Prepared => {
  // The update check is a top-level key, so it goes before the page's tables; analytics is a table of its own.
  put(
    join(run.home, '.codex', 'config.toml'),
    `check_for_update_on_startup = false\n${toml}\n\n[analytics]\nenabled = false\n`,
  );
  return { env: {} };
};
const qwenSettings = (run: CaseRun, id: string, shellId: string): Prepared => {
  const page = JSON.parse(snip(id, run)) as Record<string, unknown>;
  put(join(run.home, '.qwen', 'settings.json'), JSON.stringify({ ...page, ...QWEN_SWITCHES }, null, 2));
  return { env: {}, shell: snip(shellId, run) };
};

export const HEADER_CASES: HeaderCase[] = [
  {
    label: '`~/.claude/settings.json`',
    client: 'claude-code',
    snippets: ['claude-code/settings'],
    expect: SESSION,
    contextTurn: true,
    stub: NO_COUNT_TOKENS,
    prepare: claudeSettings('claude-code/settings'),
  },
  {
    label: '`~/.claude/settings.json`, two headers',
    client: 'claude-code',
    snippets: ['claude-code/settings-two'],
    expect: { ...SESSION, 'x-guardian-token': TOKEN },
    prepare: claudeSettings('claude-code/settings-two'),
  },
  {
    label: "shell `export`, two headers (`$'...'`)",
    client: 'claude-code',
    snippets: ['claude-code/shell'],
    expect: { ...SESSION, 'x-guardian-token': TOKEN },
    prepare: (run) => ({ env: CLAUDE_ENV, shell: snip('claude-code/shell', run) }),
  },
  {
    label: 'shell `export`, two headers in double quotes',
    client: 'claude-code',
    snippets: [],
    expect: { ...SESSION, 'x-guardian-token': TOKEN },
    control: 'what the page said before issue 21: bash keeps `\\n` literally',
    prepare: (run) => ({
      env: CLAUDE_ENV,
      shell: [
        `export ANTHROPIC_BASE_URL=${run.values.origin}`,
        `export ANTHROPIC_CUSTOM_HEADERS="X-Guardian-Session: alice\\nX-Guardian-Token: ${TOKEN}"`,
      ].join('\n'),
    }),
  },
  {
    label: '`http_headers`',
    client: 'codex',
    snippets: ['codex/config'],
    expect: SESSION,
    prepare: (run) => codexConfig(run, snip('codex/config', run)),
  },
  {
    label: '`env_http_headers`',
    client: 'codex',
    snippets: ['codex/config', 'codex/env-headers', 'codex/env'],
    expect: SESSION,
    prepare: (run) => {
      // The page: the env_http_headers line in place of the http_headers line, and the variable exported.
      const config = snip('codex/config', run).replace(
        /^http_headers = .*$/m,
        snip('codex/env-headers', run),
      );
      return { ...codexConfig(run, config), shell: snip('codex/env', run) };
    },
  },
  {
    label: '`{env:USER}` with `USER=alice`',
    client: 'opencode',
    snippets: ['opencode/config'],
    expect: SESSION,
    prepare: (run) => {
      put(join(run.home, '.config', 'opencode', 'opencode.json'), snip('opencode/config', run));
      return { env: { ...OPENCODE_ENV, USER: DOC_SESSION } };
    },
  },
  {
    label: '`{env:USER}` with `USER` unset',
    client: 'opencode',
    snippets: ['opencode/config'],
    expect: SESSION,
    control: 'the page warns: OpenCode then sends an empty value',
    prepare: (run) => {
      put(join(run.home, '.config', 'opencode', 'opencode.json'), snip('opencode/config', run));
      return { env: OPENCODE_ENV };
    },
  },
  {
    label: '`model.generationConfig.customHeaders`',
    client: 'qwen-code',
    snippets: ['qwen-code/settings', 'qwen-code/env'],
    expect: SESSION,
    prepare: (run) => qwenSettings(run, 'qwen-code/settings', 'qwen-code/env'),
  },
  {
    label: '`modelProviders` entry with its own `customHeaders`',
    client: 'qwen-code',
    snippets: ['qwen-code/model-providers', 'qwen-code/model-providers-env'],
    expect: SESSION,
    prepare: (run) => qwenSettings(run, 'qwen-code/model-providers', 'qwen-code/model-providers-env'),
  },
  {
    label: '`modelProviders` with the header in `model.generationConfig` only',
    client: 'qwen-code',
    snippets: [],
    expect: SESSION,
    control: 'the page warns: a modelProviders model ignores model.generationConfig',
    prepare: (run) => {
      const page = JSON.parse(snip('qwen-code/model-providers', run)) as {
        model: Record<string, unknown>;
        modelProviders: { openai: { generationConfig?: unknown }[] };
      };
      const [entry] = page.modelProviders.openai;
      if (entry) delete entry.generationConfig;
      page.model.generationConfig = { customHeaders: { 'X-Guardian-Session': DOC_SESSION } };
      put(join(run.home, '.qwen', 'settings.json'), JSON.stringify({ ...page, ...QWEN_SWITCHES }, null, 2));
      return { env: {}, shell: snip('qwen-code/model-providers-env', run) };
    },
  },
  {
    label: '`requestOptions.headers` in `~/.continue/config.yaml`',
    client: 'continue (cn)',
    snippets: ['continue/config'],
    expect: SESSION,
    prepare: (run) => {
      put(join(run.home, '.continue', 'config.yaml'), snip('continue/config', run));
      return { env: { CONTINUE_CLI_ENABLE_TELEMETRY: '0' } };
    },
  },
  ...['openai-ts', 'anthropic-ts', 'openai-python', 'anthropic-python'].flatMap((client): HeaderCase[] => [
    {
      label: '`defaultHeaders` / `default_headers`',
      client,
      snippets: [`sdk/${client}`],
      expect: SESSION,
      prepare: () => ({ env: {} }),
    },
    {
      label: 'the same without its API key line',
      client,
      snippets: [],
      expect: SESSION,
      // The page's TypeScript OpenAI snippet always had its key; the other three lacked it before issue 21.
      control:
        client === 'openai-ts'
          ? 'the page warns: the SDKs refuse to send without a key'
          : 'what the page showed before issue 21',
      sdkSnippet: (page) => page.replace(/^.*(apiKey|api_key).*\n/m, ''),
      prepare: () => ({ env: {} }),
    },
  ]),
];
