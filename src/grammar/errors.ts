// Typed grammar errors: a schema keyword kiln cannot enforce, a grammar text that does not parse,
// or a grammar that can never be satisfied or is too large. All are the client's 400s.
import { KilnError } from '../errors.js';

/** A JSON Schema uses a keyword (or a value of one) that kiln cannot enforce while decoding. */
export class UnsupportedSchemaError extends KilnError {
  readonly code = 'unsupported_schema';
  override readonly status = 400;
  override readonly type = 'invalid_request_error';
  /**
   * @param keyword the schema keyword, e.g. `uniqueItems`
   * @param pointer the JSON pointer of the schema object that holds it, e.g. `/properties/tags`
   */
  constructor(readonly keyword: string, readonly pointer: string, detail?: string) {
    super(`JSON Schema keyword '${keyword}' at '${pointer || '/'}' is not supported for constrained decoding${detail ? `: ${detail}` : ''}. ` +
      'See the supported subset in the README; remove the keyword or rewrite the schema with supported ones.');
  }
}

/** A grammar (GBNF, regex or schema) is malformed, empty, left-recursive or too large. */
export class GrammarError extends KilnError {
  readonly code = 'invalid_grammar';
  override readonly status = 400;
  override readonly type = 'invalid_request_error';
}
