import type { HeaderMap } from './headers';
import type { UpstreamClient } from './upstream-client';

type WindowBackend = 'vllm' | 'llamacpp' | 'ollama' | 'lmstudio' | 'litellm';
export interface DetectedWindow {
  window: number;
  backend: WindowBackend;
}

type Json = Record<string, unknown>;
const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const posInt = (v: unknown): number | undefined =>
  typeof v === 'number' && Number.isInteger(v) && v > 0 ? v : undefined;
const list = (v: unknown): Json[] => (Array.isArray(v) ? v.filter(isObj) : []);

function byModel(items: Json[], model: string, keys: string[]): Json | undefined {
  return items.find((m) => keys.some((k) => m[k] === model)) ?? (items.length === 1 ? items[0] : undefined);
}

/**
 * Probes, in order, the endpoints each backend documents for its context window (issue 3 §3), first answer wins:
 * vLLM `GET /v1/models` `max_model_len`; llama.cpp `GET /props` `default_generation_settings.n_ctx`;
 * Ollama `GET /api/ps` `context_length` (the loaded size) then `POST /api/show` (`num_ctx` in parameters, else
 * `<arch>.context_length`); LM Studio `GET /api/v0/models` (`loaded_context_length`, else `max_context_length`);
 * LiteLLM `GET /model/info` `max_input_tokens`. Each probe has a short timeout; failures just move on.
 */
export async function detectWindow(
  client: UpstreamClient,
  opts: { basePath: string; model: string; headers: HeaderMap; timeoutMs: number },
): Promise<DetectedWindow | undefined> {
  const get = async (path: string, method = 'GET', body?: Json): Promise<unknown> => {
    try {
      const res = await client.json({
        method,
        path,
        headers: { ...opts.headers, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? Buffer.from(JSON.stringify(body)) : undefined,
        timeoutMs: opts.timeoutMs,
        maxBytes: 4 * 1024 * 1024,
      });
      return res.status === 200 ? res.body : undefined;
    } catch {
      // A backend without this endpoint (or down): the next probe, or the default window, takes over.
      return undefined;
    }
  };
  const { basePath, model } = opts;

  const models = await get(`${basePath}/models`);
  if (isObj(models)) {
    const m = byModel(list(models.data), model, ['id', 'root']);
    const w = m ? posInt(m.max_model_len) : undefined;
    if (w) return { window: w, backend: 'vllm' };
  }

  const props = await get('/props');
  if (isObj(props)) {
    const gen = isObj(props.default_generation_settings) ? props.default_generation_settings : {};
    const w = posInt(gen.n_ctx) ?? posInt(props.n_ctx);
    if (w) return { window: w, backend: 'llamacpp' };
  }

  const ps = await get('/api/ps');
  if (isObj(ps)) {
    const m = byModel(list(ps.models), model, ['name', 'model']);
    const w = m ? posInt(m.context_length) : undefined;
    if (w) return { window: w, backend: 'ollama' };
  }
  const show = await get('/api/show', 'POST', { model });
  if (isObj(show)) {
    const params =
      typeof show.parameters === 'string' ? /(?:^|\n)\s*num_ctx\s+(\d+)/.exec(show.parameters) : null;
    const fromParams = params?.[1] ? Number(params[1]) : undefined;
    const info = isObj(show.model_info) ? show.model_info : {};
    const key = Object.keys(info).find((k) => k.endsWith('.context_length'));
    const w = posInt(fromParams) ?? (key ? posInt(info[key]) : undefined);
    if (w) return { window: w, backend: 'ollama' };
  }

  const lms = await get('/api/v0/models');
  if (isObj(lms)) {
    const m = byModel(list(lms.data), model, ['id']);
    const w = m ? (posInt(m.loaded_context_length) ?? posInt(m.max_context_length)) : undefined;
    if (w) return { window: w, backend: 'lmstudio' };
  }

  const info = await get('/model/info');
  if (isObj(info)) {
    const m = byModel(list(info.data), model, ['model_name']);
    const mi = m && isObj(m.model_info) ? m.model_info : {};
    const w = posInt(mi.max_input_tokens) ?? posInt(mi.max_tokens);
    if (w) return { window: w, backend: 'litellm' };
  }
  return undefined;
}
