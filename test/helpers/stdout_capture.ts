// What a print function of the bench writes to stdout, for tests of its tables: captured, not shown.
export function printedBy(print: () => void): string {
  const write = process.stdout.write;
  let text = '';
  process.stdout.write = ((chunk: string) => ((text += chunk), true)) as typeof process.stdout.write;
  try {
    print();
  } finally {
    process.stdout.write = write;
  }
  return text;
}
