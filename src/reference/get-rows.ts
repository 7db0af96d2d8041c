// Reference embedding lookup (ggml_get_rows): gathers table rows by token id as float32.

/** A whole (nRows, width) float table, or a function giving row r dequantized. */
export type RowSource = Float32Array | ((row: number) => ArrayLike<number>);

/** Returns (ids.length, width): row ids[i] of the table for each i. Ids must be in [0, nRows). */
export function getRows(table: RowSource, nRows: number, width: number, ids: ArrayLike<number>): Float32Array {
  if (table instanceof Float32Array && table.length !== nRows * width) {
    throw new RangeError(`getRows: table has ${table.length} values, expected ${nRows} x ${width}`);
  }
  const out = new Float32Array(ids.length * width);
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i];
    if (!Number.isInteger(id) || id < 0 || id >= nRows) throw new RangeError(`getRows: id ${id} outside [0, ${nRows})`);
    const row = table instanceof Float32Array ? table.subarray(id * width, (id + 1) * width) : table(id);
    if (row.length !== width) throw new RangeError(`getRows: row ${id} has ${row.length} values, expected ${width}`);
    for (let j = 0; j < width; j++) out[i * width + j] = row[j];
  }
  return out;
}
