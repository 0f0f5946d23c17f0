// Logs one very long line, then goes on to its work.
const line = 'x'.repeat(Number(process.argv[2] ?? 130_000_000));
console.log(line);
const after = line.length;
console.log(`logged ${after}`);
