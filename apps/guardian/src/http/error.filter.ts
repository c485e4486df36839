import { ArgumentsHost, Catch, ExceptionFilter, HttpException } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';

import { apiStyleOf, errorBody } from './api-style';

/**
 * The one place guardian's own refusals become HTTP (HOUSE rule 4): a body shaped like the route's API with a
 * stable `code`. Anything unexpected is a 500 with code GUARDIAN_INTERNAL; the proxy path itself never gets here
 * (it fails open).
 */
const STATUS_CODES: Record<number, string> = {
  400: 'GUARDIAN_BAD_REQUEST',
  404: 'GUARDIAN_NOT_FOUND',
  413: 'GUARDIAN_BODY_TOO_LARGE',
};

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

/** Duck-typed: Fastify's errors carry `statusCode` (and may come from another realm, so no instanceof). */
function isFastifyError(e: unknown): e is { statusCode: number; message: string } {
  if (typeof e !== 'object' || e === null || !('statusCode' in e)) return false;
  const status = e.statusCode;
  return typeof status === 'number' && status >= 400 && status < 500;
}

@Catch()
export class GuardianErrorFilter implements ExceptionFilter {
  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const req = http.getRequest<FastifyRequest>();
    const reply = http.getResponse<FastifyReply>();
    let status = 500;
    let code = 'GUARDIAN_INTERNAL';
    let message = 'internal error';
    if (isHttpException(exception)) {
      status = exception.getStatus();
      code = STATUS_CODES[status] ?? 'GUARDIAN_ERROR';
      const body = exception.getResponse();
      if (typeof body === 'object' && body !== null) {
        const b = body as { code?: unknown; message?: unknown };
        code = typeof b.code === 'string' ? b.code : (STATUS_CODES[status] ?? 'GUARDIAN_ERROR');
        message =
          status === 413
            ? 'request body over GUARDIAN_MAX_BODY_BYTES'
            : typeof b.message === 'string'
              ? b.message
              : exception.message;
      } else {
        message = status === 413 ? 'request body over GUARDIAN_MAX_BODY_BYTES' : String(body);
      }
    } else if (isFastifyError(exception)) {
      // Raised by Fastify before a route runs: an oversized body (413) or a malformed request line/header (400).
      status = exception.statusCode;
      code = status === 413 ? 'GUARDIAN_BODY_TOO_LARGE' : 'GUARDIAN_BAD_REQUEST';
      message = status === 413 ? 'request body over GUARDIAN_MAX_BODY_BYTES' : exception.message;
    }
    if (reply.sent) return;
    void reply
      .status(status)
      .header('content-type', 'application/json')
      .send(errorBody(apiStyleOf(req.url, req.headers), status, code, message));
  }
}
