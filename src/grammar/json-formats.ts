// The string formats kiln enforces, as anchored regular expressions over the string's value (RFC
// 3339 dates and times with days per month and leap years, ISO 8601 durations as JSON Schema's
// appendix spells them, RFC 5321 addresses with dot-atom or quoted local parts, RFC 1123 host
// names, dotted-quad IPv4 without leading zeros, RFC 4291 IPv6 text forms, RFC 4122 UUIDs, RFC
// 3986 URIs with a scheme).
const YEAR = '\\d{4}';
const LEAP_YEAR = '(\\d\\d(0[48]|[2468][048]|[13579][26])|(0[048]|[2468][048]|[13579][26])00)';
const MONTH_DAY = '((0[13578]|1[02])-(0[1-9]|[12]\\d|3[01])|(0[469]|11)-(0[1-9]|[12]\\d|30)|02-(0[1-9]|1\\d|2[0-8]))';
const DATE = `(${YEAR}-${MONTH_DAY}|${LEAP_YEAR}-02-29)`;
// Seconds may be 60 (a leap second) at any time of day: which minute holds one depends on the offset.
const TIME = '([01]\\d|2[0-3]):[0-5]\\d:([0-5]\\d|60)(\\.\\d+)?([Zz]|[+-]([01]\\d|2[0-3]):[0-5]\\d)';
const DUR_TIME = '(T(\\d+H(\\d+M(\\d+S)?)?|\\d+M(\\d+S)?|\\d+S))';
const DUR_DATE = '(\\d+Y(\\d+M(\\d+D)?)?|\\d+M(\\d+D)?|\\d+D)';
const DURATION = `P(${DUR_DATE}${DUR_TIME}?|${DUR_TIME}|\\d+W)`;
const LABEL = '[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?';
const HOSTNAME = `${LABEL}(\\.${LABEL})*`;
const OCTET = '(25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)';
const IPV4 = `${OCTET}(\\.${OCTET}){3}`;
const H16 = '[0-9A-Fa-f]{1,4}';
const LS32 = `(${H16}:${H16}|${IPV4})`;
const IPV6 = [
  `(${H16}:){6}${LS32}`,
  `::(${H16}:){5}${LS32}`,
  `(${H16})?::(${H16}:){4}${LS32}`,
  `((${H16}:){0,1}${H16})?::(${H16}:){3}${LS32}`,
  `((${H16}:){0,2}${H16})?::(${H16}:){2}${LS32}`,
  `((${H16}:){0,3}${H16})?::${H16}:${LS32}`,
  `((${H16}:){0,4}${H16})?::${LS32}`,
  `((${H16}:){0,5}${H16})?::${H16}`,
  `((${H16}:){0,6}${H16})?::`,
].map((p) => `(${p})`).join('|');
const ATEXT = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]";
const LOCAL = `(${ATEXT}+(\\.${ATEXT}+)*|"([\\x20\\x21\\x23-\\x5b\\x5d-\\x7e]|\\\\[\\x20-\\x7e])*")`;
const EMAIL = `${LOCAL}@(${HOSTNAME}|\\[${IPV4}\\]|\\[IPv6:(${IPV6})\\])`;
const HEX = '[0-9A-Fa-f]';
const UUID = `${HEX}{8}-${HEX}{4}-${HEX}{4}-${HEX}{4}-${HEX}{12}`;
const PCT = '%[0-9A-Fa-f]{2}';
const SUB_DELIMS = "!$&'()*+,;=";
const PCHAR = `([A-Za-z0-9\\-._~${SUB_DELIMS}:@]|${PCT})`;
const HOST = `(\\[(${IPV6}|v[0-9A-Fa-f]+\\.[A-Za-z0-9\\-._~${SUB_DELIMS}:]+)\\]|([A-Za-z0-9\\-._~${SUB_DELIMS}]|${PCT})*)`;
const AUTHORITY = `(([A-Za-z0-9\\-._~${SUB_DELIMS}:]|${PCT})*@)?${HOST}(:\\d*)?`;
const SEGMENTS = `${PCHAR}+(/${PCHAR}*)*`;
const HIER_PART = `(//${AUTHORITY}(/${PCHAR}*)*|/(${SEGMENTS})?|${SEGMENTS})?`;
const URI = `[A-Za-z][A-Za-z0-9+.\\-]*:${HIER_PART}(\\?(${PCHAR}|[/?])*)?(#(${PCHAR}|[/?])*)?`;

/** Format name -> anchored pattern over the string's value. */
export const FORMATS: Readonly<Record<string, string>> = {
  'date': DATE,
  'time': TIME,
  'date-time': `${DATE}[Tt]${TIME}`,
  'duration': DURATION,
  'email': EMAIL,
  'hostname': HOSTNAME,
  'ipv4': IPV4,
  'ipv6': IPV6,
  'uuid': UUID,
  'uri': URI,
};
