// The MI parser moved to core/ so the debugger toolset can share it; this path stays for gdb's imports.
export * from '../../../core/mi/parser.js';
