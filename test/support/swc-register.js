// Lets a child process run TypeScript sources without a build (crash tests, benchmarks run from source):
// .ts files are compiled on require with @swc/core, and @guardian/<lib> resolves to libs/<lib>/src/index.ts,
// the same mapping as tsconfig paths and jest's moduleNameMapper.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const Module = require('node:module');
const { transformSync } = require('@swc/core');

const root = path.resolve(__dirname, '..', '..');
const originalResolve = Module._resolveFilename;
Module._resolveFilename = function resolve(request, parent, isMain, options) {
  const match = /^@guardian\/([a-z0-9-]+)$/.exec(request);
  const target = match ? path.join(root, 'libs', match[1], 'src', 'index.ts') : request;
  return originalResolve.call(this, target, parent, isMain, options);
};

require.extensions['.ts'] = function compile(module, filename) {
  const source = fs.readFileSync(filename, 'utf8');
  const { code } = transformSync(source, {
    filename,
    sourceMaps: 'inline',
    module: { type: 'commonjs' },
    jsc: {
      target: 'es2022',
      parser: { syntax: 'typescript', decorators: true },
      transform: { legacyDecorator: true, decoratorMetadata: true },
    },
  });
  module._compile(code, filename);
};
