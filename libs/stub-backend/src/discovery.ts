import anthropicModels from './fixtures/anthropic-models.json';
import litellmModelInfo from './fixtures/litellm-model-info.json';
import llamacppModels from './fixtures/llamacpp-models.json';
import llamacppProps from './fixtures/llamacpp-props.json';
import lmstudioModels from './fixtures/lmstudio-models.json';
import ollamaPs from './fixtures/ollama-ps.json';
import ollamaShow from './fixtures/ollama-show.json';
import openaiModels from './fixtures/openai-models.json';
import vllmModels from './fixtures/vllm-models.json';
import type { StubFlavor } from './types';

/** One window-discovery endpoint: a recorded real answer, with `{{window}}` and `{{model}}` filled at serve time. */
interface DiscoveryEndpoint {
  method: 'GET' | 'POST';
  path: string;
  fixture: unknown;
  vars?: Record<string, string>;
}

const openaiList = (ownedBy: string): Omit<DiscoveryEndpoint, 'method' | 'path'> => ({
  fixture: openaiModels,
  vars: { owned_by: ownedBy },
});

/** Which endpoints each flavor serves; a flavor answers 404 on every other flavor's endpoints, as the real one does. */
const ENDPOINTS: Record<StubFlavor, DiscoveryEndpoint[]> = {
  vllm: [{ method: 'GET', path: '/v1/models', fixture: vllmModels }],
  llamacpp: [
    { method: 'GET', path: '/props', fixture: llamacppProps },
    { method: 'GET', path: '/v1/models', fixture: llamacppModels },
    { method: 'GET', path: '/models', fixture: llamacppModels },
  ],
  ollama: [
    { method: 'POST', path: '/api/show', fixture: ollamaShow },
    { method: 'GET', path: '/api/ps', fixture: ollamaPs },
    { method: 'GET', path: '/v1/models', ...openaiList('library') },
  ],
  lmstudio: [
    { method: 'GET', path: '/api/v0/models', fixture: lmstudioModels },
    { method: 'GET', path: '/v1/models', ...openaiList('organization_owner') },
  ],
  litellm: [
    { method: 'GET', path: '/model/info', fixture: litellmModelInfo },
    { method: 'GET', path: '/v1/model/info', fixture: litellmModelInfo },
    { method: 'GET', path: '/v1/models', ...openaiList('openai') },
  ],
  anthropic: [{ method: 'GET', path: '/v1/models', fixture: anthropicModels }],
  none: [],
};

const PLACEHOLDER = /\{\{(window|model|owned_by)\}\}/g;

/** Copies a fixture, dropping its `_source` note and filling placeholders; a bare `{{window}}` becomes a number. */
function fill(value: unknown, vars: Record<string, string | number>): unknown {
  if (typeof value === 'string') {
    if (value === '{{window}}') return vars.window;
    return value.replace(PLACEHOLDER, (_m, key: string) => String(vars[key] ?? ''));
  }
  if (Array.isArray(value)) return value.map((v) => fill(v, vars));
  if (typeof value === 'object' && value !== null) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) if (k !== '_source') out[k] = fill(v, vars);
    return out;
  }
  return value;
}

/** The discovery answer for `method path` under `flavor`, or undefined when that flavor has no such endpoint. */
export function discoveryAnswer(
  flavor: StubFlavor,
  method: string,
  path: string,
  ctx: { window: number; model: string },
): unknown {
  const hit = ENDPOINTS[flavor].find((e) => e.method === method && e.path === path);
  if (!hit) return undefined;
  return fill(hit.fixture, { ...hit.vars, window: ctx.window, model: ctx.model });
}
