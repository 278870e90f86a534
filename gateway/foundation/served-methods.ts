/** The methods the gateway forwards: its `Allow` wherever it speaks for itself (405, OPTIONS). */
export const SERVED_METHODS = 'GET, HEAD, OPTIONS, POST, PUT, PATCH, DELETE';
