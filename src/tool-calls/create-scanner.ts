// Picks the scanner for a format. The final parser and the streamer both read text through these,
// so they agree on every decision by construction.
import { InvalidArgumentError } from '../errors.js';
import type { FormatScanner, ScannerOptions } from './format-scanner.js';
import { HermesScanner } from './hermes-scanner.js';
import { Llama3JsonScanner } from './llama3-json-scanner.js';
import { MistralScanner } from './mistral-scanner.js';
import { Qwen3CoderScanner } from './qwen3-coder-scanner.js';
import type { ScannerSink } from './scanner-sink.js';
import { TOOL_CALL_FORMATS } from './types.js';

export function createScanner(sink: ScannerSink, opts: ScannerOptions): FormatScanner {
  switch (opts.format) {
    case 'hermes':
      return new HermesScanner(sink, opts);
    case 'mistral':
      return new MistralScanner(sink, opts);
    case 'llama3_json':
      return new Llama3JsonScanner(sink, opts);
    case 'qwen3_coder':
      return new Qwen3CoderScanner(sink, opts);
    default:
      throw new InvalidArgumentError(
        `unknown tool-call format ${JSON.stringify(opts.format)}; expected one of ${TOOL_CALL_FORMATS.join(', ')}.`,
        'format',
      );
  }
}
