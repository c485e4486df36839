import { Controller, Get, Param, Query, Req, Res, UseGuards } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';

import { OWNER_PATTERN } from '@guardian/archive';
import type { HandoffAnswer } from '@guardian/client';
import { handoffMarkdown } from '@guardian/compaction';

import { HandoffWriter } from '../compaction/decide/handoff-writer';
import { sessionHash } from '../compaction/request/session';
import { GuardianError } from '../http/http-error';
import type { Viewer } from '../access/access-policy';
import { ArchiveGuard, viewerOf } from './access.guard';

/** A session's hash as the archive and the console name it. */
const SESSION_HASH = /^[0-9a-f]{64}$/;

/**
 * `GET /guardian/sessions/<id>/handoff` (issue 32 item 5): the session's latest hand-off, JSON, or Markdown with
 * `?format=md` or `Accept: text/markdown`. It quotes what the user typed, so it is archive content
 * (ARCHITECTURE.md#access): a developer reads their own sessions' only, another owner's is answered like a missing one.
 */
@Controller()
export class HandoffController {
  constructor(private readonly handoffs: HandoffWriter) {}

  @Get('guardian/sessions/:id/handoff')
  @UseGuards(ArchiveGuard)
  async handoff(
    @Req() req: FastifyRequest,
    @Res() reply: FastifyReply,
    @Param('id') id: string,
    @Query('format') format?: string | string[],
    @Query('owner') ownerQuery?: string | string[],
  ): Promise<void> {
    if (id.length === 0 || Buffer.byteLength(id) > 256)
      throw new GuardianError('GUARDIAN_BAD_SESSION', 'session must be 1-256 bytes', 400);
    if (Array.isArray(format) || (format !== undefined && format !== 'md' && format !== 'json'))
      throw new GuardianError('GUARDIAN_BAD_REQUEST', 'format is md or json', 400);
    const viewer = viewerOf(req);
    const owner = ownerOf(viewer, ownerQuery);
    // A developer reads only runs their token wrote, in memory and on the volume alike.
    const scope = viewer.kind === 'owner' ? viewer.ownerHash : undefined;
    // By the name the session was sent with, or by its hash (the id the console's sessions list gives); from memory,
    // else from the hand-off file of its run (after a restart, or written by another replica).
    const stored =
      (await this.handoffs.find(sessionHash(id, owner), scope)) ??
      (SESSION_HASH.test(id) ? await this.handoffs.find(id, scope) : undefined);
    if (!stored || (viewer.kind === 'owner' && stored.ownerHash !== viewer.ownerHash))
      throw new GuardianError(
        'GUARDIAN_NO_SESSION',
        'no hand-off for this session (not compacted here yet)',
        404,
      );
    const answer: HandoffAnswer = stored.handoff;
    const markdown =
      format === 'md' || (format === undefined && String(req.headers.accept ?? '').includes('text/markdown'));
    // A reply is thenable (it resolves once sent): only `send` is awaited.
    reply.header('cache-control', 'no-store');
    if (markdown)
      await reply.header('content-type', 'text/markdown; charset=utf-8').send(handoffMarkdown(answer));
    else await reply.send(answer);
  }
}

/** Whose session the id names: a developer's own, always; the admin's (or an open sidecar's) `?owner=` names one. */
function ownerOf(viewer: Viewer, query: string | string[] | undefined): string | undefined {
  if (Array.isArray(query)) throw new GuardianError('GUARDIAN_BAD_OWNER', 'give owner once', 400);
  if (viewer.kind === 'owner') {
    if (query !== undefined && query !== viewer.owner)
      throw new GuardianError(
        'GUARDIAN_BAD_OWNER',
        'a developer token reads its own sessions: leave out owner',
        400,
      );
    return viewer.owner;
  }
  if (query !== undefined && !OWNER_PATTERN.test(query))
    throw new GuardianError('GUARDIAN_BAD_OWNER', 'owner is not a valid owner name', 400);
  return query;
}
