import type { FastifyInstance } from 'fastify';

/**
 * Every request body is kept as the exact bytes the client sent: guardian forwards them unchanged unless it
 * compacts, and reads JSON itself only on the routes it owns. Fastify's own JSON and text parsers are removed so
 * that no content type is rejected (415) or reparsed; `bodyLimit` turns an oversized body into a 413 before it is
 * read (the Content-Length is checked first).
 */
export function keepRawBodies(fastify: FastifyInstance, bodyLimit: number): void {
  fastify.removeAllContentTypeParsers();
  fastify.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit }, (_req, body, done) => {
    done(null, body);
  });
}
