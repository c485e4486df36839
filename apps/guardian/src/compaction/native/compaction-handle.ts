import { createHmac, timingSafeEqual } from 'node:crypto';

import { z } from 'zod';

import { GuardianError } from '../../http/http-error';

/** The version prefix of guardian's compaction handle; a later format gets `cg2` and both are read. */
export const HANDLE_PREFIX = 'cg1';

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
}

const claimsSchema = z
  .object({
    s: z.string().min(1).max(128),
    f: z.number().int().min(0),
    c: z.number().int().min(0),
    m: z.string().min(1).max(128),
    h: z.string().max(512).nullable(),
    t: z.string().length(64).optional(),
  })
  .strict()
  .refine((c) => c.f <= c.c, 'from after cut');

const REFUSED =
  'the compaction item is not one this deployment issued, or it was changed; send the conversation without it (or compact again)';

/** The one refusal of a handle that does not verify: 400 in the route's own error shape, never forwarded. */
export function handleRefused(): GuardianError {
  return new GuardianError('GUARDIAN_COMPACTION_HANDLE_INVALID', REFUSED, 400);
}

/**
 * Seals and opens compaction handles, `cg1.<payload>.<mac>`: the payload is base64url JSON of the claims, the mac an
 * HMAC-SHA256 over `cg1.<payload>` with the deployment's key, so any replica holding the key can expand a handle and
 * no one without it can make one. Both parts are compared as the exact characters sent (base64url decoding is
 * lenient about trailing bits; a changed character must never decode to an accepted handle).
 */
export class HandleSealer {
  constructor(private readonly key: Buffer) {}

  seal(claims: HandleClaims): string {
    const body: z.input<typeof claimsSchema> = {
      s: claims.session,
      f: claims.from,
      c: claims.cut,
      m: claims.memoKey,
      h: claims.chainHead,
      ...(claims.content === undefined ? {} : { t: claims.content }),
    };
    const payload = Buffer.from(JSON.stringify(body)).toString('base64url');
    return `${HANDLE_PREFIX}.${payload}.${this.mac(payload)}`;
  }

  /** The claims of a handle this deployment sealed; throws handleRefused() for anything else. */
  open(handle: string): HandleClaims {
    const parts = handle.split('.');
    if (parts.length !== 3 || parts[0] !== HANDLE_PREFIX) throw handleRefused();
    const [, payload = '', mac = ''] = parts;
    const expected = Buffer.from(this.mac(payload));
    const given = Buffer.from(mac);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw handleRefused();
    let json: unknown;
    try {
      json = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    } catch {
      // Sealed by our key yet not JSON: only a key shared with another format could do it; refused all the same.
      throw handleRefused();
    }
    const parsed = claimsSchema.safeParse(json);
    if (!parsed.success) throw handleRefused();
    const c = parsed.data;
    return {
      session: c.s,
      from: c.f,
      cut: c.c,
      memoKey: c.m,
      chainHead: c.h,
      ...(c.t === undefined ? {} : { content: c.t }),
    };
  }

  private mac(payload: string): string {
    return createHmac('sha256', this.key).update(`${HANDLE_PREFIX}.${payload}`).digest('base64url');
  }
}
