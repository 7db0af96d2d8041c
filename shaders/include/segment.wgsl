// A slot's rows of a batched step: rows row0 .. row0 + n_rows - 1 of the step's activations, whose
// keys and values belong to the slot's cache (the one bound with this segment).
struct Segment {
  row0: u32,
  n_rows: u32,
}
