import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { CACHE_DIR, REPO_ROOT } from './paths';
import { ANSWER } from './session';

// The SDK rows of the header check: the page's snippet, verbatim but for its placeholders, followed by a driver
// that makes two turns (the second streamed) and, for Anthropic, one count_tokens call. TypeScript runs from source
// with the repository's own `openai` and `@anthropic-ai/sdk`; Python in a venv under the clients cache.

/** The venv `--install` creates for the Python SDKs, and the versions it pins (docs/WORKS_WITH.md). */
export const PY_VENV = join(CACHE_DIR, 'py');
export const PY_PACKAGES = ['openai==3.57.0', 'anthropic==2.15.0'];

export interface SdkDriver {
  /** Display name and the package whose version the row records. */
  name: string;
  version(): string | undefined;
  /** Writes the script into `dir`; returns the command that runs it. */
  script(
    dir: string,
    snippet: string,
    model: string,
  ): { cmd: string; args: string[]; env: Record<string, string> };
}

const npmVersion = (pkg: string) => (): string | undefined => {
  const file = join(REPO_ROOT, 'node_modules', ...pkg.split('/'), 'package.json');
  return existsSync(file)
    ? (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version
    : undefined;
};

const PY = join(PY_VENV, 'bin', 'python');
const pyVersion = (module: string) => (): string | undefined => {
  if (!existsSync(PY)) return undefined;
  const r = spawnSync(PY, ['-c', `import ${module}; print(${module}.__version__)`], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : undefined;
};

const FIRST = 'Reply with one short line.';
const NEXT = 'Continue: reply with one short line again.';

// Plain JavaScript inside the .ts file (swc strips nothing from it), so the driver needs no SDK types. Streams ask
// for usage, as the coding CLIs do, so that `/guardian/usage` holds the backend's own count and the check can compare.
const TS_DRIVERS: Record<string, (model: string) => string> = {
  'openai-ts': (model) => `
async function cgCheck() {
  const messages = [{ role: 'user', content: '${FIRST}' }];
  const first = await client.chat.completions.create({ model: '${model}', messages });
  console.log(first.choices[0].message.content);
  messages.push({ role: 'assistant', content: first.choices[0].message.content }, { role: 'user', content: '${NEXT}' });
  const stream = await client.chat.completions.create({
    model: '${model}', messages, stream: true, stream_options: { include_usage: true },
  });
  for await (const chunk of stream) process.stdout.write(chunk.choices[0]?.delta?.content ?? '');
  console.log();
}
cgCheck().catch((err) => { console.error(String(err)); process.exit(1); });
`,
  'anthropic-ts': (model) => `
async function cgCheck() {
  const messages = [{ role: 'user', content: '${FIRST}' }];
  const first = await client.messages.create({ model: '${model}', max_tokens: 256, messages });
  console.log(first.content[0].text);
  console.log((await client.messages.countTokens({ model: '${model}', messages })).input_tokens);
  messages.push({ role: 'assistant', content: first.content[0].text }, { role: 'user', content: '${NEXT}' });
  const final = await client.messages.stream({ model: '${model}', max_tokens: 256, messages }).finalMessage();
  console.log(final.content[0].text);
}
cgCheck().catch((err) => { console.error(String(err)); process.exit(1); });
`,
};

const PY_DRIVERS: Record<string, (model: string) => string> = {
  'openai-python': (model) => `
messages = [{"role": "user", "content": "${FIRST}"}]
first = client.chat.completions.create(model="${model}", messages=messages)
print(first.choices[0].message.content)
messages += [{"role": "assistant", "content": first.choices[0].message.content}, {"role": "user", "content": "${NEXT}"}]
for chunk in client.chat.completions.create(
    model="${model}", messages=messages, stream=True, stream_options={"include_usage": True}
):
    if chunk.choices:
        print(chunk.choices[0].delta.content or "", end="")
print()
`,
  'anthropic-python': (model) => `
messages = [{"role": "user", "content": "${FIRST}"}]
first = client.messages.create(model="${model}", max_tokens=256, messages=messages)
print(first.content[0].text)
print(client.messages.count_tokens(model="${model}", messages=messages).input_tokens)
messages += [{"role": "assistant", "content": first.content[0].text}, {"role": "user", "content": "${NEXT}"}]
with client.messages.stream(model="${model}", max_tokens=256, messages=messages) as stream:
    print(stream.get_final_text())
`,
};

const tsDriver = (name: string, pkg: string, client: string): SdkDriver => ({
  name,
  version: npmVersion(pkg),
  script: (dir, snippet, model) => {
    const file = join(dir, 'check.ts');
    writeFileSync(file, `${snippet}\n${TS_DRIVERS[client]?.(model) ?? ''}`);
    return {
      cmd: process.execPath,
      args: ['-r', join(REPO_ROOT, 'test', 'support', 'swc-register.js'), file],
      // The script lives outside the repository; its `import 'openai'` resolves to the repository's copy.
      env: { NODE_PATH: join(REPO_ROOT, 'node_modules') },
    };
  },
});

const pyDriver = (name: string, module: string, client: string): SdkDriver => ({
  name,
  version: pyVersion(module),
  script: (dir, snippet, model) => {
    const file = join(dir, 'check.py');
    writeFileSync(file, `${snippet}\n${PY_DRIVERS[client]?.(model) ?? ''}`);
    return { cmd: PY, args: [file], env: {} };
  },
});

export const SDK_DRIVERS: Record<string, SdkDriver> = {
  'openai-ts': tsDriver('openai (TypeScript)', 'openai', 'openai-ts'),
  'anthropic-ts': tsDriver('@anthropic-ai/sdk (TypeScript)', '@anthropic-ai/sdk', 'anthropic-ts'),
  'openai-python': pyDriver('openai (Python)', 'openai', 'openai-python'),
  'anthropic-python': pyDriver('anthropic (Python)', 'anthropic', 'anthropic-python'),
};

/** `--install` for the Python rows: the venv and its pinned SDKs, outside the repository. */
export function installPythonSdks(): string {
  if (!existsSync(PY)) {
    const venv = spawnSync('python3', ['-m', 'venv', PY_VENV], { stdio: 'inherit' });
    if (venv.status !== 0) throw new Error(`python3 -m venv ${PY_VENV} failed`);
  }
  const pip = spawnSync(join(PY_VENV, 'bin', 'pip'), ['install', '-q', ...PY_PACKAGES], { stdio: 'inherit' });
  if (pip.status !== 0) throw new Error(`pip install ${PY_PACKAGES.join(' ')} failed`);
  return `python SDKs: ${PY_PACKAGES.join(', ')} in ${PY_VENV}`;
}

/** A turn counts as answered when the stub's marker reached the script's output. */
export const sdkAnswered = (stdout: string): boolean => stdout.includes(ANSWER);
