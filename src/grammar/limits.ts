// Bounds on what a grammar may cost, so a hostile schema or grammar text gets a GrammarError
// instead of exhausting memory or time.

/** Automaton states per rule before determinizing (counted repetitions expand into copies). */
export const MAX_NFA_STATES = 200_000;
/** Automaton states of a whole grammar after determinizing. */
export const MAX_DFA_STATES = 200_000;
/** Rules per grammar. */
export const MAX_RULES = 5_000;
/** Largest bound of a counted repetition (`{n,m}`, maxLength, maxItems) that is expanded. */
export const MAX_REPEAT = 4096;
/** Nesting depth of schema objects, grammar groups and regex groups (the front ends recurse). */
export const MAX_NESTING = 128;
/** Stacks alive at once in one matcher state (an ambiguous grammar could multiply them). */
export const MAX_STACKS = 10_000;
/** Work units (set members, edges, call targets) one rule's determinization may take: a few seconds at most. */
export const MAX_DETERMINIZE_WORK = 2_000_000;
