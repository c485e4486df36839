import { Injectable } from '@nestjs/common';

import { GuardianMetrics, type AccessRefusalReason } from '@guardian/telemetry';

import { GuardianConfig } from '../config/guardian-config';
import { GuardianError } from '../http/http-error';
import { TokenRegistry, type Caller } from './token-registry';

/** Whose data a reader sees: everything (admin, or an open sidecar), or one owner's sessions and runs. */
export type Viewer = { kind: 'all' } | { kind: 'owner'; owner: string; ownerHash: string };

/** Whose sessions a proxied request belongs to: an owner in team mode, or none (the sessions of old). */
export interface RequestOwner {
  owner?: string;
  ownerHash?: string;
}

/**
 * A refusal at the door, as the GuardianError the edge answers: 401 when a token is needed and none came, 403 when
 * the one sent is not accepted.
 */
export type Verdict<T> = { ok: true; value: T } | { ok: false; refusal: GuardianError };

const invalid = (): GuardianError =>
  new GuardianError(
    'GUARDIAN_TOKEN_INVALID',
    'X-Guardian-Token not accepted: not a token this sidecar knows (withdrawn, mistyped, or sent twice)',
    403,
  );

/**
 * Who may do what (docs/ARCHITECTURE.md#access, docs/team.md, ADR 0014), decided in one place for the three doors:
 *
 * - proxied requests: a token names the owner of the session; GUARDIAN_TOKEN_REQUIRED makes one necessary;
 * - metadata (`/guardian/stats`, `/events`, `/usage`): open unless GUARDIAN_ADMIN_TOKEN is set; a developer token
 *   sees its own sessions;
 * - archive content (`/guardian/archive/*`, `/guardian/capture`): open only on a loopback bind with no token
 *   configured (one person's laptop); otherwise a developer reads their own runs and the admin all of them.
 *
 * A token that is sent but not accepted is refused everywhere (403): falling back to "no token" would file a
 * developer's sessions where they cannot read them, and say nothing about it.
 */
@Injectable()
export class AccessPolicy {
  constructor(
    private readonly config: GuardianConfig,
    private readonly registry: TokenRegistry,
    private readonly metrics: GuardianMetrics,
  ) {}

  identify(lines: readonly string[] | undefined): Caller {
    return this.registry.identify(lines);
  }

  /**
   * A forwarded request (every path, the compacted routes and the rest). A HEAD request needs no token even when
   * tokens are required: it carries no body either way, and clients send it as a connectivity probe without their
   * custom headers (Claude Code's `HEAD /`, docs/sessions.md), so refusing it would fail a client that is set up.
   */
  proxy(caller: Caller, method: string): Verdict<RequestOwner> {
    if (caller.kind === 'rejected') return this.refuse(invalid(), 'token_invalid');
    if (caller.kind === 'anonymous') {
      if (!this.config.access.tokenRequired || method === 'HEAD') return { ok: true, value: {} };
      return this.refuse(
        new GuardianError(
          'GUARDIAN_TOKEN_REQUIRED',
          'X-Guardian-Token required: this sidecar runs in team mode (GUARDIAN_TOKEN_REQUIRED); send your token in that header',
          401,
        ),
        'token_required',
      );
    }
    return { ok: true, value: { owner: caller.owner, ownerHash: caller.ownerHash } };
  }

  /** Metadata: no message text, so open unless an admin token is configured (ARCHITECTURE.md#access). */
  metadata(caller: Caller): Verdict<Viewer> {
    if (caller.kind === 'rejected') return this.refuse(invalid(), 'token_invalid');
    if (caller.kind === 'developer') return { ok: true, value: ownerView(caller) };
    if (caller.kind === 'admin' || !this.registry.adminConfigured)
      return { ok: true, value: { kind: 'all' } };
    return this.refuse(
      new GuardianError('GUARDIAN_TOKEN_REQUIRED', 'X-Guardian-Token required', 401),
      'token_required',
    );
  }

  /** Archive content: conversation text, so a token is needed unless this is a laptop with none configured. */
  archive(caller: Caller): Verdict<Viewer> {
    if (caller.kind === 'rejected') return this.refuse(invalid(), 'token_invalid');
    if (caller.kind === 'developer') return { ok: true, value: ownerView(caller) };
    if (caller.kind === 'admin') return { ok: true, value: { kind: 'all' } };
    if (this.config.loopbackBind && !this.registry.configured) return { ok: true, value: { kind: 'all' } };
    return this.refuse(
      new GuardianError(
        'GUARDIAN_TOKEN_REQUIRED',
        this.registry.configured
          ? 'X-Guardian-Token required to read the archive'
          : 'the archive is not served beyond loopback without tokens: set GUARDIAN_TOKENS_FILE or GUARDIAN_ADMIN_TOKEN',
        401,
      ),
      'token_required',
    );
  }

  private refuse<T>(refusal: GuardianError, reason: AccessRefusalReason): Verdict<T> {
    this.metrics.accessRefusals.inc({ reason });
    return { ok: false, refusal };
  }
}

function ownerView(caller: { owner: string; ownerHash: string }): Viewer {
  return { kind: 'owner', owner: caller.owner, ownerHash: caller.ownerHash };
}
