import { Body, Controller, Header, HttpCode, Post, Req, UseGuards } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { z } from 'zod';

import type { CaptureAnswer } from '@guardian/client';

import { ArchiveGuard, viewerOf } from '../guardian-api/access.guard';
import { GuardianError } from '../http/http-error';
import { CaptureIntake } from './capture-intake';

const CaptureBody = z.object({
  session_hash: z.string().regex(/^[0-9a-f]{64}$/, 'a sha256 hex'),
  offset: z.number().int().min(0),
  model: z.string().min(1).max(256),
  lines: z.array(z.unknown()).min(1).max(100_000),
});

/**
 * `POST /guardian/capture`: the Claude Code hooks post transcript lines here when GUARDIAN_URL names a sidecar, so a
 * team's sessions land on the shared volume instead of each laptop's (docs/team.md). Guarded like the archive.
 */
@Controller('guardian')
@UseGuards(ArchiveGuard)
export class CaptureController {
  constructor(private readonly intake: CaptureIntake) {}

  @Post('capture')
  @HttpCode(200)
  @Header('cache-control', 'no-store')
  capture(@Req() req: FastifyRequest, @Body() body: unknown): Promise<CaptureAnswer> {
    // Bodies arrive as raw bytes (http/raw-body.ts): this route reads its JSON itself.
    let json: unknown;
    try {
      json = JSON.parse(Buffer.isBuffer(body) ? body.toString('utf8') : '');
    } catch {
      // The parser's message would quote the body (transcript text); the fact is enough.
      throw new GuardianError('GUARDIAN_BAD_CAPTURE', 'the body is not JSON', 400);
    }
    const parsed = CaptureBody.safeParse(json);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new GuardianError(
        'GUARDIAN_BAD_CAPTURE',
        `${issue?.path.join('.') || 'body'}: ${issue?.message ?? ''}`,
        400,
      );
    }
    return this.intake.capture(viewerOf(req), parsed.data);
  }
}
