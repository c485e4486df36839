export { requestHeadersForUpstream, responseHeadersForClient, type HeaderMap } from './headers';
export { parseOverflow } from './overflow';
export { tokenizeCount } from './tokenize';
export { UpstreamClient, peekBody, type UpstreamResponse } from './upstream-client';
export { UpstreamError } from './upstream-error';
export { upstreamTarget } from './upstream-path';
export { detectWindow } from './window-detect';
