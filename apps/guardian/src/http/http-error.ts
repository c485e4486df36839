import { HttpException } from '@nestjs/common';
import type { FastifyReply } from 'fastify';

import { ArchiveError, type ArchiveErrorCode } from '@guardian/archive';
import { CodedError } from '@guardian/errors';
import { UpstreamError } from '@guardian/upstream';

import { errorBody, type ApiStyle } from './api-style';

/** The codes of guardian's own refusals (docs/ARCHITECTURE.md#fail-open rule 6). */
export type GuardianErrorCode =
  | 'GUARDIAN_BAD_CAPTURE'
  | 'GUARDIAN_BAD_OWNER'
  | 'GUARDIAN_BAD_REQUEST'
  | 'GUARDIAN_BAD_SESSION'
  | 'GUARDIAN_BODY_TOO_LARGE'
  | 'GUARDIAN_COMPACTION_HANDLE_FOREIGN'
  | 'GUARDIAN_COMPACTION_HANDLE_INVALID'
  | 'GUARDIAN_HOST_REFUSED'
  | 'GUARDIAN_INTERNAL'
  | 'GUARDIAN_NO_SESSION'
  | 'GUARDIAN_NOT_FOUND'
  | 'GUARDIAN_ORIGIN_REFUSED'
  | 'GUARDIAN_PATH_OUTSIDE_UPSTREAM'
  | 'GUARDIAN_PREFLIGHT_REFUSED'
  | 'GUARDIAN_SESSION_REQUIRED'
  | 'GUARDIAN_SHUTTING_DOWN'
  | 'GUARDIAN_TOKEN_INVALID'
  | 'GUARDIAN_TOKEN_REQUIRED'
  | 'GUARDIAN_WEBSOCKET_UNSUPPORTED';

/** A refusal in guardian's own name, with the status the edge answers it with. */
export class GuardianError extends CodedError<GuardianErrorCode> {
  override readonly name = 'GuardianError';

  constructor(
    code: GuardianErrorCode,
    message: string,
    readonly status: number,
  ) {
    super(code, message);
  }
}

export interface HttpError {
  status: number;
  /** JSON, shaped like the route's API. */
  body: string;
}

const BODY_TOO_LARGE = 'request body over GUARDIAN_MAX_BODY_BYTES';
/** Codes for an HttpException that carries none (Nest's own, or one Fastify raised before a route ran). */
const STATUS_CODES: Record<number, GuardianErrorCode> = {
  400: 'GUARDIAN_BAD_REQUEST',
  404: 'GUARDIAN_NOT_FOUND',
  413: 'GUARDIAN_BODY_TOO_LARGE',
};

/**
 * The one mapping from an error to what a client reads (docs/ARCHITECTURE.md#errors): a status and a body shaped like
 * the route's API with a stable `code`. The Nest filter, the proxy and the Fastify hooks all answer through it.
 * Anything it does not know is a 500 GUARDIAN_INTERNAL that says nothing of the cause.
 */
export function toHttpError(err: unknown, style: ApiStyle): HttpError {
  const { status, code, message } = describe(err);
  return { status, body: errorBody(style, status, code, message) };
}

/**
 * The archive's refusals on the recall API (docs/team.md): a bad id, option or age is the caller's, a run or span that
 * is missing, or not the caller's, is not found (the same answer). Its other codes are failures: 500.
 */
const ARCHIVE_STATUS: Partial<Record<ArchiveErrorCode, number>> = {
  ARCHIVE_BAD_ID: 400,
  ARCHIVE_BAD_OPTION: 400,
  ARCHIVE_BAD_AGE: 400,
  ARCHIVE_NOT_FOUND: 404,
};

function describe(err: unknown): { status: number; code: string; message: string } {
  if (err instanceof GuardianError || err instanceof UpstreamError) {
    return { status: err.status, code: err.code, message: err.message };
  }
  const archiveStatus = err instanceof ArchiveError ? ARCHIVE_STATUS[err.code] : undefined;
  // The library's message, so a tool reading through the sidecar prints what it prints on a local folder.
  if (err instanceof ArchiveError && archiveStatus !== undefined)
    return { status: archiveStatus, code: err.code, message: err.message };
  if (isHttpException(err)) {
    const status = err.getStatus();
    const body = err.getResponse();
    const fallback = STATUS_CODES[status] ?? 'GUARDIAN_ERROR';
    if (typeof body === 'object' && body !== null) {
      const b = body as { code?: unknown; message?: unknown };
      const message =
        status === 413 ? BODY_TOO_LARGE : typeof b.message === 'string' ? b.message : err.message;
      return { status, code: typeof b.code === 'string' ? b.code : fallback, message };
    }
    return { status, code: fallback, message: status === 413 ? BODY_TOO_LARGE : String(body) };
  }
  if (isFastifyClientError(err)) {
    // Raised by Fastify before a route runs: an oversized body (413) or a malformed request line/header (400).
    const status = err.statusCode;
    return status === 413
      ? { status, code: 'GUARDIAN_BODY_TOO_LARGE', message: BODY_TOO_LARGE }
      : { status, code: 'GUARDIAN_BAD_REQUEST', message: err.message };
  }
  return { status: 500, code: 'GUARDIAN_INTERNAL', message: 'internal error' };
}

/** Nest wraps Fastify's pre-route errors (413) in its own HttpException; matched by shape, not class identity. */
function isHttpException(e: unknown): e is HttpException {
  return (
    e instanceof HttpException ||
    (typeof e === 'object' &&
      e !== null &&
      typeof (e as { getStatus?: unknown }).getStatus === 'function' &&
      typeof (e as { getResponse?: unknown }).getResponse === 'function')
  );
}

/** Fastify's errors carry `statusCode` (and may come from another realm, so no instanceof). */
function isFastifyClientError(e: unknown): e is { statusCode: number; message: string } {
  if (typeof e !== 'object' || e === null || !('statusCode' in e)) return false;
  const status = e.statusCode;
  return typeof status === 'number' && status >= 400 && status < 500;
}

/** Answers `err` on `reply` through {@link toHttpError}: the edges outside Nest (the proxy, the Fastify hooks). */
export function sendHttpError(reply: FastifyReply, err: unknown, style: ApiStyle): FastifyReply {
  const { status, body } = toHttpError(err, style);
  return reply.status(status).header('content-type', 'application/json').send(body);
}
