// Which corpus schemas llguidance would compile, judged from its own documentation (the
// "Supported JSON schema features" list of docs/json_schema.md in guidance-ai/llguidance, which
// says a keyword or format outside it is an error unless `lenient` is set). llguidance has no
// Node build and this machine cannot install its Python wheel, so the bench cannot run it; this
// reads each schema's keywords against that list instead. Keywords the list supports only in part
// (oneOf when provably equivalent to anyOf, allOf intersections, min/maxProperties, disjoint
// patternProperties) count as supported: the figure is the most llguidance could compile.

const SUPPORTED = new Set([
  'anyOf', 'oneOf', 'allOf', '$ref', 'const', 'enum', 'type',
  'items', 'prefixItems', 'minItems', 'maxItems',
  'properties', 'additionalProperties', 'patternProperties', 'required', 'minProperties', 'maxProperties',
  'minLength', 'maxLength', 'pattern', 'format',
  'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf',
]);
/** Annotations and containers that constrain nothing. */
const NEUTRAL = new Set(['$schema', '$id', '$defs', 'definitions', '$comment', 'title', 'description', 'default', 'examples', 'deprecated', 'readOnly', 'writeOnly', '$anchor']);
const FORMATS = new Set(['date-time', 'time', 'date', 'duration', 'email', 'hostname', 'ipv4', 'ipv6', 'uuid', 'uri']);
const SCHEMA_MAPS = new Set(['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas']);
const SCHEMA_LISTS = new Set(['anyOf', 'oneOf', 'allOf', 'prefixItems']);

/** The first keyword (or `format: x`) of `schema` outside llguidance's documented list, or null. */
export function llguidanceRefuses(schema: unknown): string | null {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return null;
  for (const [key, value] of Object.entries(schema)) {
    if (!SUPPORTED.has(key) && !NEUTRAL.has(key)) return key;
    if (key === 'format' && !FORMATS.has(String(value))) return `format: ${String(value)}`;
    const subs = SCHEMA_MAPS.has(key) ? Object.values(value as object) : SCHEMA_LISTS.has(key) ? (value as unknown[]) : key === 'items' || key === 'additionalProperties' ? [value] : [];
    for (const sub of subs) {
      const found = llguidanceRefuses(sub);
      if (found !== null) return found;
    }
  }
  return null;
}
