import { Controller, Get, Header, Param, Query, Req, Res, UseGuards } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';

import type {
  DigestsAnswer,
  HeadsAnswer,
  LogsAnswer,
  ReadAnswer,
  ReceiptsAnswer,
  RunsAnswer,
  SavingsAnswer,
  SealAnswer,
  SearchAnswer,
  SpansAnswer,
} from '@guardian/client';

import { ArchiveGuard, viewerOf } from '../guardian-api/access.guard';
import {
  DigestsQuery,
  ReadQuery,
  RunsQuery,
  SealQuery,
  SearchQuery,
  SinceQuery,
  SpansQuery,
  parseQuery,
} from './archive-query';
import { ArchiveReaders } from './archive-readers';

/**
 * The read-only recall API (ARCHITECTURE.md#http-surface, #access, docs/team.md): the archive on the sidecar's volume, read through the
 * same library calls the recall CLI makes, scoped to the caller's token. Nothing here writes but receipts. The
 * library's coded errors reach the one toHttpError (400 for a bad id or option, 404 for a run that is not the caller's).
 */
@Controller('guardian/archive')
@UseGuards(ArchiveGuard)
export class ArchiveController {
  constructor(private readonly readers: ArchiveReaders) {}

  @Get('runs')
  @Header('cache-control', 'no-store')
  runs(@Req() req: FastifyRequest, @Query() query: unknown): Promise<RunsAnswer> {
    const q = parseQuery(RunsQuery, query);
    return this.readers.forViewer(viewerOf(req)).runs(q);
  }

  @Get('runs/:run/spans')
  @Header('cache-control', 'no-store')
  spans(
    @Req() req: FastifyRequest,
    @Param('run') run: string,
    @Query() query: unknown,
  ): Promise<SpansAnswer> {
    const q = parseQuery(SpansQuery, query);
    return this.readers.forViewer(viewerOf(req)).spans(run, q);
  }

  @Get('runs/:run/spans/:span')
  @Header('cache-control', 'no-store')
  read(
    @Req() req: FastifyRequest,
    @Param('run') run: string,
    @Param('span') span: string,
    @Query() query: unknown,
  ): Promise<ReadAnswer> {
    const q = parseQuery(ReadQuery, query);
    return this.readers.forViewer(viewerOf(req)).readSpan({
      run,
      // `0003.json`, `0003` and `3` all name span 3; anything else is a bad id (400), never a path.
      index: /^\d{1,9}(\.json)?$/.test(span) ? Number.parseInt(span, 10) : Number.NaN,
      start: q.start,
      end: q.end,
      maxChars: q.max_chars,
    });
  }

  @Get('digests')
  @Header('cache-control', 'no-store')
  digests(@Req() req: FastifyRequest, @Query() query: unknown): Promise<DigestsAnswer> {
    const q = parseQuery(DigestsQuery, query);
    return this.readers.forViewer(viewerOf(req)).digests({ run: q.run, max: q.max, maxTokens: q.max_tokens });
  }

  @Get('search')
  @Header('cache-control', 'no-store')
  search(@Req() req: FastifyRequest, @Query() query: unknown): Promise<SearchAnswer> {
    const q = parseQuery(SearchQuery, query);
    return this.readers.forViewer(viewerOf(req)).search(q);
  }

  @Get('seal')
  @Header('cache-control', 'no-store')
  seal(@Req() req: FastifyRequest, @Query() query: unknown): Promise<SealAnswer> {
    const q = parseQuery(SealQuery, query);
    return this.readers.forViewer(viewerOf(req)).seal(q);
  }

  @Get('heads')
  @Header('cache-control', 'no-store')
  async heads(@Req() req: FastifyRequest): Promise<HeadsAnswer> {
    return { heads: await this.readers.forViewer(viewerOf(req)).heads() };
  }

  @Get('receipts')
  @Header('cache-control', 'no-store')
  receipts(@Req() req: FastifyRequest, @Query() query: unknown): Promise<ReceiptsAnswer> {
    const q = parseQuery(SinceQuery, query);
    return this.readers.forViewer(viewerOf(req)).receipts(q);
  }

  @Get('savings')
  @Header('cache-control', 'no-store')
  savings(@Req() req: FastifyRequest, @Query() query: unknown): Promise<SavingsAnswer> {
    const q = parseQuery(SinceQuery, query);
    return this.readers.forViewer(viewerOf(req)).savings(q);
  }

  // The writers' transparency logs (issue 29, docs/ARCHIVE_FORMAT.md#the-log), served as C2SP tlog-tiles lays them out.
  @Get('logs')
  @Header('cache-control', 'no-store')
  logs(@Req() req: FastifyRequest): Promise<LogsAnswer> {
    return this.readers.logs.list(viewerOf(req));
  }

  @Get('log/*')
  ownLog(@Req() req: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply): Promise<Buffer> {
    return this.logFile(req, reply, this.readers.logs.own, 'log/');
  }

  @Get('logs/:name/*')
  namedLog(
    @Req() req: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
    @Param('name') name: string,
  ): Promise<Buffer> {
    return this.logFile(req, reply, name, `logs/${name}/`);
  }

  private async logFile(
    req: FastifyRequest,
    reply: FastifyReply,
    name: string,
    prefix: string,
  ): Promise<Buffer> {
    const url = req.url.split('?')[0] ?? '';
    const rel = decodeURIComponent(
      url.slice(url.indexOf(`/guardian/archive/${prefix}`) + 18 + prefix.length),
    );
    const bytes = await this.readers.logs.file(name, rel, viewerOf(req));
    // C2SP tlog-tiles: the checkpoint is mutable (no caching beyond seconds), tiles are immutable.
    const tile = rel.startsWith('tile/');
    void reply.header('content-type', tile ? 'application/octet-stream' : 'text/plain; charset=utf-8');
    void reply.header('cache-control', tile ? 'private, max-age=31536000, immutable' : 'no-store');
    return bytes;
  }
}
