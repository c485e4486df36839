import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

import { z } from 'zod';

import { GuardianError } from '../../http/http-error';

/**
 * The version prefix of the handles guardian seals. `cg2` names the owner and the log checkpoint that covers its
 * span; `cg1` handles (no owner, no checkpoint) are still opened, outside team mode (docs/native-compaction.md).
 */
export const HANDLE_PREFIX = 'cg2';
const PREFIXES = ['cg1', 'cg2'] as const;

/**
 * Where the handle's span is in a writer's transparency log (docs/ARCHIVE_FORMAT.md#the-log): the log's name under
 * `/guardian/archive/logs/`, the entry's index, and the checkpoint that covers it (tree size and root), so a holder can
 * fetch an inclusion proof; and the span file's sha256, which a rebuild checks the file against.
 */
export interface HandleLog {
  log: string;
  index: number;
  size: number;
  /** The checkpoint's root hash, base64. */
  root: string;
  sha256: string;
}

/**
 * What a response of ours stands for (`t`, threshold): the whole input of a `/v1/responses` turn that crossed its
 * `compact_threshold`; the items before it in a later input are the ones it covers, and are dropped.
 */
export type HandleKind = 'compact' | 'threshold';

/** What a handle names (docs/native-compaction.md, "The handle"). */
export interface HandleClaims {
  /** The session hash the compaction belongs to. */
  session: string;
  /** The range of the conversation's messages the summary replaces, [from, cut). */
  from: number;
  cut: number;
  /** The memo key of its summary: the prefix hash at `cut`. */
  memoKey: string;
  /** The newest span ref the summary's originals are archived in, or null when not archived yet. */
  chainHead: string | null;
  /** sha256 hex of readable content the handle vouches for (Anthropic's compaction block `content`). */
  content?: string;
  /** The owner hash of the developer whose request made it (team mode), null outside it; absent in a cg1 handle. */
  owner?: string | null;
  /** The log checkpoint that covers `chainHead`, null when none does (not archived, no log); absent in cg1. */
  log?: HandleLog | null;
  /** Absent: a compaction of the conversation as sent (`/compact`, the trigger, Anthropic's blocks). */
  kind?: HandleKind;
}

const HEX64 = z.string().regex(/^[0-9a-f]{64}$/);
/** The fields both versions carry. */
const commonFields = {
  s: z.string().min(1).max(128),
  f: z.number().int().min(0),
  c: z.number().int().min(0),
  m: z.string().min(1).max(128),
  h: z.string().max(512).nullable(),
  t: z.string().length(64).optional(),
};
const v1Schema = z
  .object(commonFields)
  .strict()
  .refine((c) => c.f <= c.c, 'from after cut');
const v2Schema = z
  .object({
    ...commonFields,
    o: HEX64.nullable(),
    l: z
      .object({
        n: z.string().regex(/^[A-Za-z0-9_-]{1,80}$/),
        i: z.number().int().min(0),
        z: z.number().int().min(1),
        r: z.string().max(64),
        d: HEX64,
      })
      .strict()
      .refine((l) => l.i < l.z, 'entry past the checkpoint')
      .nullable(),
    k: z.literal('t').optional(),
  })
  .strict()
  .refine((c) => c.f <= c.c, 'from after cut');

const REFUSED =
  'the compaction item is not one this deployment issued, or it was changed; send the conversation without it (or compact again)';
const FOREIGN =
  "the compaction item belongs to another developer's session (or was issued before handles named their owner); send your conversation without it, or compact it again with your own token";

/** The sha256 hex a handle seals of readable content (an Anthropic compaction block's text). */
export const contentHash = (text: string): string => createHash('sha256').update(text).digest('hex');

/** The one refusal of a handle that does not verify: 400 in the route's own error shape, never forwarded. */
export function handleRefused(): GuardianError {
  return new GuardianError('GUARDIAN_COMPACTION_HANDLE_INVALID', REFUSED, 400);
}

/** A handle of ours that another owner's request sent (team mode): 403 in the route's own shape, never expanded. */
export function handleForeign(): GuardianError {
  return new GuardianError('GUARDIAN_COMPACTION_HANDLE_FOREIGN', FOREIGN, 403);
}

/**
 * Seals and opens compaction handles, `cg2.<payload>.<mac>`: the payload is base64url JSON of the claims, the mac an
 * HMAC-SHA256 over `cg2.<payload>` with the deployment's key, so any replica holding the key can expand a handle and
 * no one without it can make one. The prefix is under the mac: a cg1 payload cannot pass as cg2 or the other way.
 * Both parts are compared as the exact characters sent (base64url decoding is lenient about trailing bits; a changed
 * character must never decode to an accepted handle).
 */
export class HandleSealer {
  constructor(private readonly key: Buffer) {}

  seal(claims: HandleClaims): string {
    const l = claims.log;
    const body: z.input<typeof v2Schema> = {
      s: claims.session,
      f: claims.from,
      c: claims.cut,
      m: claims.memoKey,
      h: claims.chainHead,
      ...(claims.content === undefined ? {} : { t: claims.content }),
      o: claims.owner ?? null,
      l: l ? { n: l.log, i: l.index, z: l.size, r: l.root, d: l.sha256 } : null,
      ...(claims.kind === 'threshold' ? { k: 't' as const } : {}),
    };
    const payload = Buffer.from(JSON.stringify(body)).toString('base64url');
    return `${HANDLE_PREFIX}.${payload}.${this.mac(HANDLE_PREFIX, payload)}`;
  }

  /** The claims of a handle this deployment sealed; throws handleRefused() for anything else. */
  open(handle: string): HandleClaims {
    const parts = handle.split('.');
    const prefix = PREFIXES.find((p) => p === parts[0]);
    if (parts.length !== 3 || prefix === undefined) throw handleRefused();
    const [, payload = '', mac = ''] = parts;
    const expected = Buffer.from(this.mac(prefix, payload));
    const given = Buffer.from(mac);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw handleRefused();
    let json: unknown;
    try {
      json = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    } catch {
      // Sealed by our key yet not JSON: only a key shared with another format could do it; refused all the same.
      throw handleRefused();
    }
    return prefix === 'cg1' ? openV1(json) : openV2(json);
  }

  private mac(prefix: string, payload: string): string {
    return createHmac('sha256', this.key).update(`${prefix}.${payload}`).digest('base64url');
  }
}

/** The claims both versions carry, under their short names. */
function commonClaims(c: z.infer<typeof v1Schema>): HandleClaims {
  return {
    session: c.s,
    from: c.f,
    cut: c.c,
    memoKey: c.m,
    chainHead: c.h,
    ...(c.t === undefined ? {} : { content: c.t }),
  };
}

function openV1(json: unknown): HandleClaims {
  const parsed = v1Schema.safeParse(json);
  if (!parsed.success) throw handleRefused();
  return commonClaims(parsed.data);
}

function openV2(json: unknown): HandleClaims {
  const parsed = v2Schema.safeParse(json);
  if (!parsed.success) throw handleRefused();
  const c = parsed.data;
  return {
    ...commonClaims(c),
    owner: c.o,
    log: c.l && { log: c.l.n, index: c.l.i, size: c.l.z, root: c.l.r, sha256: c.l.d },
    ...(c.k === 't' ? { kind: 'threshold' as const } : {}),
  };
}

/**
 * Whether a request of `owner` (its owner hash; undefined outside team mode) may expand a handle: the owner it names
 * must be the request's. A cg1 handle names none, so it is opened only for a request that has none either.
 */
export function assertHandleOwner(claims: HandleClaims, owner: string | undefined): void {
  if ((claims.owner ?? undefined) !== owner) throw handleForeign();
}
