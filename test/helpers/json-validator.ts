// ajv (an independent JSON Schema validator, draft 2020-12) with the formats kiln's tests use,
// checked by independent means (WHATWG URL, Date, plain regular expressions).
import { Ajv2020 } from 'ajv/dist/2020.js';

export function jsonValidator(): Ajv2020 {
  const ajv = new Ajv2020({ strict: false, allErrors: false });
  const date = (s: string) => /^\d{4}-\d\d-\d\d$/.test(s) && new Date(`${s}T00:00:00Z`).toISOString().startsWith(s);
  ajv.addFormat('date', date);
  ajv.addFormat('date-time', (s: string) => /^\d{4}-\d\d-\d\d[Tt]\d\d:\d\d:\d\d(\.\d+)?([Zz]|[+-]\d\d:\d\d)$/.test(s) && date(s.slice(0, 10)) && !Number.isNaN(Date.parse(s)));
  ajv.addFormat('uri', (s: string) => {
    try {
      return /^[A-Za-z][A-Za-z0-9+.-]*:[^\s]*$/.test(s) && new URL(s).protocol.length > 1;
    } catch {
      return false;
    }
  });
  ajv.addFormat('email', /^[^\s@"]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*$/);
  ajv.addFormat('uuid', /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i);
  ajv.addFormat('int32', { type: 'number', validate: (n: number) => Number.isInteger(n) && n >= -(2 ** 31) && n < 2 ** 31 });
  return ajv;
}

