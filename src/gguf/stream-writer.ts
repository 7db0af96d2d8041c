// Writes a GGUF file whose tensors are too large to hold in memory at once: the header goes out
// first (encoded by writer.ts), then each tensor's bytes as they are produced, in header order.
// The file is written under a temporary name and renamed into place only when complete, so an
// interrupted conversion never leaves a truncated model where a good one is expected.
import { open, rename, rm, type FileHandle } from 'node:fs/promises';
import { InvalidArgumentError } from '../errors.js';
import { encodeGgufHeader, type GgufHeader, type GgufTensorInfo, type GgufWriteSpec } from './writer.js';

export interface GgufStreamSpec {
  version?: 2 | 3;
  metadata?: GgufWriteSpec['metadata'];
  /** In file order; their data must then be written in this order. */
  tensors: readonly GgufTensorInfo[];
}

export class GgufStreamWriter {
  private tensor = 0;
  /** Bytes of the current tensor written so far. */
  private written = 0;
  private total = 0;

  private constructor(
    private readonly file: FileHandle,
    private readonly tempPath: string,
    private readonly path: string,
    private readonly spec: GgufStreamSpec,
    private readonly header: GgufHeader,
  ) {}

  /** Checks the spec, opens a temporary file next to `path` and writes the header. */
  static async create(path: string, spec: GgufStreamSpec): Promise<GgufStreamWriter> {
    const header = encodeGgufHeader(spec);
    const tempPath = `${path}.${process.pid}.partial`;
    const file = await open(tempPath, 'w');
    const writer = new GgufStreamWriter(file, tempPath, path, spec, header);
    try {
      await writer.put(header.bytes);
    } catch (err) {
      await writer.abort();
      throw err;
    }
    return writer;
  }

  /** Total bytes the finished file will have. */
  get fileSize(): number {
    return this.header.bytes.length + this.header.dataSize;
  }

  /** Bytes written to the file so far, header and padding included. */
  get bytesWritten(): number {
    return this.total;
  }

  /** The name of the tensor whose bytes come next, or null when all are written. */
  get current(): string | null {
    return this.spec.tensors[this.tensor]?.name ?? null;
  }

  /** Appends bytes of the current tensor; a chunk never spans two tensors. */
  async write(chunk: Uint8Array): Promise<void> {
    const info = this.spec.tensors[this.tensor];
    if (!info) throw new InvalidArgumentError('GgufStreamWriter: every tensor is already written', 'chunk');
    const size = this.header.sizes[this.tensor]!;
    if (this.written + chunk.length > size) {
      throw new InvalidArgumentError(`GgufStreamWriter: tensor "${info.name}" takes ${size} bytes; this chunk would make ${this.written + chunk.length}`, 'chunk');
    }
    await this.put(chunk);
    this.written += chunk.length;
    if (this.written === size) {
      const pad = alignPadding(size, this.header.alignment);
      if (pad > 0) await this.put(new Uint8Array(pad));
      this.tensor++;
      this.written = 0;
    }
  }

  /** Closes the file and moves it to its final name; throws if a tensor is incomplete. */
  async finish(): Promise<void> {
    const missing = this.current;
    if (missing !== null) {
      await this.abort();
      throw new InvalidArgumentError(`GgufStreamWriter: tensor "${missing}" and any after it were not written`, 'tensors');
    }
    await this.file.close();
    await rename(this.tempPath, this.path);
  }

  /** Closes and deletes the partial file. */
  async abort(): Promise<void> {
    await this.file.close().catch(() => undefined);
    await rm(this.tempPath, { force: true });
  }

  private async put(bytes: Uint8Array): Promise<void> {
    let done = 0;
    while (done < bytes.length) {
      const { bytesWritten } = await this.file.write(bytes, done, bytes.length - done);
      done += bytesWritten;
    }
    this.total += bytes.length;
  }
}

function alignPadding(n: number, alignment: number): number {
  return (alignment - (n % alignment)) % alignment;
}
