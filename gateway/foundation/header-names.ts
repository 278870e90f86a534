/**
 * Header names that more than one room of the gateway reads or writes, here so that each
 * room names them without importing the room that sets them.
 */

/** The request's id: kept from the client when well formed (stages/request-id.ts), never forwarded. */
export const REQUEST_ID_HEADER = 'x-request-id';
