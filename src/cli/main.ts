// Command-line entry: `kiln run`, `kiln info`.
export async function main(argv: string[]): Promise<number> {
  process.stderr.write(`kiln: unknown command ${argv[0] ?? ''}\n`);
  return 2;
}
