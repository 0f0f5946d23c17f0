// The tool-registration API lives in src/mcp/ (below both server/ and toolsets/); this path stays for old imports.
export * from '../mcp/tools.js';
