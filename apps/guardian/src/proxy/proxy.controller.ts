import { All, Controller, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';

import { ProxyService } from './proxy.service';

/** Everything guardian does not own goes upstream: every method, every path (`/v1/*`, `/api/*`, `/tokenize`, `/`). */
@Controller()
export class ProxyController {
  constructor(private readonly proxy: ProxyService) {}

  @All('*')
  async forward(@Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    await this.proxy.handle(req, reply);
  }

  @All('/')
  async forwardRoot(@Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    await this.proxy.handle(req, reply);
  }
}
