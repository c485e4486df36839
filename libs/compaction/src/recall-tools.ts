/**
 * The recall MCP server's tool names: the server registers them, the summary block and spill pointers name them to
 * the model, and the sidecar counts a model's calls to them for the receipts. One list, here in the lowest library,
 * so the three cannot drift apart.
 */
export const RECALL_TOOLS = {
  searchSpans: 'search_spans',
  readSpan: 'read_span',
  listSpans: 'list_spans',
  listDigests: 'list_digests',
  getSealStatus: 'get_seal_status',
  getProxyStatus: 'get_proxy_status',
  getContextStatus: 'get_context_status',
} as const;

export const RECALL_TOOL_NAMES: ReadonlySet<string> = new Set<string>(Object.values(RECALL_TOOLS));
