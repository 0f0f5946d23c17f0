'use strict';
// Loaded (--require) into a Node.js program that debugkit runs under the V8 inspector. A CommonJS
// module is compiled from a function, which V8's instrumentation breakpoints never see; so, before
// a module that carries a source map (TypeScript through tsx, a compiled build with maps) is
// compiled, this stops at the `debugger` statement below. debugkit's Node.js adapter reads the
// module's file name and map there, sets the breakpoints of its original sources at their
// generated lines, and resumes: the module then runs with them. While the session has function
// breakpoints (the adapter sets the flag below), it stops before each module of the program's, so
// that the functions the module defines have their breakpoints before it runs. Nothing else changes.
const Module = require('node:module');

// A child the program forks (child_process.fork, cluster) takes process.execArgv: it must run as it would without
// debugkit, neither waiting for a debugger nor serving an inspector (attack 18aq j2-2). The program's own flags stay.
{
  const argv = process.execArgv;
  const kept = [];
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    if (/^--inspect(?:-brk|-publish-uid|-port|-wait)?(?:=|$)/.test(flag)) continue;
    if ((flag === '--require' || flag === '-r') && argv[i + 1] === __filename) {
      i++;
      continue;
    }
    kept.push(flag);
  }
  argv.splice(0, argv.length, ...kept);
}

const compile = Module.prototype._compile;
const MARK = 'sourceMappingURL=';
const EACH = Symbol.for('debugkit.stopBeforeEachModule');

// Its arguments are read by the adapter at the stop, not here.
// eslint-disable-next-line @typescript-eslint/no-unused-vars
function debugkitModuleLoading(filename, sourceMapURL, content) {
  debugger; // eslint-disable-line no-debugger
}

Module.prototype._compile = function (content, filename) {
  if (typeof content === 'string' && typeof filename === 'string' && !filename.includes('/node_modules/')) {
    const at = content.lastIndexOf(MARK);
    const url = at >= 0 && /\/[/*][#@]\s*$/.test(content.slice(Math.max(0, at - 8), at)) ? content.slice(at + MARK.length).split(/\s/, 1)[0] : '';
    if (url || globalThis[EACH] === true) debugkitModuleLoading(filename, url, content);
  }
  return compile.call(this, content, filename);
};
