// Ids of Responses output items, and finding a stored item by its id (`item_reference`). An item id
// names its response (`msg_` + the response id's hex + the item's position), so a reference finds
// its item through the Responses store with no index of its own, and an item is forgotten with its
// response when the store evicts that.
import type { ResponseObject, ResponseOutputItem } from './responses-encoder.js';
import type { ResponsesStore } from './responses-store.js';

const RESPONSE_PREFIX = 'resp_';
/** Hex digits of the item's position at the end of its id. */
const POSITION_DIGITS = 4;
const ITEM_ID = /^(?:msg|rs|fc)_([0-9a-zA-Z]+)$/;

export type ItemPrefix = 'msg_' | 'rs_' | 'fc_';

/** The id of the item at `position` of response `responseId` (`resp_` + hex). */
export function mintItemId(prefix: ItemPrefix, responseId: string, position: number): string {
  return prefix + responseId.slice(RESPONSE_PREFIX.length) + position.toString(16).padStart(POSITION_DIGITS, '0');
}

/**
 * Looks up stored output items by id for one request: the item, or undefined when kiln has none
 * (never stored, evicted, or not kiln's id). Each response is read from the store once per request
 * (the store parses its copy on every read, and a client refers to several items of one response).
 */
export function storedItems(store: ResponsesStore): (id: string) => ResponseOutputItem | undefined {
  const outputs = new Map<string, ResponseOutputItem[] | undefined>();
  return (id) => {
    const m = ITEM_ID.exec(id);
    if (m === null || m[1]!.length <= POSITION_DIGITS) return undefined;
    const responseId = RESPONSE_PREFIX + m[1]!.slice(0, -POSITION_DIGITS);
    if (!outputs.has(responseId)) outputs.set(responseId, (store.get(responseId)?.response as ResponseObject | undefined)?.output);
    return outputs.get(responseId)?.find((item) => item.id === id);
  };
}
