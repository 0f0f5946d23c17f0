export { grepFiles, type GrepMatch, type GrepMetadata, type GrepOptions, type GrepResult } from './grep.js';
export { listFiles, type FileEntry, type ListMetadata, type ListOptions, type ListResult } from './list.js';
export { readFile, type ReadOptions, type ReadResult } from './read.js';
