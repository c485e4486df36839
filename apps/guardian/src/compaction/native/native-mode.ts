import { Injectable } from '@nestjs/common';

import { GuardianMetrics, type NativeProbeVerdict } from '@guardian/telemetry';
import { type HeaderMap, UpstreamClient, UpstreamError } from '@guardian/upstream';

import { GuardianConfig } from '../../config/guardian-config';
import { forwardedPath } from '../../http/dot-segments';
import { GuardianLogger } from '../../observability/guardian-logger';
import { pickAuth } from '../request/window.service';

/** Hosts that serve the compaction protocols themselves (issue 27 item 4): `auto` forwards to them unchanged. */
const NATIVE_HOSTS = [/^api\.openai\.com$/, /\.openai\.azure\.com$/, /^api\.anthropic\.com$/];

/** The two protocol families a probe answers for: OpenAI Responses (compact, trigger) and Anthropic Messages. */
export type NativeFamily = 'responses' | 'messages';

/**
 * The longest a request waits for its family's first probe (the probe's own timeout): past it the probe is
 * inconclusive and the request is emulated, which is always safe (guardian answers the protocol itself).
 */
export const PROBE_TIMEOUT_MS = 10_000;
/** An inconclusive probe (a timeout, a refused key, a 5xx) is tried again on the first need after this long. */
export const PROBE_RETRY_MS = 60_000;

/** Anthropic's on-demand compaction beta, which the messages probe names as a client does. */
const COMPACT_BETA = 'compact-2026-09-04';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The mode the configuration alone decides: GUARDIAN_NATIVE_COMPACTION, and for `auto` a host known to serve them. */
export function configuredMode(config: GuardianConfig): 'emulate' | 'passthrough' | 'probe' {
  const mode = config.native.mode;
  if (mode !== 'auto') return mode;
  const host = config.upstream.base.hostname.toLowerCase();
  return NATIVE_HOSTS.some((h) => h.test(host)) ? 'passthrough' : 'probe';
}

/**
 * What one probe's answer says. `serves` only on proof: a 200 whose body is the protocol's own answer (a
 * `response.compaction` with a `compaction` item; a message that opens with a `compaction` block). A 4xx route
 * answer that is not about credentials (404 no such route, 400 an unknown field, a plain message that ignored the
 * field) is `absent`; anything else says nothing about the protocol (`inconclusive`).
 */
export function probeVerdict(family: NativeFamily, status: number, body: unknown): NativeProbeVerdict {
  if (status === 200) {
    const served =
      isObj(body) &&
      (family === 'responses'
        ? body.object === 'response.compaction' &&
          Array.isArray(body.output) &&
          body.output.some((i) => isObj(i) && i.type === 'compaction')
        : Array.isArray(body.content) && isObj(body.content[0]) && body.content[0].type === 'compaction');
    return served ? 'serves' : 'absent';
  }
  if (status === 401 || status === 403 || status === 408 || status === 429 || status >= 500)
    return 'inconclusive';
  return status >= 400 ? 'absent' : 'inconclusive';
}

/** Counts and logs each probe once it has a verdict (the stage-reporter rule: ARCHITECTURE.md#layers). */
@Injectable()
export class NativeProbeReporter {
  constructor(
    private readonly metrics: GuardianMetrics,
    private readonly logger: GuardianLogger,
  ) {}

  probed(family: NativeFamily, verdict: NativeProbeVerdict, why: string): void {
    this.metrics.nativeProbes.inc({ family, verdict });
    const line = { family, verdict, why };
    if (verdict === 'inconclusive')
      this.logger.warn(
        line,
        'native compaction probe inconclusive: emulating; tried again on a later request',
      );
    else
      this.logger.info(
        line,
        `native compaction probe: the upstream ${verdict === 'serves' ? 'serves' : 'does not serve'} the protocol`,
      );
  }
}

interface Probed {
  verdict: NativeProbeVerdict;
  at: number;
}

/**
 * Whether guardian serves a compaction protocol or forwards it (ARCHITECTURE.md#native-compaction):
 * GUARDIAN_NATIVE_COMPACTION; for `auto`, a host known to serve them, else one probe of the upstream per family at the
 * first request that speaks it (cached; a request waits for it at most PROBE_TIMEOUT_MS, and is emulated unless the
 * probe proved the upstream serves the protocol).
 */
@Injectable()
export class NativeMode {
  private readonly probed = new Map<NativeFamily, Probed>();
  private readonly pending = new Map<NativeFamily, Promise<NativeProbeVerdict>>();

  constructor(
    private readonly config: GuardianConfig,
    private readonly upstream: UpstreamClient,
    private readonly reporter: NativeProbeReporter,
  ) {}

  /** True when this request's protocol goes to the upstream untouched. `headers` lend the probe their credentials. */
  async passthrough(family: NativeFamily, body: Buffer, headers: HeaderMap): Promise<boolean> {
    const mode = configuredMode(this.config);
    if (mode !== 'probe') return mode === 'passthrough';
    return (await this.verdict(family, body, headers)) === 'serves';
  }

  private verdict(
    family: NativeFamily,
    body: Buffer,
    headers: HeaderMap,
  ): Promise<NativeProbeVerdict> | NativeProbeVerdict {
    const done = this.probed.get(family);
    if (done && (done.verdict !== 'inconclusive' || Date.now() - done.at < PROBE_RETRY_MS))
      return done.verdict;
    let p = this.pending.get(family);
    if (!p) {
      p = this.probe(family, modelOf(body), pickAuth(headers)).finally(() => this.pending.delete(family));
      this.pending.set(family, p);
    }
    return p;
  }

  private async probe(family: NativeFamily, model: string, auth: HeaderMap): Promise<NativeProbeVerdict> {
    const { path, body, headers } = probeRequest(family, model);
    const target = forwardedPath(path, this.config.upstream.basePath);
    let verdict: NativeProbeVerdict = 'inconclusive';
    let why: string;
    if (!target.ok) why = 'the probe path is outside the upstream root';
    else
      try {
        const res = await this.upstream.request({
          method: 'POST',
          path: target.value,
          headers: { ...auth, ...headers },
          body: Buffer.from(JSON.stringify(body)),
          timeoutMs: PROBE_TIMEOUT_MS,
          signal: AbortSignal.timeout(PROBE_TIMEOUT_MS),
        });
        const text = await readSmall(res.body);
        verdict = probeVerdict(family, res.status, parseJson(text));
        why = `HTTP ${res.status}`;
      } catch (err) {
        // Unreachable, slow or cut: nothing is proven, so the request is emulated (always safe) and the probe retried.
        why = err instanceof UpstreamError ? err.code : 'probe failed';
      }
    this.probed.set(family, { verdict, at: Date.now() });
    this.reporter.probed(family, verdict, why);
    return verdict;
  }
}

/**
 * The smallest request that only a server serving the protocol answers in kind: `POST /v1/responses/compact` of one
 * short user message (a server without the route answers 404 and runs nothing), and an Anthropic message asking for
 * on-demand compaction of one short message with `max_tokens: 1` (a server that ignores the field generates one
 * token; vLLM-like servers that refuse it answer 400). Neither stores anything on a server that serves it.
 */
function probeRequest(family: NativeFamily, model: string): { path: string; body: Obj; headers: HeaderMap } {
  const headers: HeaderMap = { 'content-type': 'application/json' };
  if (family === 'responses')
    return {
      path: '/v1/responses/compact',
      body: { model, input: [{ type: 'message', role: 'user', content: 'ping' }] },
      headers,
    };
  return {
    path: '/v1/messages',
    body: {
      model,
      max_tokens: 1,
      messages: [{ role: 'user', content: 'ping' }],
      compaction: { type: 'summarize' },
    },
    headers: { ...headers, 'anthropic-beta': COMPACT_BETA, 'anthropic-version': '2023-06-01' },
  };
}

/** The request's model, named in the probe (a server may route by it); empty when the body names none. */
function modelOf(body: Buffer): string {
  const json = parseJson(body.toString('utf8'));
  return isObj(json) && typeof json.model === 'string' ? json.model : '';
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    // Not JSON (an HTML 404 page): the status alone decides.
    return undefined;
  }
}

/** The answer's first 64 KiB: a protocol answer to the probe is small; the rest is dropped. */
async function readSmall(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    const b = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
    if (size < 65_536) chunks.push(b);
    size += b.length;
  }
  return Buffer.concat(chunks).toString('utf8');
}
