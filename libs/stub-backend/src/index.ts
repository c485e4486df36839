export { startStub } from './stub-server';
export { FABRICATED_SHAPES, SUMMARY_MARKER } from './summary';
export { countPrompt, countTokens } from './token-count';
export { StubError, type StubErrorCode } from './stub-options';
export type {
  GenerationRoute,
  RecordedRequest,
  StubBackend,
  StubAnswerMode,
  StubFlavor,
  StubOptions,
  StubReply,
} from './types';
