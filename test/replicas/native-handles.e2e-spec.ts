// Issue 27 "Done when": a compaction handle round-trips for every route, survives a replica restart and a memo
// eviction, and any byte changed in it is refused. The built sidecar runs as separate processes on one data folder
// with the in-memory memo (the case where a summary is lost: a restart, or GUARDIAN_MAX_SESSIONS evicting it), in
// front of the strict stub; the official SDKs drive it.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import Anthropic from '@anthropic-ai/sdk';
import fc from 'fast-check';
import OpenAI from 'openai';

import { startStub, type StubBackend } from '@guardian/stub-backend';

import { samples, sumOf } from '../support/prom-text';
import { assertBuilt, startReplica, type Replica } from './replica-process';

type Json = Record<string, any>;

/** Every way a client gets a handle of guardian's (docs/native-compaction.md). */
const ROUTES = [
  'responses_compact',
  'responses_trigger',
  'responses_trigger_stream',
  'responses_threshold',
  'messages_on_demand',
  'messages_threshold',
] as const;
type Way = (typeof ROUTES)[number];
/**
 * What happens between the compaction and the turn that sends the handle back: nothing; the sidecar restarted (a new
 * process, the in-memory memo empty); the handle sent to another replica on the same folder; the memo entry evicted by
 * another session's compaction (GUARDIAN_MAX_SESSIONS=1).
 */
const DISTURBANCES = ['none', 'restart', 'other_replica', 'evicted'] as const;
type Disturbance = (typeof DISTURBANCES)[number];

const filler = (n: number) =>
  `Step ${n}: ${'the migration adds a column, the worker drains the queue, the cache keeps the cursor. '.repeat(5)}`;

/** A conversation whose first message pins `fact` and states a standing instruction. */
function conversation(fact: string, turns: number, rule: string): { role: string; content: string }[] {
  const out = [{ role: 'user', content: `Remember this: the deploy key is ${fact}. ${rule} ${filler(0)}` }];
  for (let i = 1; i <= turns; i++) {
    out.push({ role: 'assistant', content: filler(i) });
    out.push({ role: 'user', content: `Go on with part ${i}. ${filler(i)}` });
  }
  return out;
}

/** A handle issued one way, and how to send it back (with the handle, or a block's text, as given). */
interface Issued {
  route: 'responses' | 'messages';
  handle: string;
  /** The next turn with the history as issued; `edit` changes the handle (and for a block, its text) first. */
  sendBack(url: string, edit?: { handle?: string; text?: (t: string) => string }): Promise<unknown>;
}

const openai = (url: string) => new OpenAI({ baseURL: `${url}/v1`, apiKey: 'sk-prop', maxRetries: 0 });
const anthropic = (url: string) => new Anthropic({ baseURL: url, apiKey: 'sk-ant-prop', maxRetries: 0 });

async function issue(way: Way, url: string, convo: Json[]): Promise<Issued> {
  const model = 'stub-model';
  if (way.startsWith('responses')) {
    let history: Json[];
    if (way === 'responses_compact') {
      history = (await openai(url).responses.compact({ model, input: convo as any })).output;
    } else if (way === 'responses_threshold') {
      const res = await openai(url).responses.create({
        model,
        input: convo as any,
        context_management: [{ type: 'compaction', compact_threshold: 600 }],
      });
      expect(res.output[0]?.type).toBe('compaction');
      history = [...convo, ...(res.output as Json[])];
    } else {
      const input = [...convo, { type: 'compaction_trigger' }] as any;
      if (way === 'responses_trigger') {
        history = (await openai(url).responses.create({ model, input })).output;
      } else {
        const events: Json[] = [];
        for await (const e of await openai(url).responses.create({ model, input, stream: true }))
          events.push(e);
        history = events.at(-1)!.response.output as Json[];
      }
    }
    const at = history.findIndex((i) => i.type === 'compaction');
    const handle = history[at]!.encrypted_content as string;
    return {
      route: 'responses',
      handle,
      sendBack: (to, edit) => {
        const sent = history.map((i, k) =>
          k === at ? { ...i, encrypted_content: edit?.handle ?? handle } : i,
        );
        return openai(to).responses.create({
          model,
          input: [...sent, { role: 'user', content: 'Which deploy key, and which rule?' }] as any,
        });
      },
    };
  }
  const betas = ['compact-2026-09-04', 'context-management-2025-06-27', 'compact-2026-01-12'];
  const res = (await anthropic(url).beta.messages.create(
    way === 'messages_on_demand'
      ? { model, max_tokens: 64, messages: convo as any, compaction: { type: 'summarize' }, betas }
      : {
          model,
          max_tokens: 64,
          messages: convo as any,
          context_management: {
            edits: [{ type: 'compact_20260112', trigger: { type: 'input_tokens', value: 600 } }],
          },
          betas,
        },
  )) as Json;
  const content = res.content as Json[];
  expect(content[0]?.type).toBe('compaction');
  const handle = content[0]!.signature as string;
  const history: Json[] =
    way === 'messages_on_demand'
      ? [{ role: 'assistant', content }]
      : [...convo, { role: 'assistant', content }];
  return {
    route: 'messages',
    handle,
    sendBack: (to, edit) => {
      const block = {
        ...content[0],
        signature: edit?.handle ?? handle,
        content: edit?.text ? edit.text(content[0]!.content as string) : content[0]!.content,
      };
      const sent = history.map((m) =>
        m.role === 'assistant' && m.content === content ? { ...m, content: [block, ...content.slice(1)] } : m,
      );
      return anthropic(to).beta.messages.create({
        model,
        max_tokens: 64,
        messages: [...sent, { role: 'user', content: 'Which deploy key, and which rule?' }] as any,
        betas,
      });
    },
  };
}

async function handleCounts(url: string): Promise<Record<string, number>> {
  const all = samples(await (await fetch(`${url}/metrics`)).text());
  const out: Record<string, number> = {};
  for (const outcome of ['memo', 'block', 'rebuilt', 'lost', 'invalid', 'foreign'])
    out[outcome] = sumOf(all, 'guardian_native_handles_total', { outcome });
  return out;
}

describe('compaction handles across routes, restarts, replicas and evictions (built sidecar processes)', () => {
  let stub: StubBackend;
  let dataDir: string;
  let env: Record<string, string>;
  let a: Replica;
  let b: Replica;

  beforeAll(async () => {
    assertBuilt();
    stub = await startStub({ flavor: 'vllm', window: 16384 });
    dataDir = await mkdtemp(join(tmpdir(), 'cg-native-handles-'));
    env = {
      GUARDIAN_UPSTREAM_URL: stub.baseUrl,
      GUARDIAN_DATA_DIR: dataDir,
      // One session held in memory: another session's compaction evicts the last one's summary.
      GUARDIAN_MAX_SESSIONS: '1',
      GUARDIAN_SHUTDOWN_DRAIN_SECONDS: '0',
      // Served by guardian, not probed for: the stub's record then holds only the requests these handles make
      // (native-probe.e2e-spec covers `auto`).
      GUARDIAN_NATIVE_COMPACTION: 'emulate',
    };
    a = await startReplica({ env });
    // Started after the first made the handle key on the folder: both seal and open with it.
    b = await startReplica({ env });
  });

  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await stub?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  let n = 0;
  it('sent back, every handle brings its pinned fact and standing instruction to the backend', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...ROUTES),
        fc.constantFrom(...DISTURBANCES),
        fc.integer({ min: 4, max: 8 }),
        fc.constantFrom('Always run the linter before committing.', 'Never push to main directly.'),
        async (way, disturbance: Disturbance, turns, rule) => {
          n += 1;
          const fact = `FACT-PROP-${n}-${way.length}${turns}`;
          const issued = await issue(way, a.url, conversation(fact, turns, rule));
          // Every handle names the log checkpoint that covers its span.
          const claims = JSON.parse(
            Buffer.from(issued.handle.split('.')[1]!, 'base64url').toString(),
          ) as Json;
          expect([way, claims.l?.n]).toEqual([way, expect.any(String)]);
          let to = a;
          if (disturbance === 'restart') {
            await a.stop();
            a = await startReplica({ env });
            to = a;
          } else if (disturbance === 'other_replica') {
            to = b;
          } else if (disturbance === 'evicted') {
            // Another conversation compacted on the same replica: GUARDIAN_MAX_SESSIONS=1 evicts the first's summary.
            await openai(a.url).responses.compact({
              model: 'stub-model',
              input: conversation(`FACT-OTHER-${n}`, 4, 'Use tabs.') as any,
            });
          }
          const before = await handleCounts(to.url);
          stub.reset();
          await issued.sendBack(to.url);
          const sent = stub.requests.filter((r) => r.route === issued.route && !r.isSummary);
          expect(sent).toHaveLength(1);
          const text = JSON.stringify(sent[0]!.json);
          // The user's own words, which only the block's pins carry verbatim (the summary names the token alone).
          expect([way, disturbance, text.includes(`Remember this: the deploy key is ${fact}.`)]).toEqual([
            way,
            disturbance,
            true,
          ]);
          expect([way, disturbance, text.includes(rule)]).toEqual([way, disturbance, true]);
          expect(text).not.toMatch(/"type":"compaction/);
          const after = await handleCounts(to.url);
          const moved = Object.keys(after).filter((k) => after[k] !== before[k]);
          const expected =
            issued.route === 'messages' ? 'block' : disturbance === 'none' ? 'memo' : 'rebuilt';
          expect([way, disturbance, moved]).toEqual([way, disturbance, [expected]]);
        },
      ),
      {
        numRuns: ROUTES.length * DISTURBANCES.length + 6,
        // Every route under every disturbance at least once, then random ones.
        examples: ROUTES.flatMap((r) =>
          DISTURBANCES.map((d): [Way, Disturbance, number, string] => [r, d, 5, 'Use pnpm, never npm.']),
        ),
      },
    );
  });

  it('any character changed, dropped or added in a handle (or a block text) is refused, and nothing is forwarded', async () => {
    const issued = new Map<Way, Issued>();
    for (const way of ROUTES)
      issued.set(way, await issue(way, a.url, conversation(`FACT-EDIT-${way.length}`, 4, 'Use pnpm.')));
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.';
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...ROUTES),
        fc.nat(),
        fc.nat(alphabet.length - 1),
        fc.constantFrom('change', 'drop', 'add', 'text'),
        async (way, at, ch, how) => {
          const it = issued.get(way)!;
          const edit = (s: string): string => {
            const i = at % s.length;
            const c = alphabet[ch]!;
            if (how === 'drop') return s.slice(0, i) + s.slice(i + 1);
            if (how === 'add') return s.slice(0, i) + c + s.slice(i);
            return s.slice(0, i) + (s[i] === c ? alphabet[(ch + 1) % alphabet.length]! : c) + s.slice(i + 1);
          };
          stub.reset();
          const err = await it
            .sendBack(
              a.url,
              how === 'text' && it.route === 'messages' ? { text: edit } : { handle: edit(it.handle) },
            )
            .catch((e: unknown) => e);
          const status = (err as { status?: number }).status;
          const body = JSON.stringify((err as { error?: unknown }).error ?? null);
          expect([way, how, status, body.includes('GUARDIAN_COMPACTION_HANDLE_INVALID')]).toEqual([
            way,
            how,
            400,
            true,
          ]);
          expect(stub.requests.filter((r) => !r.isSummary)).toHaveLength(0);
        },
      ),
      { numRuns: 60 },
    );
  });
});
