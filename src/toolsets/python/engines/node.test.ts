import { describe, expect, it } from 'vitest';
import * as acorn from 'acorn';
import { describe as describe_, functionsNamed, handlerAround, hitTest, template } from './node-bridge.js';
import { inspectorFilter, mayBeInspectorLine, NodeEngine } from './node.js';

describe("node's stderr: the inspector's own lines are left out, the program's go on at once", () => {
  it("keeps back only an unfinished line that can still become one of the inspector's (attack 18aq j2-5)", () => {
    expect(mayBeInspectorLine('Debugger listening on ws://127.0.0.1:4')).toBe(true);
    expect(mayBeInspectorLine('Wait')).toBe(true);
    expect(mayBeInspectorLine('Fo')).toBe(true);
    // Kept back and split again with each chunk, a 20 MB line starting with W held the loop 38 s.
    expect(mayBeInspectorLine(`W${'x'.repeat(300)}`)).toBe(false);
    expect(mayBeInspectorLine('Warning: something')).toBe(false);
    expect(mayBeInspectorLine('Debugger listening on ws://' + 'x'.repeat(300))).toBe(false);
  });
});

describe("node's stderr filter", () => {
  it("leaves out the inspector's lines, also where node writes one at the end of a line the program left open", () => {
    const filter = inspectorFilter();
    const chunks = ['Debugger attached.\nhello\nWa', 'rning: x\n', 'no newline yet ', 'Waiting for the debugger to disconnect...\n'];
    expect(chunks.map((c) => filter.push(c)).join('') + filter.end()).toBe('hello\nWarning: x\nno newline yet ');
    const glued = inspectorFilter();
    expect(glued.push('W word word Waiting for the debugger to disconnect...\n') + glued.end()).toBe('W word word ');
    // CI, loaded: node said the debugger was ending, glued to the program's last line (test/node.test.ts j2-5).
    const ending = inspectorFilter();
    const url = 'ws://127.0.0.1:33117/4cfbfddd-22e0-48c2-85f8-168a6436c0c5';
    expect(ending.push(`W word word Debugger ending on ${url}\n`) + ending.end()).toBe('W word word ');
    const alone = inspectorFilter();
    expect(alone.push(`out\nDebugger ending on ${url}\n`) + alone.end()).toBe('out\n');
    // The program's own text that only looks alike stays.
    const own = inspectorFilter();
    expect(own.push('Debugger ending on time\n') + own.end()).toBe('Debugger ending on time\n');
  });
});

describe('hit conditions and logpoints, run in the program (attack 18aq k2-7)', () => {
  /** Whether the nth hit stops, as the program's condition reads it. */
  const stops = (hitCondition: string) => [1, 2, 3, 4].map((n) => new Function('n', `return n ${hitTest(hitCondition)}`)(n) as boolean);
  it('N and == N stop at the Nth hit; >=, >, <, <= and % N as written; anything else is no hit condition', () => {
    expect(stops('3')).toEqual([false, false, true, false]);
    expect(stops('== 3')).toEqual([false, false, true, false]);
    expect(stops('>= 3')).toEqual([false, false, true, true]);
    expect(stops('> 3')).toEqual([false, false, false, true]);
    expect(stops('< 3')).toEqual([true, true, false, false]);
    expect(stops('%2')).toEqual([false, true, false, true]);
    expect(hitTest('soon')).toBeUndefined();
  });
  it("a logpoint's message is a template literal: its text kept as written, each {expression} its value", () => {
    const run = (message: string, scope: Record<string, unknown>) => new Function(...Object.keys(scope), `return ${template(message)}`)(...Object.values(scope)) as string;
    expect(run('pricing {line.sku} x{line.qty}', { line: { sku: 'ink', qty: 5 } })).toBe('pricing ink x5');
    expect(run('a `tick` \\ ${n} {n * 2}', { n: 4 })).toBe('a `tick` \\ $4 8');
    expect(run('cost ${ never closed', {})).toBe('cost ${ never closed');
  });
});

describe('where an ES module catches (attack 18aq k2-1, k2-2)', () => {
  /** Whether a frame at the marker is inside a handler, as the bridge reads the script. */
  const caught = (code: string) => {
    const at = code.indexOf('/*@*/') + 5;
    const before = code.slice(0, at).split('\n');
    const tree = acorn.parse(code, { ecmaVersion: 'latest', sourceType: 'module', allowAwaitOutsideFunction: true, locations: true });
    return handlerAround(tree, before.length, before.at(-1)!.length);
  };
  it('a handler that takes nothing, or a return not awaited in an async function, catches nothing', () => {
    expect(caught('async function g() { await /*@*/f().catch(); }')).toBe(false);
    expect(caught('await /*@*/f().then(ok, undefined);')).toBe(false);
    expect(caught('await /*@*/f().then(ok, null);')).toBe(false);
    expect(caught('async function g() { try { return /*@*/f(); } catch {} }')).toBe(false);
    expect(caught('try { class A { x = /*@*/f(); } } catch {}')).toBe(false);
    expect(caught('try { class A { static { /*@*/f(); } } } catch {}')).toBe(false);
    expect(caught('try { } catch { } /*@*/f();')).toBe(false);
  });
  it('try blocks, .catch(h), .then(_, h), Promise.allSettled and an awaited return catch', () => {
    expect(caught('try { await /*@*/f(); } catch {}')).toBe(true);
    expect(caught('await /*@*/f().catch((e) => e);')).toBe(true);
    expect(caught('await /*@*/f().then(ok, (e) => e);')).toBe(true);
    expect(caught('await Promise.allSettled([/*@*/f()]);')).toBe(true);
    expect(caught('async function g() { try { return await /*@*/f(); } catch {} }')).toBe(true);
    expect(caught('function g() { try { return /*@*/f(); } catch {} }')).toBe(true);
    expect(caught('async function g() { return /*@*/f().catch(h); }')).toBe(true);
  });
});

describe('an uncaught error node printed at the end (attack 18aq k2-4)', () => {
  const engine = new NodeEngine('/w');
  it('a value that is not an Error, and a message on several lines with a spaced name, are errors too', () => {
    expect(engine.endError(1, "\n/tmp/np/t1.js:1\nthrow 'boom str';\n^\nboom str\n(Use `node --trace-uncaught ...` to show where the exception was thrown)\n\nNode.js v20.20.2\n")).toMatchObject({
      type: 'Uncaught',
      message: 'boom str',
    });
    expect(
      engine.endError(
        1,
        "/tmp/np/t2.js:1\nconst e = new Error('line one\\nline two'); e.name = 'Bad Thing'; throw e;\n                                                                 ^\n\nBad Thing: line one\nline two\n    at Object.<anonymous> (/tmp/np/t2.js:1:11)\n    at Module._compile (node:internal/modules/cjs/loader:1521:14)\n    at Module._extensions..js (node:internal/modules/cjs/loader:1623:10)\n    at Module.load (node:internal/modules/cjs/loader:1266:32)\n    at Module._load (node:internal/modules/cjs/loader:1091:12)\n    at Function.executeUserEntryPoint [as runMain] (node:internal/modules/run_main:164:12)\n    at node:internal/main/run_main_module:28:49\n\nNode.js v20.20.2\n",
      ),
    ).toMatchObject({ type: 'Bad Thing', message: 'line one\nline two', traceback: expect.stringMatching(/^Bad Thing: line one\nline two\n {4}at /) });
    expect(engine.endError(0, '')).toBeNull();
  });
});

describe('function breakpoints: where the functions a name names start', () => {
  const source = [
    'function plain(a) {', //          1
    '  return a;', //                  2
    '}', //                            3
    'const arrow = (x) => x * 2;', //  4
    'class Shop {', //                 5
    '  sell(n) {', //                  6
    '    return n;', //                7
    '  }', //                          8
    '  static open() {}', //           9
    '}', //                            10
    'const tools = {', //              11
    '  sell() {', //                   12
    '    return 0;', //                13
    '  },', //                         14
    '};', //                           15
    'Shop.prototype.close = function () {', // 16
    '  return 1;', //                  17
    '};', //                           18
    'exports.plain = function () {', // 19
    '  return 2;', //                  20
    '};', //                           21
    'define(exports, { arrow: () => arrow, sell: () => sell });', // 22: a bundler's export getters
  ].join('\n');
  const tree = acorn.parse(source, { ecmaVersion: 'latest', sourceType: 'script', locations: true });
  const lines = (name: string) => functionsNamed(tree, name).map((at) => at.line);

  it("a plain name: declarations, functions assigned to it, and every method or property so named (not a bundler's export getters)", () => {
    expect(lines('plain')).toEqual([2, 20]);
    expect(lines('arrow')).toEqual([4]);
    expect(lines('sell')).toEqual([7, 13]);
    expect(lines('open')).toEqual([9]);
    expect(lines('close')).toEqual([17]);
    expect(lines('nothing')).toEqual([]);
  });

  it('Owner.name: only the methods of that class or object, or assigned to it or its prototype', () => {
    expect(lines('Shop.sell')).toEqual([7]);
    expect(lines('tools.sell')).toEqual([13]);
    expect(lines('Shop.close')).toEqual([17]);
    expect(lines('exports.plain')).toEqual([20]);
    expect(lines('Other.sell')).toEqual([]);
    // A private method, as stacks write it (attack o2-4).
    expect(functionsNamed(acorn.parse('class A { #hidden() {\n  return 1;\n} }', { ecmaVersion: 'latest', locations: true }), 'A.#hidden').map((at) => at.line)).toEqual([2]);
  });
});

describe('functions shown by name', () => {
  const fn = (description: string) => describe_({ type: 'function', className: 'Function', description });
  it('a declaration, a class, a method, a private or async one, an accessor; an arrow function has none (attack o2-9)', () => {
    expect(fn('function total(a) { return a }')).toBe('[Function: total]');
    expect(fn('async function* walk() {}')).toBe('[Function: walk]');
    expect(fn('class Shop { }')).toBe('[class Shop]');
    expect(fn('badgesFor(user) { return [] }')).toBe('[Function: badgesFor]');
    expect(fn('#format(user) { return "" }')).toBe('[Function: #format]');
    expect(fn('async load(id) { }')).toBe('[Function: load]');
    expect(fn('functional(x) { }')).toBe('[Function: functional]');
    expect(fn('(x) => x * 2')).toBe('[Function: (anonymous)]');
  });
});
