import { ArgumentsHost, Catch, ExceptionFilter } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';

import { apiStyleOf } from './api-style';
import { toHttpError } from './http-error';

/**
 * Guardian's refusals on its Nest routes become HTTP here (HOUSE rule 4), through the same toHttpError as the proxy
 * and the Fastify hooks. The proxy path itself never gets here (it fails open).
 */
@Catch()
export class GuardianErrorFilter implements ExceptionFilter {
  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const req = http.getRequest<FastifyRequest>();
    const reply = http.getResponse<FastifyReply>();
    if (reply.sent) return;
    const { status, body } = toHttpError(exception, apiStyleOf(req.url, req.headers));
    void reply.status(status).header('content-type', 'application/json').send(body);
  }
}
