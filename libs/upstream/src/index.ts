export * from './headers';
export * from './overflow';
export * from './tokenize';
export * from './upstream-client';
export * from './upstream-error';
export * from './upstream-path';
export * from './window-detect';
