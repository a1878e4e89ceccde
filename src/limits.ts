/** 2^53: ids from here up are not exact as JavaScript numbers. */
export const JS_SAFE_LIMIT = 2n ** 53n;
/** 2^53 − 1, the largest id a JavaScript number holds exactly. */
export const MAX_SAFE_ID = JS_SAFE_LIMIT - 1n;
/** 2^63: ids are signed 64-bit, so the number line ends below this. */
export const INT63_LIMIT = 2n ** 63n;
/** 2^63 − 1, the largest id (and the largest BIGINT a database stores). */
export const MAX_INT63 = INT63_LIMIT - 1n;
